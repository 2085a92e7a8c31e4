// Parameters: see parameters.h.
#include "daemon/serving/parameters.h"

#include <array>

namespace recon::daemon {

Result<bool> parameter_flag(const std::string& name, const std::string& text) {
  if (text == "1" || text == "true" || text == "yes") return true;
  if (text == "0" || text == "false" || text == "no") return false;
  return invalid_argument("parameter " + name + "=" + text + ": expected true or false");
}

Status check_known_parameters(const Parameters& parameters, std::initializer_list<std::string_view> known,
                              const std::string& what) {
  for (const auto& [name, value] : parameters) {
    bool found = false;
    for (std::string_view k : known) found = found || k == name;
    if (found) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    return invalid_argument("unknown parameter '" + name + "': " + what +
                            (list.empty() ? " reads no parameters" : " reads " + list));
  }
  return Status::ok();
}

std::string parameter_text(double value) {
  std::array<char, 32> text{};
  const auto [end, ec] = std::to_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() ? std::string(text.data(), end) : std::string("nan");
}

}  // namespace recon::daemon
