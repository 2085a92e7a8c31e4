// What the ONNX engine tests share: a model built in memory (value infos, nodes, attributes,
// float initializers) and a fixture that loads and runs one at a precision.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_engine.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu::onnx {

inline ValueInfo info(std::string name, ElemType type, std::vector<int64_t> dims) {
  ValueInfo v;
  v.name = std::move(name);
  v.type = type;
  v.has_shape = true;
  v.dims = std::move(dims);
  return v;
}

inline Node node(std::string op, std::vector<std::string> in, std::vector<std::string> out, std::string name = {}) {
  Node n;
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.name = std::move(name);
  return n;
}

// A float tensor of these values, row-major (an initializer when named).
inline HostTensor float_tensor(std::vector<int64_t> dims, const std::vector<float>& values, std::string name = {}) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return HostTensor::owned(ElemType::kFloat, std::move(dims), std::move(bytes), std::move(name));
}

inline Model model_of(std::vector<Node> nodes, std::vector<ValueInfo> inputs, std::vector<ValueInfo> outputs) {
  Model m;
  m.ir_version = 8;
  m.opsets[""] = 13;
  m.graph.nodes = std::move(nodes);
  m.graph.inputs = std::move(inputs);
  m.graph.outputs = std::move(outputs);
  return m;
}

class OnnxEngineTest : public testing::GpuTest {
 protected:
  // `m` compiled at `precision` and run on `inputs`: its outputs, or the first error (loading or running).
  Result<std::vector<HostTensor>> run_model(const Model& m, DType precision, std::span<const HostTensor> inputs) {
    RECON_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::from_model(rt(), m, {precision}));
    return engine->run(inputs);
  }
};

inline Attribute int_attribute(std::string name, int64_t value) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::kInt;
  a.i = value;
  return a;
}

inline Attribute ints_attribute(std::string name, std::vector<int64_t> values) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(values);
  return a;
}

inline Attribute string_attribute(std::string name, std::string value) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::kString;
  a.s = std::move(value);
  return a;
}

}  // namespace recon::gpu::onnx
