#include "gpu/models/onnx/onnx_op_context.h"

#include "gpu/models/onnx/onnx_host.h"
#include "gpu/ops/layout.h"

namespace recon::gpu::onnx {

std::string node_label(const Node& node, int64_t opset) {
  std::string label = node.op_type;
  if (!node.name.empty()) label += " '" + node.name + "'";
  if (!node.domain.empty() && node.domain != "ai.onnx") label += " of domain '" + node.domain + "'";
  label += " (opset " + std::to_string(opset) + ")";
  return label;
}

OpContext::~OpContext() {
  for (int s : scratch_) memory_.release(s);
}

Result<Arg> OpContext::scratch(DType dtype, const Shape& shape) {
  int storage = -1;
  RECON_ASSIGN_OR_RETURN(Tensor t, memory_.allocate(dtype, shape, storage));
  scratch_.push_back(storage);
  return Arg(t);
}

Result<Arg> upload_host_value(Runtime& rt, Value& v, DType float_dtype) {
  if (v.device) return *v.device;
  const std::optional<DType> dtype = device_dtype(v.type, float_dtype);
  if (!dtype) {
    return invalid_argument(
        std::string("type ") + elem_type_name(v.type) +
        " cannot live on the GPU (float, float16, int8, uint8, int16, uint16, int32, int64 and bool can)");
  }
  RECON_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, to_device_bytes(*v.host, *dtype));
  if (bytes.empty()) return invalid_argument("an empty tensor cannot live on the GPU");
  const Shape shape = v.shape.empty() ? Shape{1} : v.shape;
  RECON_ASSIGN_OR_RETURN(Tensor t,
                         Tensor::from_host(rt, *dtype, shape, bytes.data(), bytes.size(), MemoryRole::kWeights));
  if (v.shape.empty()) {
    RECON_ASSIGN_OR_RETURN(t, t.reshape({}));
  }
  v.device = Arg(t);
  return *v.device;
}

Result<Arg> upload_host_tensor(Runtime& rt, HostTensor t, DType float_dtype) {
  Value v;
  v.type = t.type;
  v.shape = t.dims;
  v.host = std::move(t);
  return upload_host_value(rt, v, float_dtype);
}

Status OpContext::fail(const std::string& why) const {
  return invalid_argument(node_label(node_, opset_) + ": " + why);
}

Status OpContext::normalise_axis(int64_t& axis, int64_t rank) const {
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    return fail("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  }
  return Status::ok();
}

int64_t OpContext::attr_int(std::string_view name, int64_t fallback) const {
  const Attribute* a = node_.attribute(name);
  return a != nullptr ? a->i : fallback;
}

float OpContext::attr_float(std::string_view name, float fallback) const {
  const Attribute* a = node_.attribute(name);
  return a != nullptr ? a->f : fallback;
}

std::string OpContext::attr_string(std::string_view name, std::string fallback) const {
  const Attribute* a = node_.attribute(name);
  return a != nullptr ? a->s : fallback;
}

std::vector<int64_t> OpContext::attr_ints(std::string_view name, std::vector<int64_t> fallback) const {
  const Attribute* a = node_.attribute(name);
  return a != nullptr ? a->ints : fallback;
}

std::vector<float> OpContext::attr_floats(std::string_view name) const {
  const Attribute* a = node_.attribute(name);
  return a != nullptr ? a->floats : std::vector<float>{};
}

bool OpContext::all_inputs_on_host() const {
  for (const Value* v : inputs_) {
    if (v != nullptr && !v->is_host()) return false;
  }
  return true;
}

Result<const HostTensor*> OpContext::host_input(size_t i) const {
  if (!has_input(i)) return fail("input " + std::to_string(i) + " is missing");
  if (!inputs_[i]->is_host()) {
    return fail("input " + std::to_string(i) + " ('" + node_.inputs[i] +
                "') must be known when the model is loaded (a constant or shape arithmetic on constants); "
                "recon runs static shapes");
  }
  return &*inputs_[i]->host;
}

Result<std::vector<int64_t>> OpContext::host_ints(size_t i) const {
  RECON_ASSIGN_OR_RETURN(const HostTensor* t, host_input(i));
  return host_int64s(*t);
}

Result<Arg> OpContext::device_input(size_t i) {
  if (!has_input(i)) return fail("input " + std::to_string(i) + " is missing");
  Value& v = *inputs_[i];
  if (v.device) return *v.device;
  Result<Arg> up = upload_host_value(rt_, v, arithmetic_.float_dtype);
  if (!up) return fail("input '" + node_.inputs[i] + "': " + up.status().message());
  return *up;
}

Result<Arg> OpContext::float_input(size_t i) {
  if (has_input(i) && !is_floating(inputs_[i]->type)) {
    return fail(std::string("input '") + node_.inputs[i] + "' is " + elem_type_name(inputs_[i]->type) +
                "; recon runs this op on float and float16 tensors only");
  }
  return device_input(i);
}

Result<Arg> OpContext::derived_input(size_t i, const std::string& derivation,
                                     const std::function<Result<Arg>()>& make) {
  if (!has_input(i)) return fail("input " + std::to_string(i) + " is missing");
  std::map<std::string, Arg>& derived = inputs_[i]->derived;
  if (auto it = derived.find(derivation); it != derived.end()) return it->second;
  RECON_ASSIGN_OR_RETURN(Arg made, make());
  derived.emplace(derivation, made);
  return made;
}

Result<Arg> OpContext::new_output(size_t i, ElemType type, const Shape& shape) {
  const std::optional<DType> dtype = device_dtype(type, arithmetic_.float_dtype);
  if (!dtype) return fail(std::string("output type ") + elem_type_name(type) + " cannot live on the GPU");
  if (shape_numel(shape) == 0) return fail("output " + std::to_string(i) + " would be empty " + shape_string(shape));
  Value& out = outputs_[i];
  out.type = type;
  out.shape = shape;
  RECON_ASSIGN_OR_RETURN(Tensor t, memory_.allocate(*dtype, shape, out.storage));
  out.device = Arg(t);
  return *out.device;
}

void OpContext::set_host_output(size_t i, HostTensor t) {
  Value& out = outputs_[i];
  out.type = t.type;
  out.shape = t.dims;
  out.host = std::move(t);
}

Status OpContext::set_host_result(size_t i, Result<HostTensor> t) {
  if (!t) return fail(t.status().message());
  set_host_output(i, std::move(*t));
  return Status::ok();
}

Status OpContext::set_view_output(size_t i, size_t of, const Shape& shape) {
  const Value& in = *inputs_[of];
  Value& out = outputs_[i];
  out.type = in.type;
  out.shape = shape;
  if (in.is_host()) {
    HostTensor t = *in.host;
    t.dims = shape;
    t.name.clear();
    out.host = std::move(t);
    return Status::ok();
  }
  RECON_ASSIGN_OR_RETURN(Arg view, ops::reshape_view(*in.device, shape));
  out.device = view;
  out.storage = in.storage;
  memory_.retain(in.storage);
  return Status::ok();
}

}  // namespace recon::gpu::onnx
