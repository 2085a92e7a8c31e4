// FuzzInput: decisions read from a fuzzer's bytes (libFuzzer's input, or seeded random bytes in
// the CI run). Each call consumes bytes from the front; once they run out every answer is 0 /
// false / the first choice, so any input decodes to some request. Header-only, no allocation
// beyond the strings and vectors it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace recon::daemon::fuzz {

class FuzzInput {
 public:
  explicit FuzzInput(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  uint8_t byte() { return pos_ < bytes_.size() ? bytes_[pos_++] : 0; }
  bool flag() { return (byte() & 1) != 0; }
  // True with probability about percent/100.
  bool chance(unsigned percent) { return byte() % 100 < percent; }
  uint32_t u32() { return static_cast<uint32_t>(take(4)); }
  uint64_t u64() { return take(8); }
  // A value in [0, n) (n > 0).
  size_t below(size_t n) { return n <= 256 ? byte() % n : static_cast<size_t>(u32() % n); }
  template <typename T, size_t N>
  const T& pick(const T (&choices)[N]) {
    return choices[below(N)];
  }
  // A 32-bit value from the edges (0, 1, max, powers of two, the tiny model's sides) or anywhere.
  uint32_t edgy_u32() {
    static constexpr uint32_t kEdges[] = {0,    1,     2,     3,          15,         16,        17,   47,
                                          48,   49,    63,    64,         65,         192,       4095, 4096,
                                          4097, 65535, 65536, 0x7fffffff, 0x80000000, 0xffffffff};
    return flag() ? pick(kEdges) : u32();
  }
  uint64_t edgy_u64() {
    static constexpr uint64_t kEdges[] = {
        0, 1, 4095, 4096, 65536, uint64_t{1} << 32, uint64_t{1} << 62, ~uint64_t{0}, ~uint64_t{0} - 4095};
    return flag() ? pick(kEdges) : u64();
  }
  std::string text(size_t max_length) {
    const size_t length = below(max_length + 1);
    std::string out;
    for (size_t i = 0; i < length; ++i) out.push_back(static_cast<char>(byte()));
    return out;
  }
  std::vector<uint8_t> rest() {
    std::vector<uint8_t> out(bytes_.begin() + static_cast<ptrdiff_t>(pos_), bytes_.end());
    pos_ = bytes_.size();
    return out;
  }

 private:
  uint64_t take(size_t n) {
    uint64_t value = 0;
    for (size_t i = 0; i < n; ++i) value |= uint64_t{byte()} << (8 * i);
    return value;
  }

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace recon::daemon::fuzz
