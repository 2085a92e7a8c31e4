// What an ONNX file says, as plain data: the graph, its nodes and attributes, and host tensors whose
// bytes point into the memory-mapped file (or into a buffer the tensor owns). Filled by the reader
// (onnx_file.h); read by the compiler (onnx_compiler.h). Nothing here touches the GPU.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace recon::gpu::onnx {

// TensorProto.DataType, with ONNX's numbering.
enum class ElemType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBfloat16 = 16,
};
const char* elem_type_name(ElemType type);
// Bytes per element; 0 for types without a fixed size (string) or unknown numbers.
size_t elem_type_size(ElemType type);

// A dense, little-endian tensor on the host: an initializer, a Constant's value, test data, or the
// result of folding shape arithmetic at load time.
struct HostTensor {
  std::string name;
  ElemType type = ElemType::kUndefined;
  std::vector<int64_t> dims;
  std::span<const uint8_t> bytes;     // numel × elem_type_size(type) bytes
  std::shared_ptr<const void> owner;  // keeps `bytes` alive (the file mapping or an owned vector)

  // The product of dims (1 for a scalar); -1 when a dim is negative or the product overflows.
  int64_t numel() const;
  // A tensor owning `data` (numel × elem_type_size bytes; not checked here).
  static HostTensor owned(ElemType type, std::vector<int64_t> dims, std::vector<uint8_t> data, std::string name = {});
  template <typename T>
  std::span<const T> values() const {
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
};

struct Attribute {
  // AttributeProto.AttributeType numbering.
  enum class Kind : int32_t {
    kUndefined = 0,
    kFloat = 1,
    kInt = 2,
    kString = 3,
    kTensor = 4,
    kGraph = 5,
    kFloats = 6,
    kInts = 7,
    kStrings = 8,
    kTensors = 9,
    kGraphs = 10,
  };
  std::string name;
  Kind kind = Kind::kUndefined;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  HostTensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;               // "" and "ai.onnx" are the default domain
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::vector<Attribute> attributes;

  const Attribute* attribute(std::string_view attr_name) const;
};

// A graph input, output or value_info entry. A dimension is its value, or -1 when it is symbolic
// (dim_param, kept in dim_params at the same index) or absent.
struct ValueInfo {
  std::string name;
  ElemType type = ElemType::kUndefined;
  bool has_shape = false;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_params;
};

struct ModelGraph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<HostTensor> initializers;
  std::vector<ValueInfo> inputs;  // may include initializers (IR < 4 lists them here)
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_info;
};

struct Model {
  int64_t ir_version = 0;
  std::string producer_name;
  std::map<std::string, int64_t> opsets;  // domain ("" for the default) → version
  ModelGraph graph;

  // The opset version imported for `domain` ("ai.onnx" is the default domain too); 0 when absent.
  int64_t opset(std::string_view domain = "") const;
};

}  // namespace recon::gpu::onnx
