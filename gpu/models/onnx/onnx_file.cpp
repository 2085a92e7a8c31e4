// The ONNX reader (see onnx_file.h): ModelProto, GraphProto, NodeProto, AttributeProto,
// ValueInfoProto and TensorProto decoded field by field with WireReader. Field numbers follow ONNX's
// onnx.proto (proto2). Unknown fields are skipped, as protobuf does, so newer files still load.
#include "gpu/models/onnx/onnx_file.h"

#include <bit>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "gpu/models/onnx/protobuf_wire.h"
#include "gpu/weights/mapped_file.h"

namespace recon::gpu::onnx {

namespace {

// What one parse shares: where external data lives and the external files already mapped, so
// a thousand weights in one side file map it once.
struct ParseContext {
  std::shared_ptr<const void> owner;
  std::string base_dir;
  std::map<std::string, std::shared_ptr<const MappedFile>> external_files;
};

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

Result<std::string> string_field(WireReader& r, WireTag tag) {
  RECON_RETURN_IF_ERROR(r.expect(tag, WireType::kLengthDelimited));
  return r.read_string();
}

Result<uint64_t> varint_field(WireReader& r, WireTag tag) {
  RECON_RETURN_IF_ERROR(r.expect(tag, WireType::kVarint));
  return r.read_varint();
}

Result<WireReader> message_field(WireReader& r, WireTag tag) {
  RECON_RETURN_IF_ERROR(r.expect(tag, WireType::kLengthDelimited));
  return r.read_message();
}

// The first string in field `field` of a message, best effort: only for naming what failed, so a
// broken message yields "" instead of a second error.
std::string peek_string(WireReader r, uint32_t field) {
  while (!r.at_end()) {
    auto tag = r.read_tag();
    if (!tag) return {};
    if (tag->field == field && tag->type == WireType::kLengthDelimited) {
      auto s = r.read_string();
      return s ? *s : std::string();
    }
    if (!r.skip(tag->type).is_ok()) return {};
  }
  return {};
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// ElemType for a TensorProto.DataType number, refusing types without a dense host layout here.
Result<ElemType> tensor_elem_type(uint64_t raw) {
  switch (raw) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 9:
    case 10:
    case 11:
    case 12:
    case 13:
    case 16:
      return static_cast<ElemType>(raw);
    case 0:
      return invalid_argument("has no data type");
    case 8:
      return unimplemented("string tensors are not supported");
    case 14:
    case 15:
      return unimplemented("complex data type " + std::to_string(raw) + " is not supported");
    default:
      return unimplemented("data type " + std::to_string(raw) + " is not supported");
  }
}

// ValueInfo's element type: 0 (unset) stays kUndefined, strings are representable there.
Result<ElemType> value_elem_type(uint64_t raw) {
  if (raw == 0) return ElemType::kUndefined;
  if (raw == 8) return ElemType::kString;
  return tensor_elem_type(raw);
}

bool multiply(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// Strict decimal: digits only, no sign, no overflow (external_data's offset and length).
std::optional<uint64_t> parse_decimal(const std::string& s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  uint64_t value = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    if (__builtin_mul_overflow(value, uint64_t{10}, &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(c - '0'), &value)) {
      return std::nullopt;
    }
  }
  return value;
}

// External data must stay inside the model's directory: no absolute paths, no ".." components.
Status check_location(const std::string& location) {
  if (location.empty()) return invalid_argument("external data has an empty location");
  if (location.find('\0') != std::string::npos) return invalid_argument("external data location contains NUL");
  if (location.front() == '/' || location.front() == '\\') {
    return invalid_argument("external data location " + quoted(location) + " is absolute");
  }
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find_first_of("/\\", start);
    if (end == std::string::npos) end = location.size();
    if (location.compare(start, end - start, "..") == 0) {
      return invalid_argument("external data location " + quoted(location) + " leaves the model's directory");
    }
    start = end + 1;
  }
  return Status::ok();
}

// Points a tensor at `data` without copying when the address suits its element type; otherwise
// copies, because HostTensor::values<T>() would read misaligned T (raw_data sits anywhere in a
// protobuf message, so this is common for inline weights).
void set_bytes(HostTensor& tensor, std::span<const uint8_t> data, std::shared_ptr<const void> owner) {
  const size_t align = elem_type_size(tensor.type);
  if (align <= 1 || reinterpret_cast<uintptr_t>(data.data()) % align == 0) {
    tensor.bytes = data;
    tensor.owner = std::move(owner);
    return;
  }
  auto copy = std::make_shared<const std::vector<uint8_t>>(data.begin(), data.end());
  tensor.bytes = std::span<const uint8_t>(copy->data(), copy->size());
  tensor.owner = std::move(copy);
}

// TensorProto fields as read, before deciding where the tensor's bytes come from.
struct TensorFields {
  HostTensor tensor;
  uint64_t data_type = 0;
  std::optional<std::span<const uint8_t>> raw_data;
  std::vector<float> float_data;
  std::vector<uint64_t> int32_data;  // varints; the low bits hold the value
  std::vector<int64_t> int64_data;
  std::vector<double> double_data;
  std::vector<uint64_t> uint64_data;
  bool has_string_data = false;
  uint64_t data_location = 0;
  std::vector<std::pair<std::string, std::string>> external_data;
};

Result<std::pair<std::string, std::string>> parse_string_entry(WireReader r) {
  std::pair<std::string, std::string> entry;
  while (!r.at_end()) {
    RECON_ASSIGN_OR_RETURN(const WireTag tag, r.read_tag());
    if (tag.field == 1) {
      RECON_ASSIGN_OR_RETURN(entry.first, string_field(r, tag));
    } else if (tag.field == 2) {
      RECON_ASSIGN_OR_RETURN(entry.second, string_field(r, tag));
    } else {
      RECON_RETURN_IF_ERROR(r.skip(tag.type));
    }
  }
  return entry;
}

Status read_tensor_fields(WireReader& r, TensorFields& f) {
  while (!r.at_end()) {
    const size_t field_offset = r.offset();
    RECON_ASSIGN_OR_RETURN(const WireTag tag, r.read_tag());
    switch (tag.field) {
      case 1:  // dims
        RECON_RETURN_IF_ERROR(r.read_int64s(tag.type, f.tensor.dims));
        break;
      case 2: {  // data_type
        RECON_ASSIGN_OR_RETURN(f.data_type, varint_field(r, tag));
        break;
      }
      case 3:  // segment
        return unimplemented("segmented tensors are not supported (field at byte " + std::to_string(field_offset) +
                             ")");
      case 4:  // float_data
        RECON_RETURN_IF_ERROR(r.read_floats(tag.type, f.float_data));
        break;
      case 5:  // int32_data
        RECON_RETURN_IF_ERROR(r.read_varints(tag.type, f.int32_data));
        break;
      case 6:  // string_data
        f.has_string_data = true;
        RECON_RETURN_IF_ERROR(r.skip(tag.type));
        break;
      case 7:  // int64_data
        RECON_RETURN_IF_ERROR(r.read_int64s(tag.type, f.int64_data));
        break;
      case 8: {  // name
        RECON_ASSIGN_OR_RETURN(f.tensor.name, string_field(r, tag));
        break;
      }
      case 9: {  // raw_data
        RECON_RETURN_IF_ERROR(r.expect(tag, WireType::kLengthDelimited));
        RECON_ASSIGN_OR_RETURN(f.raw_data, r.read_length_delimited());
        break;
      }
      case 10:  // double_data
        RECON_RETURN_IF_ERROR(r.read_doubles(tag.type, f.double_data));
        break;
      case 11:  // uint64_data
        RECON_RETURN_IF_ERROR(r.read_varints(tag.type, f.uint64_data));
        break;
      case 13: {  // external_data
        RECON_ASSIGN_OR_RETURN(auto entry_reader, message_field(r, tag));
        RECON_ASSIGN_OR_RETURN(auto entry, parse_string_entry(entry_reader));
        f.external_data.push_back(std::move(entry));
        break;
      }
      case 14: {  // data_location
        RECON_ASSIGN_OR_RETURN(f.data_location, varint_field(r, tag));
        break;
      }
      default:
        RECON_RETURN_IF_ERROR(r.skip(tag.type));
    }
  }
  return Status::ok();
}

// The one typed repeated field a data type may use (TensorProto's comments in onnx.proto).
const char* typed_field_for(ElemType type) {
  switch (type) {
    case ElemType::kFloat:
      return "float_data";
    case ElemType::kInt64:
      return "int64_data";
    case ElemType::kUint32:
    case ElemType::kUint64:
      return "uint64_data";
    case ElemType::kDouble:
      return "double_data";
    default:
      return "int32_data";
  }
}

size_t typed_count(const TensorFields& f, ElemType type) {
  switch (type) {
    case ElemType::kFloat:
      return f.float_data.size();
    case ElemType::kInt64:
      return f.int64_data.size();
    case ElemType::kUint32:
    case ElemType::kUint64:
      return f.uint64_data.size();
    case ElemType::kDouble:
      return f.double_data.size();
    default:
      return f.int32_data.size();
  }
}

// The typed repeated field for `type` as dense little-endian bytes. The count is checked before
// allocating, so dims cannot ask for more memory than the file's values fill.
Result<std::vector<uint8_t>> typed_bytes(const TensorFields& f, ElemType type, int64_t numel) {
  const size_t count = typed_count(f, type);
  if (count != static_cast<uint64_t>(numel)) {
    return invalid_argument(std::string(typed_field_for(type)) + " holds " + std::to_string(count) +
                            " values but dims " + dims_string(f.tensor.dims) + " need " + std::to_string(numel));
  }
  std::vector<uint8_t> out(count * elem_type_size(type));
  auto store = [&out](size_t index, auto value) {
    std::memcpy(out.data() + index * sizeof(value), &value, sizeof(value));
  };
  for (size_t i = 0; i < count; ++i) {
    switch (type) {
      case ElemType::kFloat:
        store(i, f.float_data[i]);
        break;
      case ElemType::kInt64:
        store(i, f.int64_data[i]);
        break;
      case ElemType::kUint64:
        store(i, f.uint64_data[i]);
        break;
      case ElemType::kUint32:
        store(i, static_cast<uint32_t>(f.uint64_data[i]));
        break;
      case ElemType::kDouble:
        store(i, f.double_data[i]);
        break;
      case ElemType::kInt32:
        store(i, static_cast<uint32_t>(f.int32_data[i]));
        break;
      case ElemType::kUint16:
      case ElemType::kInt16:
      case ElemType::kFloat16:
      case ElemType::kBfloat16:
        // float16 and bfloat16 keep their 16-bit pattern in the low bits.
        store(i, static_cast<uint16_t>(f.int32_data[i]));
        break;
      case ElemType::kUint8:
      case ElemType::kInt8:
        store(i, static_cast<uint8_t>(f.int32_data[i]));
        break;
      case ElemType::kBool:
        store(i, static_cast<uint8_t>(f.int32_data[i] != 0));
        break;
      case ElemType::kUndefined:
      case ElemType::kString:
        return unimplemented(std::string("no typed field for ") + elem_type_name(type));
    }
  }
  return out;
}

// Bytes that live outside the message: in a mapped file, or in a copy the tensor owns.
struct DataRef {
  std::span<const uint8_t> bytes;
  std::shared_ptr<const void> owner;
};

Result<DataRef> external_bytes(const TensorFields& f, ParseContext& ctx) {
  std::string location;
  std::optional<uint64_t> offset;
  std::optional<uint64_t> length;
  for (const auto& [key, value] : f.external_data) {
    if (key == "location") {
      location = value;
    } else if (key == "offset" || key == "length") {
      const auto parsed = parse_decimal(value);
      if (!parsed) return invalid_argument("external data " + key + " " + quoted(value) + " is not a number");
      (key == "offset" ? offset : length) = *parsed;
    }
    // Other keys (checksum, basepath) do not change which bytes are read.
  }
  RECON_RETURN_IF_ERROR(check_location(location));
  if (ctx.base_dir.empty()) {
    return invalid_argument("external data " + quoted(location) + " needs the model file's directory");
  }
  auto& file = ctx.external_files[location];
  const std::string path = ctx.base_dir + "/" + location;
  if (!file) {
    auto mapped = MappedFile::open(path);
    if (!mapped) {
      ctx.external_files.erase(location);
      return mapped.status().with_context("external data");
    }
    file = std::make_shared<const MappedFile>(std::move(mapped).value());
  }
  const auto all = file->bytes();
  const uint64_t begin = offset.value_or(0);
  if (begin > all.size()) {
    return data_loss("external data offset " + std::to_string(begin) + " is past the end of " + path + " (" +
                     std::to_string(all.size()) + " bytes)");
  }
  const uint64_t count = length.value_or(all.size() - begin);
  if (count > all.size() - begin) {
    return data_loss("external data [" + std::to_string(begin) + ", +" + std::to_string(count) +
                     ") runs past the end of " + path + " (" + std::to_string(all.size()) + " bytes)");
  }
  return DataRef{
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(all.data()) + begin, static_cast<size_t>(count)), file};
}

// Decides where the tensor's bytes come from (raw_data, external file or a typed field) and
// checks they are exactly numel × element size.
Result<HostTensor> finish_tensor(TensorFields& f, ParseContext& ctx) {
  HostTensor& tensor = f.tensor;
  if (f.data_type == 8 || f.has_string_data) return unimplemented("string tensors are not supported");
  RECON_ASSIGN_OR_RETURN(tensor.type, tensor_elem_type(f.data_type));
  int64_t numel = 1;
  for (const int64_t dim : tensor.dims) {
    if (dim < 0) return invalid_argument("dims " + dims_string(tensor.dims) + " include a negative dimension");
    if (!multiply(numel, dim, &numel)) {
      return invalid_argument("dims " + dims_string(tensor.dims) + " overflow the element count");
    }
  }
  int64_t nbytes = 0;
  if (!multiply(numel, static_cast<int64_t>(elem_type_size(tensor.type)), &nbytes)) {
    return invalid_argument("dims " + dims_string(tensor.dims) + " overflow the byte count");
  }

  const bool external = f.data_location == 1;
  if (f.data_location > 1) return invalid_argument("unknown data_location " + std::to_string(f.data_location));
  std::vector<const char*> typed_fields;
  if (!f.float_data.empty()) typed_fields.push_back("float_data");
  if (!f.int32_data.empty()) typed_fields.push_back("int32_data");
  if (!f.int64_data.empty()) typed_fields.push_back("int64_data");
  if (!f.double_data.empty()) typed_fields.push_back("double_data");
  if (!f.uint64_data.empty()) typed_fields.push_back("uint64_data");
  const size_t sources = (f.raw_data ? 1 : 0) + (external ? 1 : 0) + (typed_fields.empty() ? 0 : 1);
  if (sources > 1 || typed_fields.size() > 1) {
    return invalid_argument("holds its data in more than one place (raw_data, external data, typed fields)");
  }
  const std::string need = "dims " + dims_string(tensor.dims) + " of " + elem_type_name(tensor.type) + " need " +
                           std::to_string(nbytes) + " bytes";

  if (f.raw_data || external) {
    DataRef data{f.raw_data.value_or(std::span<const uint8_t>()), ctx.owner};
    if (external) {
      RECON_ASSIGN_OR_RETURN(data, external_bytes(f, ctx));
    }
    if (data.bytes.size() != static_cast<uint64_t>(nbytes)) {
      return invalid_argument(std::string(external ? "external data" : "raw_data") + " holds " +
                              std::to_string(data.bytes.size()) + " bytes but " + need);
    }
    set_bytes(tensor, data.bytes, std::move(data.owner));
    return std::move(tensor);
  }
  if (typed_fields.empty()) {
    if (nbytes != 0) return invalid_argument("has no data but " + need);
    tensor.bytes = {};
    return std::move(tensor);
  }
  const char* expected_field = typed_field_for(tensor.type);
  if (std::strcmp(typed_fields.front(), expected_field) != 0) {
    return invalid_argument(std::string("holds ") + typed_fields.front() + ", but " + elem_type_name(tensor.type) +
                            " tensors use " + expected_field);
  }
  RECON_ASSIGN_OR_RETURN(auto bytes, typed_bytes(f, tensor.type, numel));
  HostTensor owned = HostTensor::owned(tensor.type, std::move(tensor.dims), std::move(bytes), std::move(tensor.name));
  return owned;
}

std::string describe_tensor(const std::string& name) {
  return name.empty() ? std::string("tensor") : "tensor " + quoted(name);
}

Result<HostTensor> parse_tensor_message(WireReader r, ParseContext& ctx) {
  const WireReader start = r;
  TensorFields fields;
  Status status = read_tensor_fields(r, fields);
  if (!status.is_ok()) return status.with_context(describe_tensor(peek_string(start, 8)));
  auto tensor = finish_tensor(fields, ctx);
  if (!tensor) return tensor.status().with_context(describe_tensor(fields.tensor.name));
  return tensor;
}

// TypeProto → TypeProto.Tensor → TensorShapeProto. Non-tensor types (sequence, map, optional)
// leave the ValueInfo's type undefined.
Status parse_dimension(WireReader r, ValueInfo& info) {
  int64_t value = -1;
  std::string param;
  while (!r.at_end()) {
    RECON_ASSIGN_OR_RETURN(const WireTag tag, r.read_tag());
    if (tag.field == 1) {
      RECON_ASSIGN_OR_RETURN(const uint64_t raw, varint_field(r, tag));
      value = static_cast<int64_t>(raw);
      if (value < 0) return invalid_argument("dimension " + std::to_string(info.dims.size()) + " is negative");
    } else if (tag.field == 2) {
      RECON_ASSIGN_OR_RETURN(param, string_field(r, tag));
      value = -1;
    } else {
      RECON_RETURN_IF_ERROR(r.skip(tag.type));
    }
  }
  info.dims.push_back(value);
  info.dim_params.push_back(std::move(param));
  return Status::ok();
}

Status parse_tensor_type(WireReader r, ValueInfo& info) {
  while (!r.at_end()) {
    RECON_ASSIGN_OR_RETURN(const WireTag tag, r.read_tag());
    if (tag.field == 1) {
      RECON_ASSIGN_OR_RETURN(const uint64_t raw, varint_field(r, tag));
      RECON_ASSIGN_OR_RETURN(info.type, value_elem_type(raw));
    } else if (tag.field == 2) {
      RECON_ASSIGN_OR_RETURN(auto shape, message_field(r, tag));
      info.has_shape = true;
      while (!shape.at_end()) {
        RECON_ASSIGN_OR_RETURN(const WireTag dim_tag, shape.read_tag());
        if (dim_tag.field == 1) {
          RECON_ASSIGN_OR_RETURN(auto dim, message_field(shape, dim_tag));
          RECON_RETURN_IF_ERROR(parse_dimension(dim, info));
        } else {
          RECON_RETURN_IF_ERROR(shape.skip(dim_tag.type));
        }
      }
    } else {
      RECON_RETURN_IF_ERROR(r.skip(tag.type));
    }
  }
  return Status::ok();
}

Result<ValueInfo> parse_value_info_fields(WireReader r) {
  ValueInfo info;
  while (!r.at_end()) {
    RECON_ASSIGN_OR_RETURN(const WireTag tag, r.read_tag());
    if (tag.field == 1) {
      RECON_ASSIGN_OR_RETURN(info.name, string_field(r, tag));
    } else if (tag.field == 2) {
      RECON_ASSIGN_OR_RETURN(auto type, message_field(r, tag));
      while (!type.at_end()) {
        RECON_ASSIGN_OR_RETURN(const WireTag type_tag, type.read_tag());
        if (type_tag.field == 1) {
          RECON_ASSIGN_OR_RETURN(auto tensor_type, message_field(type, type_tag));
          RECON_RETURN_IF_ERROR(parse_tensor_type(tensor_type, info));
        } else {
          RECON_RETURN_IF_ERROR(type.skip(type_tag.type));
        }
      }
    } else {
      RECON_RETURN_IF_ERROR(r.skip(tag.type));
    }
  }
  return info;
}

Result<ValueInfo> parse_value_info(WireReader r, const char* role, size_t index) {
  auto info = parse_value_info_fields(r);
  if (!info) {
    const std::string name = peek_string(r, 1);
    return info.status().with_context(std::string(role) + " " + std::to_string(index) +
                                      (name.empty() ? "" : " " + quoted(name)));
  }
  return info;
}

const char* attribute_kind_name(uint64_t kind) {
  static constexpr const char* kNames[] = {
      "UNDEFINED", "FLOAT",   "INT",    "STRING",        "TENSOR",         "GRAPH",      "FLOATS",     "INTS",
      "STRINGS",   "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
  return kind < std::size(kNames) ? kNames[kind] : "UNKNOWN";
}

Result<Attribute> parse_attribute_fields(WireReader& r, ParseContext& ctx) {
  Attribute attr;
  std::optional<uint64_t> declared_kind;
  // Which value fields appeared, for files old enough to omit `type`.
  bool seen[24] = {};
  while (!r.at_end()) {
    RECON_ASSIGN_OR_RETURN(const WireTag tag, r.read_tag());
    if (tag.field < std::size(seen)) seen[tag.field] = true;
    switch (tag.field) {
      case 1: {
        RECON_ASSIGN_OR_RETURN(attr.name, string_field(r, tag));
        break;
      }
      case 2: {
        RECON_RETURN_IF_ERROR(r.expect(tag, WireType::kFixed32));
        RECON_ASSIGN_OR_RETURN(const uint32_t bits, r.read_fixed32());
        attr.f = std::bit_cast<float>(bits);
        break;
      }
      case 3: {
        RECON_ASSIGN_OR_RETURN(const uint64_t raw, varint_field(r, tag));
        attr.i = static_cast<int64_t>(raw);
        break;
      }
      case 4: {
        RECON_ASSIGN_OR_RETURN(attr.s, string_field(r, tag));
        break;
      }
      case 5: {
        RECON_ASSIGN_OR_RETURN(auto tensor, message_field(r, tag));
        RECON_ASSIGN_OR_RETURN(attr.t, parse_tensor_message(tensor, ctx));
        break;
      }
      case 7:
        RECON_RETURN_IF_ERROR(r.read_floats(tag.type, attr.floats));
        break;
      case 8:
        RECON_RETURN_IF_ERROR(r.read_int64s(tag.type, attr.ints));
        break;
      case 9: {
        RECON_ASSIGN_OR_RETURN(auto s, string_field(r, tag));
        attr.strings.push_back(std::move(s));
        break;
      }
      case 6:   // g: subgraphs are not compiled; only the kind is kept.
      case 10:  // tensors
      case 11:  // graphs
        RECON_RETURN_IF_ERROR(r.expect(tag, WireType::kLengthDelimited));
        RECON_RETURN_IF_ERROR(r.skip(tag.type));
        break;
      case 20: {
        RECON_ASSIGN_OR_RETURN(declared_kind, varint_field(r, tag));
        break;
      }
      default:
        RECON_RETURN_IF_ERROR(r.skip(tag.type));
    }
  }
  if (attr.name.empty()) return invalid_argument("attribute has no name");

  uint64_t kind = 0;
  if (declared_kind) {
    kind = *declared_kind;
  } else {
    // Field number → AttributeType, in the order a writer without `type` would have meant it.
    static constexpr std::pair<uint32_t, uint64_t> kInferred[] = {{2, 1},   {3, 2},   {4, 3},   {5, 4},  {6, 5},
                                                                  {7, 6},   {8, 7},   {9, 8},   {10, 9}, {11, 10},
                                                                  {22, 11}, {23, 12}, {14, 13}, {15, 14}};
    for (const auto& [field, inferred] : kInferred) {
      if (seen[field]) {
        kind = inferred;
        break;
      }
    }
  }
  if (kind >= 11 && kind <= 14) {
    return unimplemented(std::string(attribute_kind_name(kind)) + " attributes are not supported");
  }
  if (kind > 14) return invalid_argument("unknown attribute type " + std::to_string(kind));
  attr.kind = static_cast<Attribute::Kind>(kind);
  return attr;
}

Result<Attribute> parse_attribute(WireReader r, ParseContext& ctx, size_t index) {
  const WireReader start = r;
  auto attr = parse_attribute_fields(r, ctx);
  if (!attr) {
    const std::string name = peek_string(start, 1);
    return attr.status().with_context("attribute " + (name.empty() ? std::to_string(index) : quoted(name)));
  }
  return attr;
}

Result<Node> parse_node_fields(WireReader& r, ParseContext& ctx) {
  Node node;
  while (!r.at_end()) {
    RECON_ASSIGN_OR_RETURN(const WireTag tag, r.read_tag());
    switch (tag.field) {
      case 1: {
        RECON_ASSIGN_OR_RETURN(auto input, string_field(r, tag));
        node.inputs.push_back(std::move(input));
        break;
      }
      case 2: {
        RECON_ASSIGN_OR_RETURN(auto output, string_field(r, tag));
        node.outputs.push_back(std::move(output));
        break;
      }
      case 3: {
        RECON_ASSIGN_OR_RETURN(node.name, string_field(r, tag));
        break;
      }
      case 4: {
        RECON_ASSIGN_OR_RETURN(node.op_type, string_field(r, tag));
        break;
      }
      case 5: {
        RECON_ASSIGN_OR_RETURN(auto attr_reader, message_field(r, tag));
        RECON_ASSIGN_OR_RETURN(auto attr, parse_attribute(attr_reader, ctx, node.attributes.size()));
        if (node.attribute(attr.name) != nullptr) {
          return invalid_argument("attribute " + quoted(attr.name) + " appears twice");
        }
        node.attributes.push_back(std::move(attr));
        break;
      }
      case 7: {
        RECON_ASSIGN_OR_RETURN(node.domain, string_field(r, tag));
        break;
      }
      default:
        RECON_RETURN_IF_ERROR(r.skip(tag.type));
    }
  }
  if (node.op_type.empty()) return invalid_argument("node has no op_type");
  return node;
}

Result<Node> parse_node(WireReader r, ParseContext& ctx, size_t index) {
  const WireReader start = r;
  auto node = parse_node_fields(r, ctx);
  if (!node) {
    // "node 12 (Conv 'conv1')", from whatever of the node could be read.
    const std::string op_type = peek_string(start, 4);
    const std::string name = peek_string(start, 3);
    std::string what = "node " + std::to_string(index);
    if (!op_type.empty() || !name.empty()) {
      what += " (" + op_type + (op_type.empty() || name.empty() ? "" : " ") + (name.empty() ? "" : quoted(name)) + ")";
    }
    return node.status().with_context(what);
  }
  return node;
}

Result<ModelGraph> parse_graph(WireReader r, ParseContext& ctx) {
  ModelGraph graph;
  while (!r.at_end()) {
    const size_t field_offset = r.offset();
    RECON_ASSIGN_OR_RETURN(const WireTag tag, r.read_tag());
    switch (tag.field) {
      case 1: {
        RECON_ASSIGN_OR_RETURN(auto node_reader, message_field(r, tag));
        RECON_ASSIGN_OR_RETURN(auto node, parse_node(node_reader, ctx, graph.nodes.size()));
        graph.nodes.push_back(std::move(node));
        break;
      }
      case 2: {
        RECON_ASSIGN_OR_RETURN(graph.name, string_field(r, tag));
        break;
      }
      case 5: {
        const std::string what = "initializer " + std::to_string(graph.initializers.size());
        auto tensor_reader = message_field(r, tag);
        if (!tensor_reader) return tensor_reader.status().with_context(what);
        auto tensor = parse_tensor_message(*tensor_reader, ctx);
        if (!tensor) return tensor.status().with_context(what);
        if (tensor->name.empty()) return invalid_argument(what + ": has no name");
        graph.initializers.push_back(std::move(tensor).value());
        break;
      }
      case 11:
      case 12:
      case 13: {
        auto& list = tag.field == 11 ? graph.inputs : tag.field == 12 ? graph.outputs : graph.value_info;
        const char* role = tag.field == 11 ? "input" : tag.field == 12 ? "output" : "value_info";
        RECON_ASSIGN_OR_RETURN(auto info_reader, message_field(r, tag));
        RECON_ASSIGN_OR_RETURN(auto info, parse_value_info(info_reader, role, list.size()));
        list.push_back(std::move(info));
        break;
      }
      case 15:
        return unimplemented("sparse initializers are not supported (field at byte " + std::to_string(field_offset) +
                             ")");
      default:
        RECON_RETURN_IF_ERROR(r.skip(tag.type));
    }
  }
  return graph;
}

Result<Model> parse_model(WireReader r, ParseContext& ctx) {
  Model model;
  bool has_graph = false;
  bool has_opset = false;
  while (!r.at_end()) {
    const size_t field_offset = r.offset();
    RECON_ASSIGN_OR_RETURN(const WireTag tag, r.read_tag());
    switch (tag.field) {
      case 1: {
        RECON_ASSIGN_OR_RETURN(const uint64_t raw, varint_field(r, tag));
        model.ir_version = static_cast<int64_t>(raw);
        break;
      }
      case 2: {
        RECON_ASSIGN_OR_RETURN(model.producer_name, string_field(r, tag));
        break;
      }
      case 7: {
        if (has_graph) return r.error_at(field_offset, "second graph");
        RECON_ASSIGN_OR_RETURN(auto graph_reader, message_field(r, tag));
        RECON_ASSIGN_OR_RETURN(model.graph, parse_graph(graph_reader, ctx));
        has_graph = true;
        break;
      }
      case 8: {
        RECON_ASSIGN_OR_RETURN(auto opset, message_field(r, tag));
        std::string domain;
        int64_t version = 0;
        while (!opset.at_end()) {
          RECON_ASSIGN_OR_RETURN(const WireTag opset_tag, opset.read_tag());
          if (opset_tag.field == 1) {
            RECON_ASSIGN_OR_RETURN(domain, string_field(opset, opset_tag));
          } else if (opset_tag.field == 2) {
            RECON_ASSIGN_OR_RETURN(const uint64_t raw, varint_field(opset, opset_tag));
            version = static_cast<int64_t>(raw);
          } else {
            RECON_RETURN_IF_ERROR(opset.skip(opset_tag.type));
          }
        }
        if (domain == "ai.onnx") domain.clear();
        if (version <= 0) {
          return invalid_argument("opset import for domain " + quoted(domain) + " has version " +
                                  std::to_string(version));
        }
        if (!model.opsets.emplace(domain, version).second) {
          return invalid_argument("domain " + quoted(domain) + " is imported twice");
        }
        has_opset = true;
        break;
      }
      default:
        RECON_RETURN_IF_ERROR(r.skip(tag.type));
    }
  }
  if (!has_graph) return invalid_argument("model has no graph");
  if (!has_opset) return invalid_argument("model imports no opset");
  return model;
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Maps `path`; the mapping is shared by every tensor that points into it.
Result<std::pair<std::span<const uint8_t>, std::shared_ptr<const void>>> map_file(const std::string& path) {
  RECON_ASSIGN_OR_RETURN(auto mapped, MappedFile::open(path));
  auto file = std::make_shared<const MappedFile>(std::move(mapped));
  const auto bytes = file->bytes();
  return std::pair{std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                   std::shared_ptr<const void>(std::move(file))};
}

}  // namespace

Result<Model> parse_onnx_model(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner,
                               const std::string& base_dir) {
  ParseContext ctx{std::move(owner), base_dir, {}};
  return parse_model(WireReader(bytes), ctx);
}

Result<HostTensor> parse_tensor(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner,
                                const std::string& base_dir) {
  ParseContext ctx{std::move(owner), base_dir, {}};
  return parse_tensor_message(WireReader(bytes), ctx);
}

Result<Model> read_onnx_model(const std::string& path) {
  auto mapped = map_file(path);
  if (!mapped) return mapped.status();  // MappedFile's message already names the path
  auto model = parse_onnx_model(mapped->first, std::move(mapped->second), directory_of(path));
  if (!model) return model.status().with_context(path);
  return model;
}

Result<HostTensor> read_tensor_file(const std::string& path) {
  auto mapped = map_file(path);
  if (!mapped) return mapped.status();
  auto tensor = parse_tensor(mapped->first, std::move(mapped->second), directory_of(path));
  if (!tensor) return tensor.status().with_context(path);
  return tensor;
}

}  // namespace recon::gpu::onnx
