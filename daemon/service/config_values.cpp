// Value parsers for recond.conf and its flags. See config_values.h.
#include "daemon/service/config_values.h"

#include <cctype>
#include <limits>

namespace recon::daemon {
namespace {

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Digits, overflow-checked; nullopt-like failure via bool.
bool to_u64(std::string_view digits, uint64_t& out) {
  if (!all_digits(digits)) return false;
  uint64_t value = 0;
  for (char c : digits) {
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    value = value * 10 + d;
  }
  out = value;
  return true;
}

// Splits "123unit" into digits and unit.
std::pair<std::string_view, std::string_view> split_number(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  return {text.substr(0, i), trim(text.substr(i))};
}

struct Unit {
  const char* name;
  uint64_t factor;
};

}  // namespace

std::string_view trim(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

Result<uint64_t> parse_uint(std::string_view text, uint64_t min, uint64_t max) {
  uint64_t value = 0;
  if (!to_u64(text, value) || value < min || value > max) {
    return invalid_argument("expected a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
                            ", got " + quoted(text));
  }
  return value;
}

Result<uint64_t> parse_byte_size(std::string_view text, uint64_t min, uint64_t max) {
  static constexpr Unit kUnits[] = {{"", 1},
                                    {"b", 1},
                                    {"k", 1ull << 10},
                                    {"kb", 1ull << 10},
                                    {"kib", 1ull << 10},
                                    {"m", 1ull << 20},
                                    {"mb", 1ull << 20},
                                    {"mib", 1ull << 20},
                                    {"g", 1ull << 30},
                                    {"gb", 1ull << 30},
                                    {"gib", 1ull << 30},
                                    {"t", 1ull << 40},
                                    {"tb", 1ull << 40},
                                    {"tib", 1ull << 40}};
  const auto [digits, unit_text] = split_number(trim(text));
  const std::string unit = lower(unit_text);
  uint64_t number = 0;
  const Unit* unit_found = nullptr;
  for (const Unit& u : kUnits) {
    if (unit == u.name) unit_found = &u;
  }
  const std::string range = "from " + format_byte_size(min) + " to " + format_byte_size(max);
  if (!to_u64(digits, number) || unit_found == nullptr) {
    return invalid_argument("expected a size such as 512MiB or 4GiB (" + range + "), got " + quoted(text));
  }
  if (number > max / unit_found->factor || number * unit_found->factor < min || number * unit_found->factor > max) {
    return invalid_argument("size " + quoted(text) + " is out of range: " + range);
  }
  return number * unit_found->factor;
}

std::string format_byte_size(uint64_t bytes) {
  static constexpr Unit kUnits[] = {{"TiB", 1ull << 40}, {"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1ull << 10}};
  if (bytes != 0) {
    for (const Unit& u : kUnits) {
      if (bytes % u.factor == 0) return std::to_string(bytes / u.factor) + u.name;
    }
  }
  return std::to_string(bytes) + "B";
}

Result<std::chrono::milliseconds> parse_duration(std::string_view text, std::chrono::milliseconds min,
                                                 std::chrono::milliseconds max) {
  static constexpr Unit kUnits[] = {{"", 1000}, {"ms", 1}, {"s", 1000}, {"min", 60'000}, {"h", 3'600'000}};
  const auto [digits, unit_text] = split_number(trim(text));
  const std::string unit = lower(unit_text);
  const Unit* unit_found = nullptr;
  for (const Unit& u : kUnits) {
    if (unit == u.name) unit_found = &u;
  }
  uint64_t number = 0;
  const std::string range = "from " + format_duration(min) + " to " + format_duration(max);
  if (!to_u64(digits, number) || unit_found == nullptr) {
    return invalid_argument("expected a duration such as 500ms, 30s, 5min or 1h (" + range + "), got " + quoted(text));
  }
  const auto max_ms = static_cast<uint64_t>(max.count());
  if (number > max_ms / unit_found->factor || number * unit_found->factor > max_ms ||
      static_cast<int64_t>(number * unit_found->factor) < min.count()) {
    return invalid_argument("duration " + quoted(text) + " is out of range: " + range);
  }
  return std::chrono::milliseconds(static_cast<int64_t>(number * unit_found->factor));
}

std::string format_duration(std::chrono::milliseconds duration) {
  const int64_t ms = duration.count();
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "min";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

Result<Resolution> parse_resolution(std::string_view text) {
  const std::string_view t = trim(text);
  const size_t x = t.find_first_of("xX");
  uint64_t width = 0;
  uint64_t height = 0;
  if (x == std::string_view::npos || !to_u64(t.substr(0, x), width) || !to_u64(t.substr(x + 1), height)) {
    return invalid_argument("expected a resolution WIDTHxHEIGHT such as 512x384, got " + quoted(text));
  }
  for (const auto& [side, value] : {std::pair{"width", width}, std::pair{"height", height}}) {
    if (value == 0 || value > kMaxResolutionSide) {
      return invalid_argument(std::string(side) + " " + std::to_string(value) + " of " + quoted(text) +
                              " must be from " + std::to_string(kResolutionMultiple) + " to " +
                              std::to_string(kMaxResolutionSide));
    }
    if (value % kResolutionMultiple != 0) {
      return invalid_argument(std::string(side) + " " + std::to_string(value) + " of " + quoted(text) +
                              " is not a multiple of the " + std::to_string(kResolutionMultiple) + "-pixel patch size");
    }
  }
  return Resolution{static_cast<uint32_t>(width), static_cast<uint32_t>(height)};
}

std::string format_resolution(Resolution r) {
  return std::to_string(r.width) + "x" + std::to_string(r.height);
}

Result<TcpEndpoint> parse_tcp_endpoint(std::string_view text) {
  const std::string_view t = trim(text);
  const auto bad = [&](const std::string& why) {
    return invalid_argument("expected HOST:PORT, [IPV6]:PORT or *:PORT such as 0.0.0.0:7600 (" + why + "), got " +
                            quoted(text));
  };
  const size_t colon = t.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string_view host = t.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    for (char c : host) {
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return bad("bad IPv6 address");
    }
  } else {
    if (host.find(':') != std::string_view::npos) return bad("IPv6 addresses go in brackets");
    for (char c : host) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '*') return bad("bad host");
    }
  }
  if (host.empty()) return bad("no host");
  uint64_t port = 0;
  if (!to_u64(t.substr(colon + 1), port) || port == 0 || port > 65535) return bad("port must be 1 to 65535");
  return TcpEndpoint{std::string(host), static_cast<uint16_t>(port)};
}

std::string format_tcp_endpoint(const TcpEndpoint& endpoint) {
  const bool v6 = endpoint.host.find(':') != std::string::npos;
  return (v6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" + std::to_string(endpoint.port);
}

Result<LogLevel> parse_log_level(std::string_view text) {
  const std::string t = lower(trim(text));
  if (t == "debug") return LogLevel::kDebug;
  if (t == "info") return LogLevel::kInfo;
  if (t == "warning") return LogLevel::kWarning;
  if (t == "error") return LogLevel::kError;
  return invalid_argument("expected debug, info, warning or error, got " + quoted(text));
}

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

Status check_model_name(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 64 &&
            (std::islower(static_cast<unsigned char>(name[0])) || std::isdigit(static_cast<unsigned char>(name[0])));
  for (char c : name) {
    ok = ok && (std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                c == '_' || c == '-' || c == '.');
  }
  if (!ok) {
    return invalid_argument("model name " + quoted(name) +
                            " must be 1 to 64 lower-case letters, digits, '_', '-' or '.', starting with a letter "
                            "or digit");
  }
  return Status::ok();
}

Status check_group_name(std::string_view name) {
  if (all_digits(name)) return Status::ok();
  bool ok = !name.empty() && name.size() <= 32 && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool trailing_dollar = c == '$' && i + 1 == name.size();
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || trailing_dollar);
  }
  if (!ok) return invalid_argument("not a valid group name: " + quoted(name));
  return Status::ok();
}

Status check_socket_path(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return invalid_argument("socket path must be absolute (abstract sockets have no permissions), got " + quoted(path));
  }
  if (path.size() > 107) {
    return invalid_argument("socket path is " + std::to_string(path.size()) +
                            " characters long; Unix sockets allow at most 107: " + quoted(path));
  }
  return Status::ok();
}

}  // namespace recon::daemon
