// SafetensorsWriter (see safetensors_writer.h).
#include "gpu/weights/safetensors_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "gpu/weights/json.h"

namespace recon::gpu {

void SafetensorsWriter::add_metadata(std::string key, std::string value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

Status SafetensorsWriter::add_tensor(std::string name, Dtype dtype, std::vector<std::int64_t> shape,
                                     std::span<const std::byte> data) {
  if (name == "__metadata__") return invalid_argument("tensor name __metadata__ is reserved");
  for (const Entry& e : entries_) {
    if (e.name == name) return invalid_argument("duplicate tensor '" + name + "'");
  }
  std::uint64_t bytes = dtype_size(dtype);
  for (const std::int64_t d : shape) {
    if (d < 0) return invalid_argument("tensor '" + name + "' has a negative dimension");
    if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes)) {
      return invalid_argument("tensor '" + name + "' shape overflows");
    }
  }
  if (bytes != data.size()) {
    return invalid_argument("tensor '" + name + "' needs " + std::to_string(bytes) + " bytes, got " +
                            std::to_string(data.size()));
  }
  entries_.push_back(Entry{std::move(name), dtype, std::move(shape), {data.begin(), data.end()}});
  return Status::ok();
}

Status SafetensorsWriter::add_f32(std::string name, std::vector<std::int64_t> shape, std::span<const float> values) {
  return add_tensor(std::move(name), Dtype::kF32, std::move(shape), std::as_bytes(values));
}

Status SafetensorsWriter::add_f16(std::string name, std::vector<std::int64_t> shape,
                                  std::span<const std::uint16_t> bits) {
  return add_tensor(std::move(name), Dtype::kF16, std::move(shape), std::as_bytes(bits));
}

std::vector<std::byte> SafetensorsWriter::serialize() const {
  JsonValue header = JsonValue::object();
  if (!metadata_.empty()) {
    JsonValue meta = JsonValue::object();
    for (const auto& [k, v] : metadata_) meta.add(k, JsonValue::string(v));
    header.add("__metadata__", std::move(meta));
  }
  std::uint64_t offset = 0;
  for (const Entry& e : entries_) {
    JsonValue info = JsonValue::object();
    info.add("dtype", JsonValue::string(dtype_name(e.dtype)));
    JsonValue shape = JsonValue::array();
    for (const std::int64_t d : e.shape) shape.push_back(JsonValue::integer(d));
    info.add("shape", std::move(shape));
    JsonValue offsets = JsonValue::array();
    offsets.push_back(JsonValue::integer(static_cast<std::int64_t>(offset)));
    offset += e.bytes.size();
    offsets.push_back(JsonValue::integer(static_cast<std::int64_t>(offset)));
    info.add("data_offsets", std::move(offsets));
    header.add(e.name, std::move(info));
  }
  std::string text = to_json_string(header);
  text.resize((text.size() + 7) / 8 * 8, ' ');

  std::vector<std::byte> out;
  out.reserve(8 + text.size() + offset);
  std::uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((len >> (8 * i)) & 0xFF));
  for (const char c : text) out.push_back(static_cast<std::byte>(c));
  for (const Entry& e : entries_) out.insert(out.end(), e.bytes.begin(), e.bytes.end());
  return out;
}

namespace {
// Closes the stream on every path; close() reports the final flush error.
class File {
 public:
  explicit File(std::FILE* f) : f_(f) {}
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() {
    if (f_ != nullptr) std::fclose(f_);
  }
  std::FILE* get() const { return f_; }
  bool close() {
    const bool ok = std::fclose(f_) == 0;
    f_ = nullptr;
    return ok;
  }

 private:
  std::FILE* f_;
};
}  // namespace

Status SafetensorsWriter::write(const std::string& path) const {
  const std::vector<std::byte> bytes = serialize();
  const std::string tmp = path + ".tmp";
  File f(std::fopen(tmp.c_str(), "wb"));
  if (f.get() == nullptr) return unavailable("cannot create " + tmp + ": " + std::strerror(errno));
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f.get()) == bytes.size();
  if (!f.close() || !wrote) {
    std::remove(tmp.c_str());
    return unavailable("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return unavailable("cannot rename " + tmp + " to " + path + ": " + std::strerror(err));
  }
  return Status::ok();
}

}  // namespace recon::gpu
