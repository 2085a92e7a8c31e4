#include "tools/io/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace recon::io {
namespace {

constexpr size_t kMaxHeader = 1 << 16;

// The value of 'key': ... in the header dict, up to the next top-level comma or brace.
Result<std::string> header_value(const std::string& header, const std::string& key) {
  const size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return invalid_argument("npy header lacks '" + key + "'");
  size_t i = header.find(':', at);
  if (i == std::string::npos) return invalid_argument("npy header: no value for '" + key + "'");
  ++i;
  while (i < header.size() && header[i] == ' ') ++i;
  size_t end = i;
  if (end < header.size() && header[end] == '(') {
    end = header.find(')', end);
    if (end == std::string::npos) return invalid_argument("npy header: unterminated shape");
    return header.substr(i + 1, end - i - 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  std::string v = header.substr(i, end - i);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"')) v = v.substr(1, v.size() - 2);
  return v;
}

}  // namespace

size_t npy_item_size(const std::string& descr) {
  static const struct {
    const char* descr;
    size_t size;
  } kKnown[] = {{"<f4", 4}, {"<f2", 2}, {"<f8", 8}, {"<i8", 8}, {"<i4", 4}, {"<i2", 2},
                {"|i1", 1}, {"|u1", 1}, {"<u2", 2}, {"<u4", 4}, {"<u8", 8}, {"|b1", 1}};
  for (const auto& k : kKnown) {
    if (descr == k.descr) return k.size;
  }
  return 0;
}

std::string npy_file_name(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    const bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return s + ".npy";
}

Result<NpyArray> parse_npy(std::span<const uint8_t> bytes) {
  static const uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) return invalid_argument("not an .npy file");
  const uint8_t major = bytes[6];
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = bytes[8] | (size_t{bytes[9]} << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return invalid_argument("truncated .npy header");
    header_len = bytes[8] | (size_t{bytes[9]} << 8) | (size_t{bytes[10]} << 16) | (size_t{bytes[11]} << 24);
    offset = 12;
  } else {
    return invalid_argument(".npy format version " + std::to_string(major) + " is not supported");
  }
  if (header_len > kMaxHeader || offset + header_len > bytes.size()) return invalid_argument("truncated .npy header");
  const std::string header(reinterpret_cast<const char*>(bytes.data() + offset), header_len);
  NpyArray out;
  RECON_ASSIGN_OR_RETURN(out.descr, header_value(header, "descr"));
  if (npy_item_size(out.descr) == 0) return invalid_argument(".npy dtype '" + out.descr + "' is not supported");
  RECON_ASSIGN_OR_RETURN(std::string order, header_value(header, "fortran_order"));
  if (order != "False") return invalid_argument("Fortran-ordered .npy arrays are not supported");
  RECON_ASSIGN_OR_RETURN(std::string shape, header_value(header, "shape"));
  uint64_t numel = 1;
  size_t i = 0;
  while (i < shape.size()) {
    while (i < shape.size() && (shape[i] == ' ' || shape[i] == ',')) ++i;
    if (i >= shape.size()) break;
    size_t end = i;
    while (end < shape.size() && shape[end] >= '0' && shape[end] <= '9') ++end;
    if (end == i || end - i > 12) return invalid_argument(".npy shape '" + shape + "' is malformed");
    const int64_t d = std::stoll(shape.substr(i, end - i));
    out.shape.push_back(d);
    numel *= static_cast<uint64_t>(d);
    if (numel > (uint64_t{1} << 40)) return invalid_argument(".npy shape '" + shape + "' is too large");
    i = end;
  }
  const uint64_t want = numel * npy_item_size(out.descr);
  const size_t data_at = offset + header_len;
  if (bytes.size() - data_at != want) {
    return invalid_argument(".npy data is " + std::to_string(bytes.size() - data_at) + " bytes, the header says " +
                            std::to_string(want));
  }
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_at), bytes.end());
  return out;
}

Result<NpyArray> read_npy_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open " + path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Result<NpyArray> a = parse_npy(bytes);
  if (!a) return Status(a.status().code(), path + ": " + a.status().message());
  return a;
}

Status write_npy_file(const std::string& path, const NpyArray& array) {
  const size_t item = npy_item_size(array.descr);
  uint64_t numel = 1;
  for (int64_t d : array.shape) numel *= static_cast<uint64_t>(d);
  if (item == 0 || numel * item != array.data.size())
    return invalid_argument("npy " + path + ": shape does not match data");
  std::string dims;
  for (size_t i = 0; i < array.shape.size(); ++i) {
    dims += std::to_string(array.shape[i]) + (array.shape.size() == 1 || i + 1 < array.shape.size() ? "," : "");
  }
  std::string header = "{'descr': '" + array.descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of 64,
  // ending in a newline (format version 1.0).
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return unavailable("cannot write " + path);
  const char magic[] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(magic, 8);
  const auto len = static_cast<uint16_t>(header.size());
  const char len_le[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_le, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(array.data.data()), static_cast<std::streamsize>(array.data.size()));
  if (!out) return unavailable("short write to " + path);
  return Status::ok();
}

}  // namespace recon::io
