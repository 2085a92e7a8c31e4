// reconctl bench: keeps --concurrency pairs in flight until --pairs are done, then reports
// pairs/s and round-trip latency percentiles (and the daemon's own stage times).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <vector>

#include "args.h"
#include "commands.h"
#include "exit_codes.h"
#include "format.h"
#include "input_images.h"
#include "recon/client.h"

namespace reconctl {

using namespace recon::client;
using Clock = std::chrono::steady_clock;

namespace {

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least p% of the samples at or below it.
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

double ms(std::chrono::nanoseconds ns) {
  return static_cast<double>(ns.count()) / 1e6;
}

}  // namespace

int cmd_bench(const Context& context) {
  const Args args(context.args, {"pairs", "concurrency", "resolution", "size", "model", "warmup"}, {"fetch", "json"});
  const int64_t pairs = args.int_or("pairs", 20, 1, 1'000'000);
  const int64_t concurrency = args.int_or("concurrency", 1, 1, 1024);
  const int64_t warmup_pairs = args.int_or("warmup", 1, 0, 1000);
  const bool fetch = args.has("fetch");
  const bool json = args.has("json");
  InferOptions options;
  options.model = args.string_or("model", "");

  Client client = Client::connect(context.connect);
  std::array<recon::io::Image, 2> images;
  if (args.positionals().size() == 2) {
    images = load_prepared_pair(args.positionals()[0], args.positionals()[1],
                                model_preparation(client, options.model, args.value("size")), !json);
  } else if (args.positionals().empty()) {
    const Resolution r = parse_resolution(args.string_or("resolution", "512x384"));
    images = {synthetic_image(static_cast<int>(r.width), static_cast<int>(r.height), 1),
              synthetic_image(static_cast<int>(r.width), static_cast<int>(r.height), 2)};
  } else {
    throw UsageError("bench takes two images or none (synthetic images at --resolution)");
  }
  if (images[0].width == images[1].width && images[0].height == images[1].height) {
    options.resolution = Resolution{static_cast<uint32_t>(images[0].height), static_cast<uint32_t>(images[0].width)};
  }

  // Every request names the same two images: the daemon only reads them.
  PairInBuffer pair = upload_pair(client, images, "reconctl-bench");

  for (int64_t i = 0; i < warmup_pairs; ++i) {
    Result r = client.infer(pair.first, pair.second, options).get();
    if (fetch) r.fetch({}, true);
  }

  std::vector<double> latency_ms, compute_ms, queue_ms, fetch_ms;
  std::deque<PendingResult> in_flight;
  int64_t sent = 0;
  const auto start = Clock::now();
  while (sent < pairs || !in_flight.empty()) {
    while (sent < pairs && static_cast<int64_t>(in_flight.size()) < concurrency) {
      in_flight.push_back(client.infer(pair.first, pair.second, options));
      ++sent;
    }
    // Answers come in order from one GPU queue; waiting for the oldest loses nothing, and the
    // round trip is stamped by the I/O thread when each answer arrives.
    Result result = in_flight.front().get();
    in_flight.pop_front();
    double fetch_time = 0;
    if (fetch) {
      const auto fetch_start = Clock::now();
      result.fetch({}, true);  // everything, and release in the same round trip
      fetch_time = ms(Clock::now() - fetch_start);
      fetch_ms.push_back(fetch_time);
    }
    latency_ms.push_back(ms(result.round_trip()) + fetch_time);
    compute_ms.push_back(ms(result.timings().compute));
    queue_ms.push_back(ms(result.timings().queue));
  }
  const double wall_s = ms(Clock::now() - start) / 1000.0;
  const double rate = static_cast<double>(pairs) / wall_s;

  if (json) {
    JsonWriter j;
    j.begin_object();
    j.key("pairs").value(pairs).key("concurrency").value(concurrency).key("fetch").value(fetch);
    j.key("width").value(images[0].width).key("height").value(images[0].height);
    j.key("wall_s").value(wall_s).key("pairs_per_s").value(rate);
    j.key("latency_ms").begin_object();
    j.key("mean").value(mean(latency_ms)).key("p50").value(percentile(latency_ms, 50));
    j.key("p95").value(percentile(latency_ms, 95)).key("p99").value(percentile(latency_ms, 99));
    j.key("max").value(percentile(latency_ms, 100)).end_object();
    j.key("daemon_compute_ms_mean").value(mean(compute_ms)).key("daemon_queue_ms_mean").value(mean(queue_ms));
    if (fetch) j.key("fetch_ms_mean").value(mean(fetch_ms));
    j.end_object();
    std::printf("%s\n", j.str().c_str());
    return kExitOk;
  }
  std::printf("%lld pairs at %dx%d, concurrency %lld%s: %.2f pairs/s (%.2f s)\n", static_cast<long long>(pairs),
              images[0].width, images[0].height, static_cast<long long>(concurrency),
              fetch ? ", fetching every output" : "", rate, wall_s);
  std::printf("latency (client round trip%s): p50 %s · p95 %s · p99 %s · max %s · mean %s\n",
              fetch ? " incl. fetch" : "", format_ms(percentile(latency_ms, 50)).c_str(),
              format_ms(percentile(latency_ms, 95)).c_str(), format_ms(percentile(latency_ms, 99)).c_str(),
              format_ms(percentile(latency_ms, 100)).c_str(), format_ms(mean(latency_ms)).c_str());
  std::printf("daemon: compute %s · queue %s (means)%s\n", format_ms(mean(compute_ms)).c_str(),
              format_ms(mean(queue_ms)).c_str(), fetch ? (" · fetch " + format_ms(mean(fetch_ms))).c_str() : "");
  return kExitOk;
}

}  // namespace reconctl
