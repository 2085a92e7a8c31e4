// reconctl match A B --out DIR: one pair through recond, then its descriptors matched on the
// daemon (Match); writes the matches as .npy and a side-by-side PNG with a line per match.
#include <chrono>
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "exit_codes.h"
#include "format.h"
#include "input_images.h"
#include "match_output.h"
#include "recon/client.h"

namespace reconctl {

using namespace recon::client;
using Clock = std::chrono::steady_clock;

int cmd_match(const Context& context) {
  const Args args(context.args, {"out", "size", "model", "precision", "max-matches", "subsample", "min-conf"}, {});
  if (args.positionals().size() != 2) throw UsageError("match takes two images: A B");
  const auto out_dir = args.value("out");
  if (!out_dir || out_dir->empty()) throw UsageError("match needs --out DIR");
  InferOptions options;
  options.model = args.string_or("model", "");
  options.precision = parse_precision(args.string_or("precision", "default"));
  MatchOptions match;
  match.max_matches = static_cast<uint32_t>(args.int_or("max-matches", 0, 0, int64_t{1} << 30));
  match.subsample = static_cast<uint32_t>(args.int_or("subsample", 8, 1, 256));
  match.min_confidence = static_cast<float>(args.double_or("min-conf", 0.0));
  if (!(match.min_confidence >= 0)) throw UsageError("--min-conf must be ≥ 0");

  Client client = Client::connect(context.connect);
  const std::array<recon::io::Image, 2> images = load_prepared_pair(
      args.positionals()[0], args.positionals()[1], model_preparation(client, options.model, args.value("size")), true);
  if (images[0].width == images[1].width && images[0].height == images[1].height) {
    options.resolution = Resolution{static_cast<uint32_t>(images[0].height), static_cast<uint32_t>(images[0].width)};
  }
  PairInBuffer pair = upload_pair(client, images, "reconctl-match");
  auto start = Clock::now();
  Result result = client.infer(pair.first, pair.second, options).get();
  const auto infer_time = Clock::now() - start;
  start = Clock::now();
  Result matches = client.match(result, match).get();
  const auto match_time = Clock::now() - start;
  result.release();
  const std::vector<std::string> files = write_matches(matches, images[0], images[1], *out_dir);
  std::printf("%llu matches (subsample %u, min-conf %.2f%s)\n", static_cast<unsigned long long>(matches.match_count()),
              match.subsample, static_cast<double>(match.min_confidence),
              match.max_matches > 0 ? (", at most " + std::to_string(match.max_matches)).c_str() : "");
  std::printf("timings (client round trips): infer %s · match %s (daemon compute %s)\n", format_ns(infer_time).c_str(),
              format_ns(match_time).c_str(), format_ns(matches.timings().compute).c_str());
  std::printf("outputs in %s: %s\n", out_dir->c_str(), join(files, ", ").c_str());
  return kExitOk;
}

}  // namespace reconctl
