// Text helpers for reconctl's human output: sizes, durations, aligned tables (nvidia-smi /
// `ollama ps` style), and a minimal JSON writer for --json.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace reconctl {

std::string format_bytes(uint64_t bytes);                // "1.2 GiB", "512 KiB", "0 B"
std::string format_ms(double ms);                        // "0.42 ms", "12.3 ms", "1.52 s"
std::string format_ns(std::chrono::nanoseconds ns);      // format_ms of it
std::string format_us(uint64_t us);                      // format_ms(us / 1000)
std::string format_uptime(std::chrono::seconds uptime);  // "3d 04h", "2h 03m", "45s"
std::string join(const std::vector<std::string>& parts, std::string_view separator);

// Columns padded to their widest cell; the first row is the header.
class Table {
 public:
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  std::string render(std::string_view indent = "") const;
  bool empty() const { return rows_.size() <= 1; }

 private:
  std::vector<std::vector<std::string>> rows_;
};

// Writes one JSON value in order; the caller nests begin/end calls correctly.
class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(uint64_t number);
  JsonWriter& value(int64_t number);
  JsonWriter& value(uint32_t number) { return value(static_cast<uint64_t>(number)); }
  JsonWriter& value(int number) { return value(static_cast<int64_t>(number)); }
  JsonWriter& value(double number);
  JsonWriter& value(bool flag);
  const std::string& str() const { return out_; }

 private:
  void separate();
  void write_string(std::string_view text);
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace reconctl
