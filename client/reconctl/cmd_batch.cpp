// reconctl batch IMG... --out DIR: many pairs over one image list in one InferBatch request; each
// pair's outputs written like `reconctl infer`'s, in DIR/pair_K_I-J/.
#include <chrono>
#include <cstdio>
#include <filesystem>

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

// "0-1,1-2" → {(0,1), (1,2)}, each index below `images`.
std::vector<ImagePair> parse_pairs(const std::string& text, size_t images) {
  std::vector<ImagePair> pairs;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const size_t dash = item.find('-');
    if (dash == std::string::npos) throw UsageError("--pairs takes I-J,I-J,...; got '" + item + "'");
    const auto max = static_cast<int64_t>(images) - 1;
    const auto first = static_cast<uint32_t>(parse_int("--pairs", item.substr(0, dash), 0, max));
    const auto second = static_cast<uint32_t>(parse_int("--pairs", item.substr(dash + 1), 0, max));
    if (first == second) throw UsageError("--pairs: " + item + " pairs an image with itself");
    pairs.push_back(ImagePair{first, second});
    start = comma + 1;
  }
  return pairs;
}

}  // namespace

int cmd_batch(const Context& context) {
  const Args args(context.args, {"out", "size", "model", "min-conf", "precision", "pairs"}, {"symmetric"});
  const std::vector<std::string>& paths = args.positionals();
  if (paths.size() < 2) throw UsageError("batch takes at least two images");
  const auto out_dir = args.value("out");
  if (!out_dir || out_dir->empty()) throw UsageError("batch needs --out DIR");
  const float min_conf = static_cast<float>(args.double_or("min-conf", 3.0));
  BatchOptions batch;
  if (const auto pairs = args.value("pairs")) batch.pairs = parse_pairs(*pairs, paths.size());
  batch.symmetric = args.has("symmetric");
  InferOptions options;
  options.model = args.string_or("model", "");
  options.precision = parse_precision(args.string_or("precision", "default"));

  Client client = Client::connect(context.connect);
  const std::vector<recon::io::Image> images =
      load_prepared_images(paths, model_preparation(client, options.model, args.value("size")), true);
  ImagesInBuffer uploaded = upload_images(client, images, "reconctl-batch");
  const auto start = Clock::now();
  BatchResult result = client.infer_batch(uploaded.views, batch, options).get();
  const auto round_trip = Clock::now() - start;
  std::printf("recond: %zu pairs in one batch, round trip %s\n", result.pairs.size(), format_ns(round_trip).c_str());

  for (size_t k = 0; k < result.pairs.size(); ++k) {
    const ImagePair& p = result.pairs[k];
    Result& pair = result.results[k];
    pair.fetch();
    const std::string dir =
        (std::filesystem::path(*out_dir) /
         ("pair_" + std::to_string(k) + "_" + std::to_string(p.first) + "-" + std::to_string(p.second)))
            .string();
    const SceneSummary scene = write_scene(pair, {images[p.first], images[p.second]}, dir, min_conf);
    pair.release();
    std::printf("pair %zu (%u, %u): compute %s · %zu of %zu points with confidence >= %.2f → %s\n", k, p.first,
                p.second, format_ns(pair.timings().compute).c_str(), scene.points_kept, scene.points_total,
                static_cast<double>(min_conf), dir.c_str());
  }
  return kExitOk;
}

}  // namespace reconctl
