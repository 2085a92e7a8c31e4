// A small command-line reader for reconctl's subcommands: `--flag VALUE`, `--flag=VALUE`,
// boolean `--flag`, repeated flags and positionals, with usage errors as UsageError (exit 2).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "recon/client/types.h"

namespace reconctl {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // `value_flags` take a value, `bool_flags` do not; anything else starting with "--" is an error.
  Args(std::vector<std::string> argv, const std::set<std::string>& value_flags,
       const std::set<std::string>& bool_flags);

  bool has(const std::string& flag) const;
  std::optional<std::string> value(const std::string& flag) const;  // the last one given
  std::vector<std::string> values(const std::string& flag) const;   // all, in order
  const std::vector<std::string>& positionals() const { return positionals_; }

  std::string string_or(const std::string& flag, const std::string& fallback) const;
  int64_t int_or(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const;
  double double_or(const std::string& flag, double fallback) const;

 private:
  std::vector<std::pair<std::string, std::string>> flags_;
  std::vector<std::string> positionals_;
};

// "512x384" → {height 384, width 512}. Throws UsageError.
recon::client::Resolution parse_resolution(const std::string& text);
// "fp32", "fp16", "bf16", "default". Throws UsageError.
recon::client::Precision parse_precision(const std::string& text);
int64_t parse_int(const std::string& flag, const std::string& text, int64_t min, int64_t max);

}  // namespace reconctl
