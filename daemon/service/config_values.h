// Parsers and printers for the values of recond.conf and its flags: whole numbers with ranges,
// byte sizes ("256MiB"), durations ("5min"), resolutions ("512x384"), TCP endpoints, names and
// paths. Each error says what was expected and what was found, without the file:line or flag
// prefix (config.cpp adds that). Pure functions: no I/O, no environment.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "gpu/log.h"
#include "gpu/status.h"

namespace recon::daemon {

struct Resolution {
  uint32_t width = 0;
  uint32_t height = 0;
  auto operator<=>(const Resolution&) const = default;
};

// An address for the optional ZeroMQ TCP listener; host "*" means every interface.
struct TcpEndpoint {
  std::string host;
  uint16_t port = 0;
  bool operator==(const TcpEndpoint&) const = default;
  std::string zmq_endpoint() const { return "tcp://" + host + ":" + std::to_string(port); }
};

// The patch size every warm-up resolution must be a multiple of (ViT-L/16 encoder).
inline constexpr uint32_t kResolutionMultiple = 16;
inline constexpr uint32_t kMaxResolutionSide = 4096;

// Decimal digits only; `min`..`max` inclusive.
Result<uint64_t> parse_uint(std::string_view text, uint64_t min, uint64_t max);
// A byte count: digits with an optional binary unit (B, K, KiB, M, MiB, G, GiB, T, TiB; any case;
// K = KiB = 1024), within `min`..`max`.
Result<uint64_t> parse_byte_size(std::string_view text, uint64_t min, uint64_t max);
std::string format_byte_size(uint64_t bytes);  // the largest exact unit: "4GiB", "1536KiB", "100B"
// A duration: digits with a unit (ms, s, min, h); bare digits are seconds.
Result<std::chrono::milliseconds> parse_duration(std::string_view text, std::chrono::milliseconds min,
                                                 std::chrono::milliseconds max);
std::string format_duration(std::chrono::milliseconds duration);  // "300s", "1500ms", "5min"
// "WIDTHxHEIGHT", both multiples of kResolutionMultiple, at most kMaxResolutionSide.
Result<Resolution> parse_resolution(std::string_view text);
std::string format_resolution(Resolution resolution);
// "HOST:PORT", "[IPv6]:PORT" or "*:PORT"; port 1..65535.
Result<TcpEndpoint> parse_tcp_endpoint(std::string_view text);
std::string format_tcp_endpoint(const TcpEndpoint& endpoint);  // "[::1]:7600" for IPv6 hosts
Result<LogLevel> parse_log_level(std::string_view text);       // debug | info | warning | error
const char* log_level_name(LogLevel level);
// A model name: lower-case letters, digits, '_', '-', '.', starting with a letter or digit; ≤ 64.
Status check_model_name(std::string_view name);
// A group name as useradd(8) accepts it, or a decimal gid.
Status check_group_name(std::string_view name);
// An absolute path for a Unix socket file, short enough for sun_path and zmq ipc:// (≤ 107).
Status check_socket_path(std::string_view path);
// Whitespace-trimmed view.
std::string_view trim(std::string_view text);

}  // namespace recon::daemon
