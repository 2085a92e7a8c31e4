#include "gpu/dispatch_profile.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>

namespace recon::gpu {
namespace {

using Key = std::tuple<std::string, std::array<uint32_t, 3>, std::array<uint32_t, 3>>;

struct Table {
  std::mutex mutex;
  std::map<Key, DispatchProfileEntry> entries;  // guarded by mutex
};

Table& table() {
  static Table t;
  return t;
}

std::string shader_of(const std::string& pipeline) {
  return pipeline.substr(0, pipeline.find('['));
}

std::atomic<bool>& profiling_flag() {
  static std::atomic<bool> on = [] {
    const char* v = std::getenv("RECON_PROFILE_DISPATCHES");
    return v != nullptr && std::string_view(v) != "" && std::string_view(v) != "0";
  }();
  return on;
}

}  // namespace

bool dispatch_profiling_enabled() {
  return profiling_flag().load();
}

void set_dispatch_profiling(bool on) {
  profiling_flag().store(on);
}

void add_dispatch_time(const std::string& pipeline, const std::array<uint32_t, 3>& groups,
                       const std::array<uint32_t, 3>& push, double ms) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  DispatchProfileEntry& e = t.entries[Key{pipeline, groups, push}];
  if (e.count == 0) e.pipeline = pipeline, e.groups = groups, e.push = push;
  ++e.count;
  e.total_ms += ms;
}

std::vector<DispatchProfileEntry> dispatch_profile() {
  Table& t = table();
  std::vector<DispatchProfileEntry> out;
  {
    std::lock_guard lock(t.mutex);
    for (const auto& [key, e] : t.entries) out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
  return out;
}

void reset_dispatch_profile() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.entries.clear();
}

std::string format_dispatch_profile(size_t top) {
  if (const char* rows = std::getenv("RECON_PROFILE_ROWS"); rows != nullptr && std::atoi(rows) > 0) {
    top = static_cast<size_t>(std::atoi(rows));
  }
  const std::vector<DispatchProfileEntry> entries = dispatch_profile();
  double total = 0;
  std::map<std::string, std::pair<double, uint64_t>> per_shader;
  for (const auto& e : entries) {
    total += e.total_ms;
    auto& s = per_shader[shader_of(e.pipeline)];
    s.first += e.total_ms;
    s.second += e.count;
  }
  std::vector<std::pair<std::string, std::pair<double, uint64_t>>> shaders(per_shader.begin(), per_shader.end());
  std::sort(shaders.begin(), shaders.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });

  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "dispatch profile: %.3f ms GPU in %zu distinct dispatches\n", total, entries.size());
  out += line;
  out += "  share   total ms  dispatches  shader\n";
  for (const auto& [name, s] : shaders) {
    std::snprintf(line, sizeof line, "  %5.1f%% %10.3f %11llu  %s\n", total > 0 ? 100 * s.first / total : 0.0, s.first,
                  static_cast<unsigned long long>(s.second), name.c_str());
    out += line;
  }
  out += "  share   total ms   count   mean us  grid              push[0..2]          pipeline\n";
  for (size_t i = 0; i < std::min(top, entries.size()); ++i) {
    const auto& e = entries[i];
    std::snprintf(line, sizeof line, "  %5.1f%% %10.3f %7llu %9.1f  %5u,%5u,%5u  %6u,%6u,%6u  %s\n",
                  total > 0 ? 100 * e.total_ms / total : 0.0, e.total_ms, static_cast<unsigned long long>(e.count),
                  1e3 * e.total_ms / static_cast<double>(e.count), e.groups[0], e.groups[1], e.groups[2], e.push[0],
                  e.push[1], e.push[2], e.pipeline.c_str());
    out += line;
  }
  return out;
}

}  // namespace recon::gpu
