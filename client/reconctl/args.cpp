// Args: subcommand flag parsing for reconctl.
#include "args.h"

#include <cerrno>
#include <cstdlib>

namespace reconctl {

Args::Args(std::vector<std::string> argv, const std::set<std::string>& value_flags,
           const std::set<std::string>& bool_flags) {
  bool only_positionals = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (only_positionals || a.size() < 2 || a.rfind("--", 0) != 0) {
      positionals_.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positionals = true;
      continue;
    }
    const size_t eq = a.find('=');
    const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (bool_flags.count(name) != 0) {
      if (eq != std::string::npos) throw UsageError("--" + name + " takes no value");
      flags_.emplace_back(name, "");
    } else if (value_flags.count(name) != 0) {
      if (eq != std::string::npos) {
        flags_.emplace_back(name, a.substr(eq + 1));
      } else if (i + 1 < argv.size()) {
        flags_.emplace_back(name, argv[++i]);
      } else {
        throw UsageError("--" + name + " needs a value");
      }
    } else {
      throw UsageError("unknown option --" + name);
    }
  }
}

bool Args::has(const std::string& flag) const {
  for (const auto& [name, v] : flags_) {
    if (name == flag) return true;
  }
  return false;
}

std::optional<std::string> Args::value(const std::string& flag) const {
  std::optional<std::string> out;
  for (const auto& [name, v] : flags_) {
    if (name == flag) out = v;
  }
  return out;
}

std::vector<std::string> Args::values(const std::string& flag) const {
  std::vector<std::string> out;
  for (const auto& [name, v] : flags_) {
    if (name == flag) out.push_back(v);
  }
  return out;
}

std::string Args::string_or(const std::string& flag, const std::string& fallback) const {
  return value(flag).value_or(fallback);
}

int64_t parse_int(const std::string& flag, const std::string& text, int64_t min, int64_t max) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < min || v > max) {
    throw UsageError(flag + ": expected an integer in " + std::to_string(min) + ".." + std::to_string(max) + ", got '" +
                     text + "'");
  }
  return v;
}

int64_t Args::int_or(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const {
  const auto v = value(flag);
  return v ? parse_int("--" + flag, *v, min, max) : fallback;
}

double Args::double_or(const std::string& flag, double fallback) const {
  const auto v = value(flag);
  if (!v) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0') throw UsageError("--" + flag + ": expected a number, got '" + *v + "'");
  return d;
}

recon::client::Resolution parse_resolution(const std::string& text) {
  const size_t x = text.find('x');
  if (x == std::string::npos) throw UsageError("expected a resolution WIDTHxHEIGHT (e.g. 512x384), got '" + text + "'");
  const auto width = parse_int("resolution width", text.substr(0, x), 16, 8192);
  const auto height = parse_int("resolution height", text.substr(x + 1), 16, 8192);
  return {static_cast<uint32_t>(height), static_cast<uint32_t>(width)};
}

recon::client::Precision parse_precision(const std::string& text) {
  using recon::client::Precision;
  if (text == "default") return Precision::kDefault;
  if (text == "fp32") return Precision::kFp32;
  if (text == "fp16") return Precision::kFp16;
  if (text == "bf16") return Precision::kBf16;
  if (text == "fp16-heads") return Precision::kFp16Heads;
  if (text == "fp32-split") return Precision::kFp32Split;
  throw UsageError("expected a precision (fp32, fp32-split, fp16, fp16-heads, bf16 or default), got '" + text + "'");
}

}  // namespace reconctl
