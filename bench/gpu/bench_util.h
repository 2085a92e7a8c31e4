// Shared pieces of the GPU runtime benchmarks: the suite's options (flags and environment),
// per-iteration sample sets with medians, the rule that interleaves a baseline with its subject,
// and the registration entry point of each benchmark file. Holds no benchmark bodies.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/runtime.h"
#include "gpu/status.h"

namespace recon::bench {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;

// What the suite can be told. Each knob is a flag (removed from argv before Google Benchmark sees
// it) or an environment variable; the flag wins. Empty / zero means "the device's default".
struct SuiteOptions {
  // --recon_copy_mib=1,4,16,64 or RECON_BENCH_COPY_MIB: shader-copy sizes in MiB (clamped to
  // maxStorageBufferRange and the largest allocation). Default: 1,4,16,64 on a CPU device
  // (lavapipe), 1,4,16,64,256,1024 on a GPU.
  std::vector<uint64_t> copy_mib;
  // --recon_copy_rep_mib=N or RECON_BENCH_COPY_REP_MIB: bytes each timed replay copies, in MiB; a
  // replay holds N / size copies (1..64). Default 64 on a CPU device, 1024 on a GPU.
  uint64_t copy_rep_mib = 0;
  // --recon_pipeline_rounds=N or RECON_BENCH_PIPELINE_ROUNDS: cold/warm rounds of building every
  // variant. Default 1 on a CPU device (lavapipe compiles slowly), 3 on a GPU.
  int pipeline_rounds = 0;
};

// Parses the recon flags out of argv (compacting it) and the environment.
Result<SuiteOptions> parse_options(int* argc, char** argv);

// The knob reading every suite shares: for each key, the environment variable <env_prefix><KEY>
// (upper case), then every --recon_<key>=value flag, which it removes from argv (compacting it), so
// flags win over the environment. `apply(key, value, name)` takes each value; `name` is the
// variable or flag, for messages.
using ApplyKnob = std::function<Status(std::string_view key, std::string_view value, std::string_view name)>;
Status read_knobs(int* argc, char** argv, std::string_view env_prefix, std::span<const std::string_view> keys,
                  const ApplyKnob& apply);

// Per-iteration measurements of one quantity, in seconds.
class Samples {
 public:
  void add(double seconds) {
    values_.push_back(seconds);
    total_ += seconds;
  }
  size_t count() const { return values_.size(); }
  double total() const { return total_; }
  double median() const;  // 0 when empty

 private:
  std::vector<double> values_;
  double total_ = 0;
};

// Interleaving rule for a baseline measured beside its subject in one benchmark: the baseline
// runs in an iteration while it has had no more time than the subject, and at least `min_reps`
// times. This bounds its cost to about the subject's and exposes both to the same conditions.
inline bool baseline_due(const Samples& subject, const Samples& baseline, size_t min_reps = 2) {
  return baseline.count() < min_reps || baseline.total() <= subject.total();
}

// Marks the benchmark failed with the status text. Call before the loop or break right after.
void fail(benchmark::State& state, const Status& status);

// "256B", "64KiB", "16MiB", "1GiB" (exact multiples only; otherwise bytes).
std::string size_label(uint64_t bytes);

// Per-file registration; each adds its benchmarks in the order the suite runs them.
void register_pool_benchmarks(gpu::Runtime& rt);
void register_pipeline_benchmarks(gpu::Runtime& rt, const SuiteOptions& options);
void register_graph_benchmarks(gpu::Runtime& rt);
void register_copy_benchmarks(gpu::Runtime& rt, const SuiteOptions& options);
// Frees the copy benchmarks' buffers; main() calls it before the Runtime goes.
void release_copy_buffers();

}  // namespace recon::bench
