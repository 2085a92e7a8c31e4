// Parameters: the named text parameters a request carries (a job's options, a model kind's
// settings such as retrieval's top_k), and how their values are read. Every reader refuses a value
// out of range with a message naming the parameter, its text and the accepted range.
#pragma once

#include <charconv>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

#include "gpu/status.h"

namespace recon::daemon {

using Parameters = std::map<std::string, std::string>;

// A decimal number in [low, high] (integers: digits only; floating point: std::from_chars' form).
template <typename T>
Result<T> parameter_number(const std::string& name, const std::string& text, T low, T high) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !(value >= low && value <= high)) {
    return invalid_argument("parameter " + name + "=" + text + ": expected a number in [" + std::to_string(low) + ", " +
                            std::to_string(high) + "]");
  }
  return value;
}

// The parameter `name` of `parameters` as parameter_number reads it, or `fallback` when absent.
template <typename T>
Result<T> parameter_or(const Parameters& parameters, const std::string& name, T fallback, T low, T high) {
  const auto it = parameters.find(name);
  return it == parameters.end() ? Result<T>(fallback) : parameter_number<T>(name, it->second, low, high);
}

// 1/true/yes or 0/false/no.
Result<bool> parameter_flag(const std::string& name, const std::string& text);

// INVALID_ARGUMENT naming the first parameter not in `known` ("<what> reads ...").
Status check_known_parameters(const Parameters& parameters, std::initializer_list<std::string_view> known,
                              const std::string& what);

// The shortest text that reads back as exactly `value` (for requests whose fields become parameters).
std::string parameter_text(double value);

}  // namespace recon::daemon
