// recon-run: runs an ONNX model in-process (no daemon) on the GPU. Inputs come from .npy files
// (NAME=FILE.npy, one per graph input that is not an initializer); each output is written to
// DIR/<name>.npy with every character of the name outside [A-Za-z0-9._-] replaced by '_'.
// After the first run it prints the device memory the model holds (weights; activations with the
// graphs' scratch). --bench N times N more runs end to end and N runs of the recorded graph alone,
// each after 0.3 s of untimed runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "gpu/buffer_pool.h"
#include "gpu/dispatch_profile.h"
#include "gpu/models/onnx/onnx_engine.h"
#include "gpu/runtime.h"
#include "tools/io/npy.h"

namespace {

using recon::Result;
using recon::Status;
namespace onnx = recon::gpu::onnx;

constexpr const char* kUsage =
    "usage: recon-run MODEL.onnx [--input NAME=FILE.npy]... [--out DIR] [--precision fp32|fp32-split|fp16]\n"
    "                 [--layout nchw|channels-last|auto] [--device D] [--bench N] [--profile]\n"
    "  --input      a graph input from a .npy file (every input the model declares, by name)\n"
    "  --out        writes DIR/<output name>.npy for every output (default: print shapes only)\n"
    "  --precision  fp32 (default); fp32-split: fp32 with GEMMs and convolutions on tensor cores, each\n"
    "               operand as two fp16 parts (fp32's accuracy; operands beyond +-65504 give NaN); fp16:\n"
    "               fp16 storage with fp32 arithmetic\n"
    "  --layout     nchw, channels-last, or auto (default): where convolutional stretches run channels-last\n"
    "               (auto: in fp16 on a GPU with tensor cores)\n"
    "  --bench      runs N more times and prints the median and best latency, with the inputs' upload and\n"
    "               the outputs' download and without (the recorded graph alone, inputs on the GPU)\n"
    "  --profile    GPU time per dispatch over all runs, printed at the end: the 30 largest, or\n"
    "               RECON_PROFILE_ROWS (the timestamps between dispatches serialise them: every run is\n"
    "               slower)\n";

struct Args {
  std::string model, out, device;
  std::map<std::string, std::string> inputs;
  recon::gpu::onnx::EngineOptions engine;
  onnx::EngineOptions::Layout layout = onnx::EngineOptions::Layout::kAuto;
  int bench = 0;
  bool profile = false;
};

int fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "recon-run: %s\n", message.c_str());
  return code;
}

const struct {
  const char* descr;
  onnx::ElemType type;
} kDtypes[] = {{"<f4", onnx::ElemType::kFloat},  {"<f2", onnx::ElemType::kFloat16}, {"<f8", onnx::ElemType::kDouble},
               {"<i8", onnx::ElemType::kInt64},  {"<i4", onnx::ElemType::kInt32},   {"<i2", onnx::ElemType::kInt16},
               {"|i1", onnx::ElemType::kInt8},   {"|u1", onnx::ElemType::kUint8},   {"<u2", onnx::ElemType::kUint16},
               {"<u4", onnx::ElemType::kUint32}, {"<u8", onnx::ElemType::kUint64},  {"|b1", onnx::ElemType::kBool}};

Result<onnx::HostTensor> to_tensor(const recon::io::NpyArray& a, const std::string& name) {
  for (const auto& d : kDtypes) {
    if (a.descr == d.descr) return onnx::HostTensor::owned(d.type, a.shape, a.data, name);
  }
  return recon::invalid_argument(name + ": .npy dtype " + a.descr + " has no ONNX type recon reads");
}

Result<recon::io::NpyArray> to_npy(const onnx::HostTensor& t) {
  for (const auto& d : kDtypes) {
    if (t.type == d.type) return recon::io::NpyArray{d.descr, t.dims, {t.bytes.begin(), t.bytes.end()}};
  }
  return recon::invalid_argument(std::string("output type ") + onnx::elem_type_name(t.type) + " has no .npy dtype");
}

Result<Args> parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> Result<std::string> {
      if (i + 1 >= argc) return recon::invalid_argument(a + " needs a value");
      return std::string(argv[++i]);
    };
    if (a == "--input") {
      RECON_ASSIGN_OR_RETURN(std::string v, next());
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return recon::invalid_argument("--input takes NAME=FILE.npy");
      args.inputs[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (a == "--out") {
      RECON_ASSIGN_OR_RETURN(args.out, next());
    } else if (a == "--device") {
      RECON_ASSIGN_OR_RETURN(args.device, next());
    } else if (a == "--precision") {
      RECON_ASSIGN_OR_RETURN(std::string p, next());
      RECON_ASSIGN_OR_RETURN(const recon::gpu::Precision precision, recon::gpu::parse_precision(p));
      args.engine = recon::gpu::onnx::engine_options(precision);
    } else if (a == "--layout") {
      RECON_ASSIGN_OR_RETURN(std::string l, next());
      if (l == "nchw") {
        args.layout = onnx::EngineOptions::Layout::kNchw;
      } else if (l == "channels-last") {
        args.layout = onnx::EngineOptions::Layout::kChannelsLast;
      } else if (l != "auto") {
        return recon::invalid_argument("--layout takes nchw, channels-last or auto, not " + l);
      }
    } else if (a == "--bench") {
      RECON_ASSIGN_OR_RETURN(std::string n, next());
      args.bench = std::max(0, std::atoi(n.c_str()));
    } else if (a == "--profile") {
      args.profile = true;
    } else if (a == "-h" || a == "--help") {
      return recon::invalid_argument("");
    } else if (!a.empty() && a[0] != '-' && args.model.empty()) {
      args.model = a;
    } else {
      return recon::invalid_argument("unknown argument " + a);
    }
  }
  if (args.model.empty()) return recon::invalid_argument("no model given");
  args.engine.layout = args.layout;
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  Result<Args> parsed = parse(argc, argv);
  if (!parsed) {
    if (!parsed.status().message().empty()) std::fprintf(stderr, "recon-run: %s\n", parsed.status().message().c_str());
    std::fputs(kUsage, stderr);
    return 2;
  }
  const Args& args = *parsed;
  recon::gpu::RuntimeOptions options;
  options.context.device = args.device;
  auto rt = recon::gpu::Runtime::create(options);
  if (!rt) return fail(rt.status().to_string());
  std::printf("device: %s\n", rt.value()->caps().device_name.c_str());
  // Graphs record timestamps between dispatches only when profiling is on while they record.
  recon::gpu::set_dispatch_profiling(args.profile);
  auto engine = onnx::Engine::load(**rt, args.model, args.engine);
  if (!engine) return fail(engine.status().to_string());
  if (const onnx::ChannelsLastCounts& c = (*engine)->channels_last(); c.convolutions > 0) {
    std::printf("channels-last: %zu convolutions, %zu pools, %zu element-wise ops; %zu transposes\n", c.convolutions,
                c.pools, c.elementwise, c.transposes);
  }

  std::vector<onnx::HostTensor> inputs;
  for (const onnx::ValueInfo* in : (*engine)->inputs()) {
    auto it = args.inputs.find(in->name);
    if (it == args.inputs.end()) return fail("the model needs --input " + in->name + "=FILE.npy");
    auto npy = recon::io::read_npy_file(it->second);
    if (!npy) return fail(npy.status().to_string());
    auto t = to_tensor(*npy, in->name);
    if (!t) return fail(t.status().to_string());
    inputs.push_back(std::move(*t));
  }
  if (args.inputs.size() != inputs.size()) return fail("an --input names no input of the model");

  const auto t0 = std::chrono::steady_clock::now();
  auto outputs = (*engine)->run(inputs);
  if (!outputs) return fail(outputs.status().to_string());
  const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("first run (compiles the graph): %.2f ms\n", first_ms);
  const auto mib = [&](recon::gpu::MemoryRole role) {
    return static_cast<double>((*rt)->pool(role).stats().in_use_bytes) / (1 << 20);
  };
  std::printf("device memory in use: weights %.1f MiB, activations and scratch %.1f MiB\n",
              mib(recon::gpu::MemoryRole::kWeights), mib(recon::gpu::MemoryRole::kActivations));

  if (!args.out.empty()) std::filesystem::create_directories(args.out);
  for (const onnx::HostTensor& o : *outputs) {
    std::printf("output %s: %s %s\n", o.name.c_str(), onnx::elem_type_name(o.type),
                recon::gpu::shape_string(o.dims).c_str());
    if (args.out.empty()) continue;
    auto npy = to_npy(o);
    if (!npy) return fail(npy.status().to_string());
    const std::string path = (std::filesystem::path(args.out) / recon::io::npy_file_name(o.name)).string();
    if (Status s = recon::io::write_npy_file(path, *npy); !s.is_ok()) return fail(s.to_string());
  }

  if (args.bench > 0) {
    auto median_and_best = [&](auto&& once) -> Result<std::pair<double, double>> {
      // An idle GPU runs at a low clock and raises it only under sustained load: 0.3 s of runs first.
      const auto warm_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
      while (std::chrono::steady_clock::now() < warm_until) RECON_RETURN_IF_ERROR(once());
      std::vector<double> ms;
      for (int i = 0; i < args.bench; ++i) {
        const auto t = std::chrono::steady_clock::now();
        RECON_RETURN_IF_ERROR(once());
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
      }
      std::sort(ms.begin(), ms.end());
      return std::pair{ms[ms.size() / 2], ms.front()};
    };
    auto whole = median_and_best([&]() { return (*engine)->run(inputs).status(); });
    if (!whole) return fail(whole.status().to_string());
    auto graph = (*engine)->compiled(inputs);
    if (!graph) return fail(graph.status().to_string());
    auto bound = (*engine)->upload_inputs(**graph, inputs);
    if (!bound) return fail(bound.status().to_string());
    auto results = (*graph)->new_outputs(**rt);
    if (!results) return fail(results.status().to_string());
    auto alone = median_and_best([&]() { return (*graph)->run(*bound, *results); });
    if (!alone) return fail(alone.status().to_string());
    if (args.profile) std::printf("%s", recon::gpu::format_dispatch_profile(30).c_str());
    std::printf("bench: %d runs; end to end median %.3f ms, best %.3f ms; graph alone median %.3f ms, best %.3f ms\n",
                args.bench, whole->first, whole->second, alone->first, alone->second);
  }
  return 0;
}
