// A bounds-checked cursor over protobuf wire-format bytes, just enough to read ONNX files by hand
// (no libprotobuf, no generated code). It knows wire types, not messages: onnx_file.cpp maps field
// numbers to meaning. Every read checks what is left and fails with DATA_LOSS naming the byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpu/status.h"

namespace recon::gpu::onnx {

// The four wire types proto2/proto3 files use; groups (3, 4) are refused.
enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kFixed32 = 5,
};
const char* wire_type_name(WireType type);

struct WireTag {
  uint32_t field = 0;
  WireType type = WireType::kVarint;
};

class WireReader {
 public:
  // Nested messages deeper than this are refused, so a hostile file cannot make a recursive
  // reader run out of stack.
  static constexpr int kMaxDepth = 32;

  // `base_offset` is where `bytes` start in the whole file, so errors name absolute offsets.
  explicit WireReader(std::span<const uint8_t> bytes, size_t base_offset = 0, int depth = 0)
      : bytes_(bytes), base_(base_offset), depth_(depth) {}

  bool at_end() const { return pos_ == bytes_.size(); }
  // Absolute offset of the next unread byte.
  size_t offset() const { return base_ + pos_; }
  int depth() const { return depth_; }

  // A field's tag: its number (1 … 2^29-1) and a known, non-group wire type.
  Result<WireTag> read_tag();
  // At most 10 bytes; a value that does not fit 64 bits is refused.
  Result<uint64_t> read_varint();
  Result<uint32_t> read_fixed32();
  Result<uint64_t> read_fixed64();
  // The payload of a length-delimited field; the length is checked against what is left.
  Result<std::span<const uint8_t>> read_length_delimited();
  Result<std::string> read_string();
  // A reader over an embedded message, one level deeper, with offsets kept absolute.
  Result<WireReader> read_message();
  // Skips the payload of a field whose tag was just read.
  Status skip(WireType type);

  // Fails unless the tag just read has wire type `want`.
  Status expect(WireTag tag, WireType want) const;

  // Repeated scalars, appended to `out`. Both encodings are accepted: one element per tag
  // (`type` is the scalar's wire type) or packed (`type` is length-delimited).
  Status read_varints(WireType type, std::vector<uint64_t>& out);
  Status read_int64s(WireType type, std::vector<int64_t>& out);
  Status read_fixed32s(WireType type, std::vector<uint32_t>& out);
  Status read_floats(WireType type, std::vector<float>& out);
  Status read_fixed64s(WireType type, std::vector<uint64_t>& out);
  Status read_doubles(WireType type, std::vector<double>& out);

  // DATA_LOSS "<what> at byte <offset>".
  Status error_at(size_t offset, const std::string& what) const;

 private:
  size_t left() const { return bytes_.size() - pos_; }

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  size_t base_ = 0;
  int depth_ = 0;
};

}  // namespace recon::gpu::onnx
