// reconctl infer A B --out DIR: one pair through recond, outputs written like recon-infer's.
#include <chrono>
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "exit_codes.h"
#include "format.h"
#include "input_images.h"
#include "recon/client.h"
#include "scene_output.h"

namespace reconctl {

using namespace recon::client;
using Clock = std::chrono::steady_clock;

namespace {

std::string since(Clock::time_point start) {
  return format_ns(Clock::now() - start);
}

}  // namespace

int cmd_infer(const Context& context) {
  const Args args(context.args, {"out", "size", "model", "min-conf", "precision"}, {});
  if (args.positionals().size() != 2) throw UsageError("infer takes two images: A B");
  const auto out_dir = args.value("out");
  if (!out_dir || out_dir->empty()) throw UsageError("infer needs --out DIR");
  const float min_conf = static_cast<float>(args.double_or("min-conf", 3.0));
  InferOptions options;
  options.model = args.string_or("model", "");
  options.precision = parse_precision(args.string_or("precision", "default"));

  auto start = Clock::now();
  Client client = Client::connect(context.connect);
  const Preparation prep = model_preparation(client, options.model, args.value("size"));
  std::string connect_time = since(start);

  start = Clock::now();
  const std::array<recon::io::Image, 2> images =
      load_prepared_pair(args.positionals()[0], args.positionals()[1], prep, true);
  const std::string prepare_time = since(start);
  if (images[0].width == images[1].width && images[0].height == images[1].height) {
    options.resolution = Resolution{static_cast<uint32_t>(images[0].height), static_cast<uint32_t>(images[0].width)};
  }

  start = Clock::now();
  PairInBuffer pair = upload_pair(client, images, "reconctl-infer");
  connect_time += " + " + since(start);

  start = Clock::now();
  Result result = client.infer(pair.first, pair.second, options).get();
  const std::string infer_time = since(start);
  std::printf("recond: model %s, %zu tensors, handle %.8s…\n", result.model().c_str(), result.tensors().size(),
              result.handle_id().c_str());

  start = Clock::now();
  result.fetch();  // every tensor in one round trip, straight into shared memory
  const std::string fetch_time = since(start);

  start = Clock::now();
  const SceneSummary scene = write_scene(result, images, *out_dir, min_conf);
  const std::string write_time = since(start);
  result.release();

  const Timings& t = result.timings();
  std::printf("timings (daemon): queue %s · input %s · compute %s · output %s · total %s\n", format_ns(t.queue).c_str(),
              format_ns(t.input).c_str(), format_ns(t.compute).c_str(), format_ns(t.output).c_str(),
              format_ns(t.total).c_str());
  std::printf(
      "timings (client): prepare %s · connect+upload %s · infer round trip %s · fetch %s (%s, daemon copy %s)"
      " · write %s\n",
      prepare_time.c_str(), connect_time.c_str(), infer_time.c_str(), fetch_time.c_str(),
      format_bytes(result.fetched_bytes()).c_str(), format_ns(result.fetch_copy_time()).c_str(), write_time.c_str());
  if (scene.points_total > 0) {
    std::printf("scene.ply: %zu of %zu points with confidence >= %.2f (pts3d_2 is in view 1's frame)\n",
                scene.points_kept, scene.points_total, static_cast<double>(min_conf));
  }
  std::printf("outputs in %s: %s\n", out_dir->c_str(), join(scene.files, ", ").c_str());
  return kExitOk;
}

}  // namespace reconctl
