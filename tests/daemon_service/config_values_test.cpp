// Value parsers of recond.conf: sizes, durations, resolutions, endpoints, names.
#include "daemon/service/config_values.h"

#include <gtest/gtest.h>

#include <string>

namespace recon::daemon {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kGiB = uint64_t{1} << 30;

template <typename T>
std::string error_of(const Result<T>& result) {
  return result.status().message();
}

TEST(ParseUint, AcceptsDigitsWithinRangeOnly) {
  EXPECT_EQ(parse_uint("64", 1, 100).value(), 64u);
  EXPECT_EQ(error_of(parse_uint("0", 1, 100)), "expected a whole number from 1 to 100, got '0'");
  EXPECT_FALSE(parse_uint("-1", 0, 100).is_ok());
  EXPECT_FALSE(parse_uint("1e3", 0, 10000).is_ok());
  EXPECT_FALSE(parse_uint("", 0, 100).is_ok());
  EXPECT_FALSE(parse_uint("99999999999999999999999", 0, UINT64_MAX).is_ok());  // overflow
}

TEST(ParseByteSize, UnderstandsBinaryUnitsInAnyCase) {
  EXPECT_EQ(parse_byte_size("4096", 0, kGiB).value(), 4096u);
  EXPECT_EQ(parse_byte_size("256MiB", 0, kGiB).value(), 256u << 20);
  EXPECT_EQ(parse_byte_size("256M", 0, kGiB).value(), 256u << 20);
  EXPECT_EQ(parse_byte_size("1 gib", 0, kGiB).value(), kGiB);
  EXPECT_EQ(parse_byte_size("64k", 0, kGiB).value(), 64u << 10);
  EXPECT_EQ(error_of(parse_byte_size("2GiB", 0, kGiB)), "size '2GiB' is out of range: from 0B to 1GiB");
  EXPECT_EQ(error_of(parse_byte_size("lots", 0, kGiB)),
            "expected a size such as 512MiB or 4GiB (from 0B to 1GiB), got 'lots'");
  EXPECT_FALSE(parse_byte_size("1.5GiB", 0, kGiB).is_ok());
  EXPECT_FALSE(parse_byte_size("99999999999TiB", 0, UINT64_MAX).is_ok());  // overflow
}

TEST(FormatByteSize, UsesTheLargestExactUnit) {
  EXPECT_EQ(format_byte_size(4 * kGiB), "4GiB");
  EXPECT_EQ(format_byte_size(1536u << 10), "1536KiB");
  EXPECT_EQ(format_byte_size(100), "100B");
  EXPECT_EQ(format_byte_size(0), "0B");
}

TEST(ParseDuration, UnderstandsUnitsAndBareSeconds) {
  EXPECT_EQ(parse_duration("300", 1s, 24h).value(), 300s);
  EXPECT_EQ(parse_duration("5min", 1s, 24h).value(), 5min);
  EXPECT_EQ(parse_duration("1500ms", 1s, 24h).value(), 1500ms);
  EXPECT_EQ(parse_duration("2h", 1s, 24h).value(), 2h);
  EXPECT_EQ(error_of(parse_duration("500ms", 1s, 24h)), "duration '500ms' is out of range: from 1s to 24h");
  EXPECT_FALSE(parse_duration("5 days", 1s, 24h).is_ok());
  EXPECT_FALSE(parse_duration("", 1s, 24h).is_ok());
}

TEST(FormatDuration, RoundTrips) {
  for (auto d : {300000ms, 1500ms, 7200000ms, 60000ms, 1000ms}) {
    EXPECT_EQ(parse_duration(format_duration(d), 1ms, 48h).value(), d);
  }
  EXPECT_EQ(format_duration(5min), "5min");
}

TEST(ParseResolution, WantsMultiplesOfThePatchSize) {
  EXPECT_EQ(parse_resolution("512x384").value(), (Resolution{512, 384}));
  EXPECT_EQ(parse_resolution(" 512X288 ").value(), (Resolution{512, 288}));
  EXPECT_EQ(error_of(parse_resolution("500x384")),
            "width 500 of '500x384' is not a multiple of the 16-pixel patch size");
  EXPECT_EQ(error_of(parse_resolution("512x0")), "height 0 of '512x0' must be from 16 to 4096");
  EXPECT_FALSE(parse_resolution("8192x512").is_ok());
  EXPECT_EQ(error_of(parse_resolution("512")), "expected a resolution WIDTHxHEIGHT such as 512x384, got '512'");
  EXPECT_EQ(format_resolution({512, 384}), "512x384");
}

TEST(ParseTcpEndpoint, AcceptsHostsAddressesAndWildcard) {
  EXPECT_EQ(parse_tcp_endpoint("0.0.0.0:7600").value(), (TcpEndpoint{"0.0.0.0", 7600}));
  EXPECT_EQ(parse_tcp_endpoint("*:7600").value().zmq_endpoint(), "tcp://*:7600");
  EXPECT_EQ(parse_tcp_endpoint("[::1]:7600").value(), (TcpEndpoint{"::1", 7600}));
  EXPECT_EQ(format_tcp_endpoint({"::1", 7600}), "[::1]:7600");
  EXPECT_EQ(parse_tcp_endpoint("gpu-host-3.lan:7600").value().host, "gpu-host-3.lan");
  EXPECT_FALSE(parse_tcp_endpoint("7600").is_ok());
  EXPECT_FALSE(parse_tcp_endpoint("host:0").is_ok());
  EXPECT_FALSE(parse_tcp_endpoint("host:70000").is_ok());
  EXPECT_FALSE(parse_tcp_endpoint("::1:7600").is_ok());
  EXPECT_FALSE(parse_tcp_endpoint(":7600").is_ok());
}

TEST(ParseEnums, LogLevel) {
  EXPECT_EQ(parse_log_level("warning").value(), LogLevel::kWarning);
  EXPECT_FALSE(parse_log_level("verbose").is_ok());
}

TEST(CheckNames, ModelGroupAndSocketPath) {
  EXPECT_TRUE(check_model_name("mast3r").is_ok());
  EXPECT_TRUE(check_model_name("mast3r-512.fp16").is_ok());
  EXPECT_FALSE(check_model_name("MASt3R").is_ok());
  EXPECT_FALSE(check_model_name("-x").is_ok());
  EXPECT_FALSE(check_model_name("").is_ok());
  EXPECT_TRUE(check_group_name("recon-admin").is_ok());
  EXPECT_TRUE(check_group_name("1001").is_ok());
  EXPECT_FALSE(check_group_name("recon admin").is_ok());
  EXPECT_TRUE(check_socket_path("/run/recon/client.sock").is_ok());
  EXPECT_FALSE(check_socket_path("run/recon/client.sock").is_ok());
  EXPECT_FALSE(check_socket_path("@recon").is_ok());
  EXPECT_TRUE(check_socket_path("/" + std::string(106, 's')).is_ok());
  EXPECT_FALSE(check_socket_path("/" + std::string(107, 's')).is_ok());
}

}  // namespace
}  // namespace recon::daemon
