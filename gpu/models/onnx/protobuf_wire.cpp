// WireReader (see protobuf_wire.h): protobuf's varint, fixed and length-delimited encodings,
// checked against the bytes left before every read.
#include "gpu/models/onnx/protobuf_wire.h"

#include <bit>
#include <cstring>

namespace recon::gpu::onnx {

namespace {

constexpr uint32_t kMaxFieldNumber = (1u << 29) - 1;

// Little-endian load without alignment assumptions (wire bytes sit anywhere in the file).
template <typename T>
T load_le(const uint8_t* p) {
  static_assert(std::endian::native == std::endian::little, "the ONNX reader assumes a little-endian host");
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

}  // namespace

const char* wire_type_name(WireType type) {
  switch (type) {
    case WireType::kVarint:
      return "varint";
    case WireType::kFixed64:
      return "fixed64";
    case WireType::kLengthDelimited:
      return "length-delimited";
    case WireType::kFixed32:
      return "fixed32";
  }
  return "unknown";
}

Status WireReader::error_at(size_t offset, const std::string& what) const {
  return data_loss(what + " at byte " + std::to_string(offset));
}

Result<uint64_t> WireReader::read_varint() {
  const size_t start = offset();
  uint64_t value = 0;
  for (int i = 0; i < 10; ++i) {
    if (pos_ == bytes_.size()) return error_at(start, "truncated varint");
    const uint8_t byte = bytes_[pos_++];
    // The tenth byte carries only bit 63; anything more does not fit 64 bits.
    if (i == 9 && byte > 1) return error_at(start, "varint overflows 64 bits");
    value |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) return value;
  }
  return error_at(start, "varint longer than 10 bytes");
}

Result<WireTag> WireReader::read_tag() {
  const size_t start = offset();
  RECON_ASSIGN_OR_RETURN(const uint64_t raw, read_varint());
  const uint64_t field = raw >> 3;
  const auto type = static_cast<uint32_t>(raw & 7);
  if (field == 0 || field > kMaxFieldNumber) {
    return error_at(start, "invalid field number " + std::to_string(field));
  }
  switch (type) {
    case 0:
    case 1:
    case 2:
    case 5:
      return WireTag{static_cast<uint32_t>(field), static_cast<WireType>(type)};
    case 3:
    case 4:
      return error_at(
          start, "field " + std::to_string(field) + " uses the unsupported group wire type " + std::to_string(type));
    default:
      return error_at(start, "field " + std::to_string(field) + " has unknown wire type " + std::to_string(type));
  }
}

Result<uint32_t> WireReader::read_fixed32() {
  if (left() < 4) return error_at(offset(), "truncated fixed32");
  const auto value = load_le<uint32_t>(bytes_.data() + pos_);
  pos_ += 4;
  return value;
}

Result<uint64_t> WireReader::read_fixed64() {
  if (left() < 8) return error_at(offset(), "truncated fixed64");
  const auto value = load_le<uint64_t>(bytes_.data() + pos_);
  pos_ += 8;
  return value;
}

Result<std::span<const uint8_t>> WireReader::read_length_delimited() {
  const size_t start = offset();
  RECON_ASSIGN_OR_RETURN(const uint64_t length, read_varint());
  if (length > left()) {
    return error_at(start,
                    "length " + std::to_string(length) + " exceeds the " + std::to_string(left()) + " bytes left");
  }
  const auto payload = bytes_.subspan(pos_, static_cast<size_t>(length));
  pos_ += static_cast<size_t>(length);
  return payload;
}

Result<std::string> WireReader::read_string() {
  RECON_ASSIGN_OR_RETURN(const auto payload, read_length_delimited());
  return std::string(reinterpret_cast<const char*>(payload.data()), payload.size());
}

Result<WireReader> WireReader::read_message() {
  const size_t start = offset();
  if (depth_ + 1 > kMaxDepth) {
    return error_at(start, "messages nested deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  RECON_ASSIGN_OR_RETURN(const auto payload, read_length_delimited());
  // The payload starts after the length prefix, which read_length_delimited just consumed.
  const size_t payload_offset = offset() - payload.size();
  return WireReader(payload, payload_offset, depth_ + 1);
}

Status WireReader::skip(WireType type) {
  switch (type) {
    case WireType::kVarint:
      return read_varint().status();
    case WireType::kFixed64:
      return read_fixed64().status();
    case WireType::kLengthDelimited:
      return read_length_delimited().status();
    case WireType::kFixed32:
      return read_fixed32().status();
  }
  return error_at(offset(), "cannot skip an unknown wire type");
}

Status WireReader::expect(WireTag tag, WireType want) const {
  if (tag.type == want) return Status::ok();
  return error_at(offset(), "field " + std::to_string(tag.field) + " has wire type " + wire_type_name(tag.type) +
                                ", expected " + wire_type_name(want));
}

Status WireReader::read_varints(WireType type, std::vector<uint64_t>& out) {
  if (type == WireType::kVarint) {
    RECON_ASSIGN_OR_RETURN(const uint64_t value, read_varint());
    out.push_back(value);
    return Status::ok();
  }
  if (type != WireType::kLengthDelimited) {
    return error_at(offset(), std::string("repeated varint field has wire type ") + wire_type_name(type));
  }
  RECON_ASSIGN_OR_RETURN(const auto payload, read_length_delimited());
  WireReader packed(payload, offset() - payload.size(), depth_);
  while (!packed.at_end()) {
    RECON_ASSIGN_OR_RETURN(const uint64_t value, packed.read_varint());
    out.push_back(value);
  }
  return Status::ok();
}

Status WireReader::read_int64s(WireType type, std::vector<int64_t>& out) {
  std::vector<uint64_t> raw;
  RECON_RETURN_IF_ERROR(read_varints(type, raw));
  // int64 travels as its two's complement bit pattern.
  for (const uint64_t value : raw) out.push_back(static_cast<int64_t>(value));
  return Status::ok();
}

Status WireReader::read_fixed32s(WireType type, std::vector<uint32_t>& out) {
  if (type == WireType::kFixed32) {
    RECON_ASSIGN_OR_RETURN(const uint32_t value, read_fixed32());
    out.push_back(value);
    return Status::ok();
  }
  if (type != WireType::kLengthDelimited) {
    return error_at(offset(), std::string("repeated fixed32 field has wire type ") + wire_type_name(type));
  }
  const size_t start = offset();
  RECON_ASSIGN_OR_RETURN(const auto payload, read_length_delimited());
  if (payload.size() % 4 != 0) {
    return error_at(start, "packed fixed32 field of " + std::to_string(payload.size()) + " bytes");
  }
  out.reserve(out.size() + payload.size() / 4);
  for (size_t i = 0; i < payload.size(); i += 4) out.push_back(load_le<uint32_t>(payload.data() + i));
  return Status::ok();
}

Status WireReader::read_floats(WireType type, std::vector<float>& out) {
  std::vector<uint32_t> raw;
  RECON_RETURN_IF_ERROR(read_fixed32s(type, raw));
  for (const uint32_t bits : raw) out.push_back(std::bit_cast<float>(bits));
  return Status::ok();
}

Status WireReader::read_fixed64s(WireType type, std::vector<uint64_t>& out) {
  if (type == WireType::kFixed64) {
    RECON_ASSIGN_OR_RETURN(const uint64_t value, read_fixed64());
    out.push_back(value);
    return Status::ok();
  }
  if (type != WireType::kLengthDelimited) {
    return error_at(offset(), std::string("repeated fixed64 field has wire type ") + wire_type_name(type));
  }
  const size_t start = offset();
  RECON_ASSIGN_OR_RETURN(const auto payload, read_length_delimited());
  if (payload.size() % 8 != 0) {
    return error_at(start, "packed fixed64 field of " + std::to_string(payload.size()) + " bytes");
  }
  out.reserve(out.size() + payload.size() / 8);
  for (size_t i = 0; i < payload.size(); i += 8) out.push_back(load_le<uint64_t>(payload.data() + i));
  return Status::ok();
}

Status WireReader::read_doubles(WireType type, std::vector<double>& out) {
  std::vector<uint64_t> raw;
  RECON_RETURN_IF_ERROR(read_fixed64s(type, raw));
  for (const uint64_t bits : raw) out.push_back(std::bit_cast<double>(bits));
  return Status::ok();
}

}  // namespace recon::gpu::onnx
