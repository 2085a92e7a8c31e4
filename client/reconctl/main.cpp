// reconctl: the command-line client of recond. Parses the global flags, runs one subcommand, and
// turns failures into the documented exit codes (exit_codes.h; docs/CLIENT.md).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "exit_codes.h"
#include "recon/client.h"

namespace {

using namespace reconctl;

constexpr const char* kHelp = R"(Usage: reconctl [GLOBAL OPTIONS] COMMAND [ARGS]

Talks to recond, the recon GPU inference daemon (MASt3R 3D reconstruction).

Commands:
  status [--json] [--sessions]   daemon state, devices, memory and pools, models, queue,
                                 throughput and latency (--sessions: per client; manager socket)
  models [--json]                loaded models, their state and resolutions
  wait-ready [SECONDS] [--quiet] wait until recond answers and reports READY (default 300 s)
  warmup [--model NAME]... [WxH...]
                                 build pipelines and run the models once per resolution
                                 (default: every model at its configured resolutions)
  load NAME [PATH] [--version N] [--kind K] [--backbone NAME] [--precision fp32|fp32-split|fp16|fp16-heads]
       [--resolution WxH]... [--no-warm]
                                 load a model from the daemon's model directory (recond
                                 --model-dir): PATH (default NAME) is a model directory of
                                 it (model.conf, versions 1, 2, ...) or a weights file;
                                 a loaded NAME is reloaded in place
  unload NAME                    unload a model (in-flight requests finish first)
  infer A B --out DIR [--size N] [--model NAME] [--precision P] [--min-conf C]
                                 run one image pair: prepares A and B like the official loader
                                 (long side N, default 512), writes the 8 outputs as .npy,
                                 scene.ply (points with confidence >= C, default 3) and
                                 depth/confidence PNGs to DIR, and prints the timings
  infer-tensor MODEL --input NAME=FILE.npy... --out DIR [--inline] [--precision P]
                                 run a model that takes tensors (ONNX): each graph input from a
                                 .npy file (in shared memory, or inside the request with
                                 --inline); writes every output to DIR/<name>.npy
  batch IMG... --out DIR [--pairs I-J,...] [--symmetric] [--size N] [--model NAME] [--min-conf C]
                                 many pairs over one image list in one request (default: the
                                 consecutive pairs 0-1, 1-2, ...; --symmetric adds each pair
                                 swapped); each pair's outputs as for infer in DIR/pair_K_I-J
  match A B --out DIR [--size N] [--max-matches N] [--subsample S] [--min-conf C]
                                 infer the pair, then match its descriptors on the daemon (fast
                                 reciprocal NN, seeds every S pixels, default 8; pixels with a
                                 descriptor confidence below C dropped); writes matches_1/2.npy
                                 (int32 x, y), match_conf.npy, pts3d_1/2.npy and matches.png
  retrieve IMG... [--top-k K] [--size N] [--model NAME] [--json]
                                 retrieval embeddings of the images (one prepared size) and
                                 each image's K most similar others (default min(5, n-1)):
                                 the candidate pairs for a large scene
  reconstruct IMG... --out DIR [--pairs GRAPH] [--size N] [--model NAME] [--subsample S]
        [--iterations COARSE,FINE] [--min-conf C] [--colmap-points N] [--param NAME=VALUE]...
                                 a scene from many images (the daemon's reconstruct job: the
                                 pair graph, default complete, or swin-K, logwin-K, oneref-R,
                                 retrieval-NA-K with a retrieval model loaded on the model;
                                 pairwise inference and matching, the global alignment) with a
                                 progress bar; writes cameras.json, a COLMAP model (sparse/0),
                                 scene.ply, scene.png and per-image depth (depth/) to DIR
  bench [A B] [--pairs N] [--concurrency C] [--resolution WxH] [--size N] [--fetch]
        [--warmup N] [--model NAME] [--json]
                                 N pairs (default 20) with C in flight (default 1): pairs/s and
                                 p50/p95/p99 latency; synthetic images at WxH (default 512x384)
                                 unless A and B are given; --fetch also fetches every output

Global options (before the command):
  --socket-dir DIR      the daemon's sockets are DIR/client.sock, DIR/regions.sock and
                        DIR/manager.sock (default $RECON_SOCKET_DIR, else /run/recon)
  --client-socket PATH  --regions-socket PATH  --manager-socket PATH   each one separately
  --timeout SECONDS     how long a request waits for its answer (default 60; 0 = forever)
  --version             print versions and exit
  -h, --help            this text

Exit codes:
  0  success
  1  the daemon answered the request with an error
  2  usage error
  3  daemon unavailable: not running, not reachable, not ready, timed out, or stopped mid-request
  4  permission denied (socket access; management commands need the daemon's manager group)
  5  a local file could not be read or written
)";

using Command = int (*)(const Context&);

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> by_name = {
      {"status", cmd_status},
      {"models", cmd_models},
      {"wait-ready", cmd_wait_ready},
      {"warmup", cmd_warmup},
      {"load", cmd_load},
      {"unload", cmd_unload},
      {"infer", cmd_infer},
      {"bench", cmd_bench},
      {"batch", cmd_batch},
      {"match", cmd_match},
      {"infer-tensor", cmd_infer_tensor},
      {"retrieve", cmd_retrieve},
      {"reconstruct", cmd_reconstruct},
  };
  return by_name;
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "reconctl: %s\nTry 'reconctl --help'.\n", message.c_str());
  return kExitUsage;
}

int run(int argc, char** argv) {
  Context context;
  std::string socket_dir;
  int i = 1;
  auto take_value = [&](const std::string& arg, const std::string& name) -> std::string {
    if (arg.size() > name.size() + 2 && arg[name.size() + 2] == '=') return arg.substr(name.size() + 3);
    if (i + 1 >= argc) throw UsageError(name.empty() ? arg : "--" + name + " needs a value");
    return argv[++i];
  };
  auto is_flag = [](const std::string& arg, const char* name) {
    const std::string flag = std::string("--") + name;
    return arg == flag || arg.rfind(flag + "=", 0) == 0;
  };
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kHelp, stdout);
      return kExitOk;
    }
    if (arg == "--version") {
      std::printf("reconctl %s (librecon %s, wire protocol %u)\n", RECON_CLIENT_VERSION,
                  recon::client::library_version(), recon::client::protocol_version());
      return kExitOk;
    }
    if (is_flag(arg, "socket-dir")) {
      socket_dir = take_value(arg, "socket-dir");
    } else if (is_flag(arg, "client-socket")) {
      context.connect.client_socket = take_value(arg, "client-socket");
    } else if (is_flag(arg, "regions-socket")) {
      context.connect.regions_socket = take_value(arg, "regions-socket");
    } else if (is_flag(arg, "manager-socket")) {
      context.connect.manager_socket = take_value(arg, "manager-socket");
    } else if (is_flag(arg, "timeout")) {
      const int64_t seconds = parse_int("--timeout", take_value(arg, "timeout"), 0, int64_t{86400} * 7);
      context.connect.timeout = std::chrono::seconds(seconds);
    } else if (arg.rfind('-', 0) == 0) {
      throw UsageError("unknown option " + arg);
    } else {
      break;
    }
  }
  if (i >= argc) return usage_error("no command given");
  const std::string name = argv[i];
  const auto command = commands().find(name);
  if (command == commands().end()) return usage_error("unknown command '" + name + "'");
  for (int k = i + 1; k < argc; ++k) {
    if (std::strcmp(argv[k], "-h") == 0 || std::strcmp(argv[k], "--help") == 0) {
      std::fputs(kHelp, stdout);
      return kExitOk;
    }
    context.args.emplace_back(argv[k]);
  }
  if (!socket_dir.empty()) {
    const auto in_dir = recon::client::ConnectOptions::in_directory(socket_dir);
    if (context.connect.client_socket.empty()) context.connect.client_socket = in_dir.client_socket;
    if (context.connect.regions_socket.empty()) context.connect.regions_socket = in_dir.regions_socket;
    if (context.connect.manager_socket.empty()) context.connect.manager_socket = in_dir.manager_socket;
  }
  context.connect.client_name = "reconctl " + name;
  return command->second(context);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    return usage_error(e.what());
  } catch (const LocalFileError& e) {
    std::fprintf(stderr, "reconctl: %s\n", e.what());
    return kExitLocalFile;
  } catch (const recon::client::Error& e) {
    std::fprintf(stderr, "reconctl: %s\n", e.what());
    if (e.code() == recon::client::ErrorCode::kPermissionDenied && e.source() == recon::client::ErrorSource::kDaemon) {
      std::fprintf(stderr, "reconctl: management commands need membership in the daemon's manager group\n");
    }
    return exit_code_for(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reconctl: %s\n", e.what());
    return kExitRequestFailed;
  }
}
