// Header validation and tensor access for SafetensorsFile (see safetensors.h).
#include "gpu/weights/safetensors.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "gpu/weights/half_float.h"
#include "gpu/weights/json.h"

namespace recon::gpu {

std::uint64_t TensorInfo::numel() const {
  std::uint64_t n = 1;
  for (const std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

std::string shape_to_string(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

namespace {

std::string quoted(std::string_view name) {
  return "'" + std::string(name) + "'";
}

// Reads a JSON array of non-negative integers; false on any other shape of value.
bool read_uint_array(const JsonValue& v, std::vector<std::int64_t>& out) {
  if (!v.is_array()) return false;
  out.clear();
  out.reserve(v.items().size());
  for (const JsonValue& item : v.items()) {
    const auto i = item.as_int64();
    if (!i || *i < 0) return false;
    out.push_back(*i);
  }
  return true;
}

Status parse_metadata(const JsonValue& v, std::vector<std::pair<std::string, std::string>>& out) {
  if (!v.is_object()) {
    return data_loss(std::string("__metadata__ must be an object, got ") + JsonValue::type_name(v.type()));
  }
  for (const JsonMember& m : v.members()) {
    if (!m.value.is_string()) {
      return data_loss("__metadata__ entry " + quoted(m.key) + " must be a string, got " +
                       JsonValue::type_name(m.value.type()));
    }
    out.emplace_back(m.key, m.value.as_string());
  }
  return Status::ok();
}

// Fills `t` from one header entry and checks it against itself and the data section size.
Status parse_tensor(const std::string& name, const JsonValue& v, std::uint64_t data_size, TensorInfo& t) {
  const std::string who = "tensor " + quoted(name);
  if (!v.is_object()) return data_loss(who + ": entry must be an object");
  const JsonValue* dtype = nullptr;
  const JsonValue* shape = nullptr;
  const JsonValue* offsets = nullptr;
  for (const JsonMember& m : v.members()) {
    if (m.key == "dtype") {
      dtype = &m.value;
    } else if (m.key == "shape") {
      shape = &m.value;
    } else if (m.key == "data_offsets") {
      offsets = &m.value;
    } else {
      return data_loss(who + ": unexpected field " + quoted(m.key));
    }
  }
  if (dtype == nullptr || shape == nullptr || offsets == nullptr) {
    return data_loss(who + ": needs dtype, shape and data_offsets");
  }
  if (!dtype->is_string()) return data_loss(who + ": dtype must be a string");
  const auto parsed = parse_dtype(dtype->as_string());
  if (!parsed) return invalid_argument(who + ": unsupported dtype " + quoted(dtype->as_string()));
  t.name = name;
  t.dtype = *parsed;
  if (!read_uint_array(*shape, t.shape)) return data_loss(who + ": shape must be an array of non-negative integers");
  std::vector<std::int64_t> range;
  if (!read_uint_array(*offsets, range) || range.size() != 2) {
    return data_loss(who + ": data_offsets must be two non-negative integers");
  }
  t.begin = static_cast<std::uint64_t>(range[0]);
  t.end = static_cast<std::uint64_t>(range[1]);
  const std::string span_text = "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
  if (t.begin > t.end) return data_loss(who + ": " + span_text + " begin after end");
  if (t.end > data_size) {
    return data_loss(who + ": " + span_text + " run past the " + std::to_string(data_size) +
                     "-byte data section (truncated file?)");
  }
  std::uint64_t bytes = dtype_size(t.dtype);
  for (const std::int64_t d : t.shape) {
    if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes)) {
      return data_loss(who + ": shape " + shape_to_string(t.shape) + " overflows 64 bits");
    }
  }
  if (t.end - t.begin != bytes) {
    return data_loss(who + ": " + span_text + " hold " + std::to_string(t.end - t.begin) + " bytes but " +
                     dtype_name(t.dtype) + " " + shape_to_string(t.shape) + " needs " + std::to_string(bytes));
  }
  return Status::ok();
}

// Two non-empty tensors may not share a byte. Gaps are allowed (stricter writers have none).
Status check_overlaps(const std::vector<TensorInfo>& tensors) {
  std::vector<std::size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return tensors[a].begin != tensors[b].begin ? tensors[a].begin < tensors[b].begin : a < b;
  });
  const TensorInfo* prev = nullptr;
  for (const std::size_t i : order) {
    const TensorInfo& t = tensors[i];
    if (t.byte_size() == 0) continue;
    if (prev != nullptr && t.begin < prev->end) {
      return data_loss("tensors " + quoted(prev->name) + " [" + std::to_string(prev->begin) + ", " +
                       std::to_string(prev->end) + ") and " + quoted(t.name) + " [" + std::to_string(t.begin) + ", " +
                       std::to_string(t.end) + ") overlap");
    }
    prev = &t;
  }
  return Status::ok();
}

}  // namespace

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  RECON_ASSIGN_OR_RETURN(MappedFile mapping, MappedFile::open(path));
  SafetensorsFile file;
  file.mapping_ = std::move(mapping);
  file.file_ = file.mapping_.bytes();
  Result<SafetensorsFile> r = validate(std::move(file));
  if (!r.is_ok()) return r.status().with_context(path);
  return r;
}

Result<SafetensorsFile> SafetensorsFile::from_bytes(std::vector<std::byte> bytes) {
  SafetensorsFile file;
  file.owned_bytes_ = std::move(bytes);
  file.file_ = file.owned_bytes_;
  return validate(std::move(file));
}

Result<SafetensorsFile> SafetensorsFile::validate(SafetensorsFile file) {
  const std::span<const std::byte> bytes = file.file_;
  if (bytes.size() < 8) {
    return data_loss("file is " + std::to_string(bytes.size()) + " bytes, too short for the 8-byte header length");
  }
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | std::to_integer<std::uint64_t>(bytes[i]);
  const std::uint64_t available = bytes.size() - 8;
  if (header_len > available) {
    return data_loss("header length " + std::to_string(header_len) + " exceeds the " + std::to_string(available) +
                     " bytes after it (truncated or not a safetensors file)");
  }
  if (header_len > kMaxHeaderBytes) {
    return invalid_argument("header length " + std::to_string(header_len) + " exceeds the limit of " +
                            std::to_string(kMaxHeaderBytes) + " bytes");
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes.data() + 8), header_len);
  file.data_ = bytes.subspan(8 + header_len);

  JsonLimits limits;
  limits.max_input_bytes = kMaxHeaderBytes;
  limits.max_values = kMaxHeaderValues;
  Result<JsonValue> root = parse_json(header, limits);
  if (!root.is_ok()) {
    return data_loss("header (file bytes 8.." + std::to_string(8 + header_len) +
                     ") is not valid JSON: " + root.status().message());
  }
  if (!root->is_object()) return data_loss("header must be a JSON object");

  for (const JsonMember& m : root->members()) {
    if (m.key == "__metadata__") {
      RECON_RETURN_IF_ERROR(parse_metadata(m.value, file.metadata_));
      continue;
    }
    TensorInfo t;
    RECON_RETURN_IF_ERROR(parse_tensor(m.key, m.value, file.data_.size(), t));
    file.index_.emplace(t.name, file.tensors_.size());
    file.tensors_.push_back(std::move(t));
  }
  RECON_RETURN_IF_ERROR(check_overlaps(file.tensors_));
  return file;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::optional<std::string_view> SafetensorsFile::metadata(std::string_view key) const {
  for (const auto& [k, v] : metadata_) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}

std::span<const std::byte> SafetensorsFile::data(const TensorInfo& tensor) const {
  return data_.subspan(tensor.begin, tensor.byte_size());
}

Result<std::span<const std::byte>> SafetensorsFile::bytes(std::string_view name) const {
  const TensorInfo* t = find(name);
  if (t == nullptr) return not_found("no tensor " + quoted(name));
  return data(*t);
}

Result<const TensorInfo*> SafetensorsFile::convertible(std::string_view name) const {
  const TensorInfo* t = find(name);
  if (t == nullptr) return not_found("no tensor " + quoted(name));
  if (!is_float_convertible(t->dtype)) {
    return invalid_argument("tensor " + quoted(name) + " has dtype " + dtype_name(t->dtype) +
                            "; only F32, F16 and BF16 convert to float");
  }
  return t;
}

Status SafetensorsFile::copy_as_f32(std::string_view name, float* dst) const {
  RECON_ASSIGN_OR_RETURN(const TensorInfo* t, convertible(name));
  const std::span<const std::byte> src = data(*t);
  const std::size_t n = t->numel();
  switch (t->dtype) {
    case Dtype::kF32:
      if (n != 0) std::memcpy(dst, src.data(), src.size());
      break;
    case Dtype::kF16:
      f16_bytes_to_f32(src.data(), n, dst);
      break;
    case Dtype::kBF16:
      bf16_bytes_to_f32(src.data(), n, dst);
      break;
    default:
      break;  // excluded by convertible()
  }
  return Status::ok();
}

Status SafetensorsFile::copy_as_f16(std::string_view name, std::uint16_t* dst) const {
  RECON_ASSIGN_OR_RETURN(const TensorInfo* t, convertible(name));
  const std::span<const std::byte> src = data(*t);
  const std::size_t n = t->numel();
  switch (t->dtype) {
    case Dtype::kF32:
      f32_bytes_to_f16(src.data(), n, dst);
      break;
    case Dtype::kF16:
      if (n != 0) std::memcpy(dst, src.data(), src.size());
      break;
    case Dtype::kBF16:
      bf16_bytes_to_f16(src.data(), n, dst);
      break;
    default:
      break;
  }
  return Status::ok();
}

namespace {
template <typename T>
Status check_dst_size(const TensorInfo* t, std::span<T> dst) {
  if (dst.size() != t->numel()) {
    return invalid_argument("tensor " + quoted(t->name) + " has " + std::to_string(t->numel()) +
                            " elements but the destination holds " + std::to_string(dst.size()));
  }
  return Status::ok();
}
}  // namespace

Status SafetensorsFile::copy_as_f32(std::string_view name, std::span<float> dst) const {
  RECON_ASSIGN_OR_RETURN(const TensorInfo* t, convertible(name));
  RECON_RETURN_IF_ERROR(check_dst_size(t, dst));
  return copy_as_f32(name, dst.data());
}

Status SafetensorsFile::copy_as_f16(std::string_view name, std::span<std::uint16_t> dst) const {
  RECON_ASSIGN_OR_RETURN(const TensorInfo* t, convertible(name));
  RECON_RETURN_IF_ERROR(check_dst_size(t, dst));
  return copy_as_f16(name, dst.data());
}

Result<std::vector<float>> SafetensorsFile::read_f32(std::string_view name) const {
  RECON_ASSIGN_OR_RETURN(const TensorInfo* t, convertible(name));
  std::vector<float> out(t->numel());
  RECON_RETURN_IF_ERROR(copy_as_f32(name, out.data()));
  return out;
}

}  // namespace recon::gpu
