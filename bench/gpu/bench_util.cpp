#include "bench/gpu/bench_util.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace recon::bench {
namespace {

Result<uint64_t> parse_count(std::string_view what, std::string_view text) {
  if (text.empty()) return invalid_argument(std::string(what) + ": empty value");
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return invalid_argument(std::string(what) + ": not a whole number: " + std::string(text));
    v = v * 10 + static_cast<uint64_t>(c - '0');
    if (v > (uint64_t{1} << 40)) return invalid_argument(std::string(what) + ": too large: " + std::string(text));
  }
  return v;
}

Result<std::vector<uint64_t>> parse_list(std::string_view what, std::string_view text) {
  std::vector<uint64_t> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    RECON_ASSIGN_OR_RETURN(uint64_t v, parse_count(what, text.substr(0, comma)));
    if (v == 0) return invalid_argument(std::string(what) + ": sizes must be at least 1 MiB");
    out.push_back(v);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  if (out.empty()) return invalid_argument(std::string(what) + ": empty list");
  return out;
}

// Applies one knob: `value` from a flag or the environment, `name` for messages.
Status apply(SuiteOptions& o, std::string_view key, std::string_view value, std::string_view name) {
  if (key == "copy_mib") {
    RECON_ASSIGN_OR_RETURN(o.copy_mib, parse_list(name, value));
  } else if (key == "copy_rep_mib") {
    RECON_ASSIGN_OR_RETURN(o.copy_rep_mib, parse_count(name, value));
  } else if (key == "pipeline_rounds") {
    RECON_ASSIGN_OR_RETURN(uint64_t rounds, parse_count(name, value));
    o.pipeline_rounds = static_cast<int>(std::clamp<uint64_t>(rounds, 1, 1000));
  }
  return Status::ok();
}

}  // namespace

Result<SuiteOptions> parse_options(int* argc, char** argv) {
  SuiteOptions o;
  constexpr std::string_view kKeys[] = {"copy_mib", "copy_rep_mib", "pipeline_rounds"};
  RECON_RETURN_IF_ERROR(read_knobs(
      argc, argv, "RECON_BENCH_", kKeys,
      [&](std::string_view key, std::string_view value, std::string_view name) { return apply(o, key, value, name); }));
  return o;
}

Status read_knobs(int* argc, char** argv, std::string_view env_prefix, std::span<const std::string_view> keys,
                  const ApplyKnob& apply) {
  for (std::string_view key : keys) {
    std::string env(env_prefix);
    for (char c : key) env += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (const char* v = std::getenv(env.c_str()); v != nullptr && *v != '\0') {
      RECON_RETURN_IF_ERROR(apply(key, v, env));
    }
  }
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string_view arg = argv[i];
    bool consumed = false;
    for (std::string_view key : keys) {
      const std::string prefix = "--recon_" + std::string(key) + "=";
      if (arg.substr(0, prefix.size()) == prefix) {
        RECON_RETURN_IF_ERROR(apply(key, arg.substr(prefix.size()), prefix.substr(0, prefix.size() - 1)));
        consumed = true;
      }
    }
    if (!consumed) argv[kept++] = argv[i];
  }
  *argc = kept;
  return Status::ok();
}

double Samples::median() const {
  if (values_.empty()) return 0;
  std::vector<double> v = values_;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

void fail(benchmark::State& state, const Status& status) {
  state.SkipWithError(status.to_string().c_str());
}

std::string size_label(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + kUnits[unit];
}

}  // namespace recon::bench
