// The small behaviours of onnx_model.h's plain structs: element type names and sizes, element
// counts, owned tensors and lookups. No parsing here (that is onnx_file.cpp).
#include "gpu/models/onnx/onnx_model.h"

#include <utility>

namespace recon::gpu::onnx {

const char* elem_type_name(ElemType type) {
  switch (type) {
    case ElemType::kUndefined:
      return "UNDEFINED";
    case ElemType::kFloat:
      return "FLOAT";
    case ElemType::kUint8:
      return "UINT8";
    case ElemType::kInt8:
      return "INT8";
    case ElemType::kUint16:
      return "UINT16";
    case ElemType::kInt16:
      return "INT16";
    case ElemType::kInt32:
      return "INT32";
    case ElemType::kInt64:
      return "INT64";
    case ElemType::kString:
      return "STRING";
    case ElemType::kBool:
      return "BOOL";
    case ElemType::kFloat16:
      return "FLOAT16";
    case ElemType::kDouble:
      return "DOUBLE";
    case ElemType::kUint32:
      return "UINT32";
    case ElemType::kUint64:
      return "UINT64";
    case ElemType::kBfloat16:
      return "BFLOAT16";
  }
  return "UNKNOWN";
}

size_t elem_type_size(ElemType type) {
  switch (type) {
    case ElemType::kUint8:
    case ElemType::kInt8:
    case ElemType::kBool:
      return 1;
    case ElemType::kUint16:
    case ElemType::kInt16:
    case ElemType::kFloat16:
    case ElemType::kBfloat16:
      return 2;
    case ElemType::kFloat:
    case ElemType::kInt32:
    case ElemType::kUint32:
      return 4;
    case ElemType::kInt64:
    case ElemType::kDouble:
    case ElemType::kUint64:
      return 8;
    case ElemType::kUndefined:
    case ElemType::kString:
      return 0;
  }
  return 0;
}

int64_t HostTensor::numel() const {
  int64_t count = 1;
  for (const int64_t dim : dims) {
    // The reader refuses such dims; a tensor built by hand with them has no element count.
    if (dim < 0 || __builtin_mul_overflow(count, dim, &count)) return -1;
  }
  return count;
}

HostTensor HostTensor::owned(ElemType type, std::vector<int64_t> dims, std::vector<uint8_t> data, std::string name) {
  auto buffer = std::make_shared<const std::vector<uint8_t>>(std::move(data));
  HostTensor tensor;
  tensor.name = std::move(name);
  tensor.type = type;
  tensor.dims = std::move(dims);
  tensor.bytes = std::span<const uint8_t>(buffer->data(), buffer->size());
  tensor.owner = std::move(buffer);
  return tensor;
}

const Attribute* Node::attribute(std::string_view attr_name) const {
  for (const Attribute& attr : attributes) {
    if (attr.name == attr_name) return &attr;
  }
  return nullptr;
}

int64_t Model::opset(std::string_view domain) const {
  const bool is_default = domain.empty() || domain == "ai.onnx";
  // The reader stores the default domain as ""; a Model built by hand may spell it "ai.onnx".
  for (const std::string_view key :
       is_default ? std::vector<std::string_view>{"", "ai.onnx"} : std::vector<std::string_view>{domain}) {
    const auto it = opsets.find(std::string(key));
    if (it != opsets.end()) return it->second;
  }
  return 0;
}

}  // namespace recon::gpu::onnx
