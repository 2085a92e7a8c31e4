// OnnxInstance: see onnx_instance.h.
#include "daemon/serving/onnx/onnx_instance.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "daemon/serving/device.h"
#include "daemon/serving/scheduler.h"
#include "daemon/serving/stored_from_host.h"
#include "gpu/models/onnx/onnx_engine.h"

namespace recon::daemon {
namespace {

namespace onnx = gpu::onnx;

// The ONNX type of a client tensor for an input the model declares `declared`: the wire has no bool
// element, so a U8 tensor (one byte each, non-zero true) is taken as bool where the model wants bool.
onnx::ElemType element_type(TensorElement e, onnx::ElemType declared) {
  if (e == TensorElement::kU8 && declared == onnx::ElemType::kBool) return onnx::ElemType::kBool;
  switch (e) {
    case TensorElement::kF32:
      return onnx::ElemType::kFloat;
    case TensorElement::kF16:
      return onnx::ElemType::kFloat16;
    case TensorElement::kU8:
      return onnx::ElemType::kUint8;
    case TensorElement::kI32:
      return onnx::ElemType::kInt32;
    case TensorElement::kI64:
      return onnx::ElemType::kInt64;
  }
  return onnx::ElemType::kUndefined;
}

// One request input as the engine takes it: a client tensor read where it lies (the work item
// holds its lease), or a tensor of an earlier result on this device.
Result<onnx::EngineInput> engine_input(const ModelInput& input, const onnx::ValueInfo& declared) {
  onnx::EngineInput out;
  out.host.name = input.name;
  if (const auto* t = std::get_if<PendingTensor>(&input.value)) {
    out.host.type = element_type(t->dtype, declared.type);
    out.host.dims = t->shape;
    out.host.bytes = t->bytes();
    return out;
  }
  const auto* r = std::get_if<ResultInput>(&input.value);
  if (r == nullptr) return invalid_argument("input '" + input.name + "' is an image; ONNX models take tensors");
  const StoredTensor* stored = r->tensor.empty() ? nullptr : r->result->find(r->tensor);
  if (stored == nullptr || !stored->tensor.defined()) {
    return invalid_argument("input '" + input.name + "' must name one tensor of its result (ResultRef.tensor)");
  }
  // The stored tensor's values are those of the declared type: floats in f32 or f16, integers and
  // booleans (0 or 1) in i32, as this engine's outputs hold them.
  out.host.type = declared.type;
  out.host.dims.assign(stored->shape.begin(), stored->shape.end());
  out.device = stored->tensor;
  return out;
}

// Dynamic batching concatenates requests along the first axis of every input and splits every
// output along its first axis: each must have a free first dimension (Triton's rule for
// max_batch_size > 0), and no input may be a shape tensor (its values would differ per request).
Status check_batch_axis(const onnx::Engine& engine) {
  const auto refuse = [](const std::string& what) {
    return invalid_argument("max_batch_size > 1 needs a free batch dimension first in every input and output; " + what);
  };
  for (size_t i = 0; i < engine.inputs().size(); ++i) {
    const onnx::ValueInfo& in = *engine.inputs()[i];
    if (engine.is_shape_tensor(i)) return refuse("input '" + in.name + "' is a shape tensor");
    if (!in.has_shape || in.dims.empty() || in.dims[0] >= 0) {
      return refuse("input '" + in.name + "' has shape " + gpu::shape_string(in.dims));
    }
  }
  for (const onnx::ValueInfo& out : engine.model().graph.outputs) {
    if (out.has_shape && (out.dims.empty() || out.dims[0] >= 0)) {
      return refuse("output '" + out.name + "' has shape " + gpu::shape_string(out.dims));
    }
  }
  return Status::ok();
}

// Triton's TYPE_... name of an ONNX element type ("" for those Triton has none of).
std::string triton_type(onnx::ElemType t) {
  switch (t) {
    case onnx::ElemType::kFloat:
      return "TYPE_FP32";
    case onnx::ElemType::kFloat16:
      return "TYPE_FP16";
    case onnx::ElemType::kBfloat16:
      return "TYPE_BF16";
    case onnx::ElemType::kDouble:
      return "TYPE_FP64";
    case onnx::ElemType::kUint8:
      return "TYPE_UINT8";
    case onnx::ElemType::kInt8:
      return "TYPE_INT8";
    case onnx::ElemType::kUint16:
      return "TYPE_UINT16";
    case onnx::ElemType::kInt16:
      return "TYPE_INT16";
    case onnx::ElemType::kInt32:
      return "TYPE_INT32";
    case onnx::ElemType::kInt64:
      return "TYPE_INT64";
    case onnx::ElemType::kUint32:
      return "TYPE_UINT32";
    case onnx::ElemType::kUint64:
      return "TYPE_UINT64";
    case onnx::ElemType::kBool:
      return "TYPE_BOOL";
    case onnx::ElemType::kString:
      return "TYPE_STRING";
    default:
      return "";
  }
}

// The config's declared signature (config.pbtxt input/output) against the model's: every declared
// tensor exists, with its type, and its dims (after a batch dimension when max_batch_size > 0)
// agree where both are fixed.
Status check_declared(const std::vector<DeclaredTensor>& declared, const std::vector<const onnx::ValueInfo*>& actual,
                      const char* what, uint32_t max_batch_size) {
  for (const DeclaredTensor& d : declared) {
    const auto it = std::find_if(actual.begin(), actual.end(), [&](const auto* v) { return v->name == d.name; });
    if (it == actual.end()) {
      std::string names;
      for (const auto* v : actual) names += (names.empty() ? "" : ", ") + v->name;
      return invalid_argument(std::string("the config declares ") + what + " '" + d.name + "', which the model has " +
                              "not (its " + what + "s: " + names + ")");
    }
    const onnx::ValueInfo& v = **it;
    if (!d.data_type.empty() && d.data_type != triton_type(v.type)) {
      return invalid_argument(std::string(what) + " '" + d.name + "' is " + d.data_type + " in the config, " +
                              triton_type(v.type) + " in the model");
    }
    if (!v.has_shape) continue;
    std::vector<int64_t> want = d.dims;
    if (max_batch_size > 0) want.insert(want.begin(), -1);
    bool agree = want.size() == v.dims.size();
    for (size_t k = 0; agree && k < want.size(); ++k) agree = want[k] < 0 || v.dims[k] < 0 || want[k] == v.dims[k];
    if (!agree) {
      return invalid_argument(std::string(what) + " '" + d.name + "' has dims " + gpu::shape_string(v.dims) +
                              " in the model; the config says " + gpu::shape_string(d.dims) +
                              (max_batch_size > 0 ? " after the batch dimension" : ""));
    }
  }
  return Status::ok();
}

// The batch sizes run_batch runs, ascending: warm_batch_sizes (1, 2, 4, ... and max_rows) and the
// preferred sizes, which therefore run unpadded.
std::vector<uint32_t> compiled_batch_sizes(const BatchRule& rule) {
  std::vector<uint32_t> sizes = warm_batch_sizes(rule.max_rows);
  sizes.insert(sizes.end(), rule.preferred.begin(), rule.preferred.end());
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// Compiles the graph of every batch size run_batch runs where the inputs' other dimensions are
// fixed, so that no request waits for a compile (seconds for a ResNet-50 on an H200: its
// pipelines are specialised per shape).
Status compile_batch_sizes(onnx::Engine& engine, const BatchRule& rule) {
  for (const onnx::ValueInfo* in : engine.inputs()) {
    for (size_t d = 1; d < in->dims.size(); ++d) {
      if (in->dims[d] < 0) return Status::ok();  // free dims besides the batch: compiled on first use
    }
  }
  for (const uint32_t rows : compiled_batch_sizes(rule)) {
    std::vector<onnx::HostTensor> shapes;
    for (const onnx::ValueInfo* in : engine.inputs()) {
      onnx::HostTensor t;
      t.name = in->name;
      t.type = in->type;
      t.dims = in->dims;
      t.dims[0] = rows;
      shapes.push_back(std::move(t));
    }
    RECON_RETURN_IF_ERROR(
        engine.compiled(shapes).status().with_context("compiling batch size " + std::to_string(rows)));
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<ModelInstance>> OnnxInstance::load(const ModelSpec& spec, Device& device, ModelInfo& info) {
  onnx::EngineOptions options = onnx::engine_options(info.precision);
  // A batched model keeps its batch sizes' graphs besides the default number for other shapes.
  if (spec.batching && spec.batching->max_rows > 1) {
    options.max_compiled_graphs += compiled_batch_sizes(*spec.batching).size();
  }
  RECON_ASSIGN_OR_RETURN(std::unique_ptr<onnx::Engine> engine,
                         onnx::Engine::load(device.runtime(), spec.path, options));
  for (const onnx::ValueInfo* in : engine->inputs()) info.inputs.push_back(in->name);
  for (const onnx::ValueInfo& out : engine->model().graph.outputs) info.outputs.push_back(out.name);
  std::vector<const onnx::ValueInfo*> outputs;
  for (const onnx::ValueInfo& out : engine->model().graph.outputs) outputs.push_back(&out);
  RECON_RETURN_IF_ERROR(check_declared(spec.declared_inputs, engine->inputs(), "input", spec.max_batch_size));
  RECON_RETURN_IF_ERROR(check_declared(spec.declared_outputs, outputs, "output", spec.max_batch_size));
  if (spec.max_batch_size > 0) RECON_RETURN_IF_ERROR(check_batch_axis(*engine));
  if (spec.batching && spec.batching->max_rows > 1) {
    info.batching = *spec.batching;
    info.batching.power_of_two = false;  // any sum of rows; run_batch pads the call
    RECON_RETURN_IF_ERROR(compile_batch_sizes(*engine, info.batching));
  }
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(spec.path, ec);
  info.weight_bytes = ec ? 0 : bytes;
  return std::unique_ptr<ModelInstance>(new OnnxInstance(std::move(engine), info.weight_bytes));
}

OnnxInstance::OnnxInstance(std::unique_ptr<onnx::Engine> engine, uint64_t weight_bytes)
    : engine_(std::move(engine)), weight_bytes_(weight_bytes) {}

OnnxInstance::~OnnxInstance() = default;

namespace {

// The answer of one request: the graph outputs it wants (`wanted` empty: all), each got from
// `output_at(i)` (the output itself, or the request's rows of it), stored behind one handle.
template <typename OutputAt>
void answer_outputs(const std::vector<onnx::ValueInfo>& outputs, const std::vector<std::string>& wanted,
                    OutputAt output_at, HandleReservation reservation, const std::string& model,
                    const Responder& answer, const StageTimes& times) {
  std::vector<StoredTensor> tensors;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), outputs[i].name) == wanted.end()) continue;
    Result<gpu::Tensor> tensor = output_at(i);
    if (!tensor.is_ok()) {
      answer.fail(tensor.status());
      return;
    }
    tensors.push_back(stored_tensor(outputs[i].name, std::move(tensor).value()));
  }
  auto handle = answer.store(std::move(reservation), model, std::move(tensors), times);
  if (!handle.is_ok()) {
    answer.fail(handle.status());
    return;
  }
  answer.finish(ModelAnswer{**handle});
}

}  // namespace

void OnnxInstance::run(std::vector<ModelInput> inputs, const std::vector<std::string>& outputs,
                       HandleReservation reservation, const std::string& model, const Responder& answer,
                       const WorkerContext& worker) {
  const auto picked = SteadyClock::now();
  if (!answer.may_start(picked)) return;
  std::vector<onnx::EngineInput> engine_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto in = engine_input(inputs[i], *engine_->inputs()[i]);
    if (!in.is_ok()) {
      answer.fail(in.status());
      return;
    }
    engine_inputs.push_back(std::move(*in));
  }
  const auto start = SteadyClock::now();
  auto results = engine_->run_on_device(engine_inputs);
  const uint64_t compute_ns = ns_between(start, SteadyClock::now());
  if (!results.is_ok()) {
    answer.fail(results.status().with_context(model));
    return;
  }
  worker.metrics.record_execution(model, 1);
  const StageTimes times{picked, ns_between(picked, start), compute_ns, 1, SteadyClock::now()};
  answer_outputs(
      engine_->model().graph.outputs, outputs,
      [&](size_t i) -> Result<gpu::Tensor> { return std::move((*results)[i]); }, std::move(reservation), model, answer,
      times);
}

namespace {

// The smallest of the sizes the load compiled (compiled_batch_sizes) that holds `rows`.
int64_t padded_rows(int64_t rows, const BatchRule& rule) {
  for (const uint32_t size : compiled_batch_sizes(rule)) {
    if (size >= rows) return size;
  }
  return rows;  // more than max_rows: admission refuses such requests
}

}  // namespace

void OnnxInstance::run_batch(std::vector<BatchWork> batch, const WorkerContext& worker) {
  const auto picked = SteadyClock::now();
  const std::string model = batch.front().key.model;
  std::vector<BatchWork> live;
  int64_t rows = 0;
  for (BatchWork& job : batch) {
    if (!worker.responder(job.context).may_start(picked)) continue;
    rows += job.rows;
    live.push_back(std::move(job));
  }
  if (live.empty()) return;
  const auto fail_all = [&](const Status& why) {
    for (const BatchWork& job : live) worker.responder(job.context).fail(why);
  };
  // One host tensor per input: each request's rows in turn (read once from the client's memory,
  // which the leases keep mapped), then zero rows up to the padded size.
  const int64_t padded = padded_rows(rows, live.front().rule);
  const auto& first = static_cast<const OnnxRows&>(*live.front().body).inputs;
  std::vector<onnx::EngineInput> inputs;
  for (size_t i = 0; i < first.size(); ++i) {
    const auto& lead = std::get<PendingTensor>(first[i].value);  // admission: batched inputs are tensors
    const size_t row_bytes = lead.bytes().size() / static_cast<size_t>(lead.shape[0]);
    std::vector<uint8_t> bytes(static_cast<size_t>(padded) * row_bytes, 0);
    size_t at = 0;
    for (const BatchWork& job : live) {
      const auto& t = std::get<PendingTensor>(static_cast<const OnnxRows&>(*job.body).inputs[i].value);
      std::memcpy(bytes.data() + at, t.bytes().data(), t.bytes().size());
      at += t.bytes().size();
    }
    std::vector<int64_t> dims = lead.shape;
    dims[0] = padded;
    onnx::EngineInput in;
    in.host = onnx::HostTensor::owned(element_type(lead.dtype, engine_->inputs()[i]->type), std::move(dims),
                                      std::move(bytes), first[i].name);
    inputs.push_back(std::move(in));
  }
  const auto start = SteadyClock::now();
  auto results = engine_->run_on_device(inputs);
  const uint64_t compute_ns = ns_between(start, SteadyClock::now());
  const uint64_t input_ns = ns_between(picked, start);
  if (!results.is_ok()) {
    fail_all(results.status().with_context(model));
    return;
  }
  const auto& names = engine_->model().graph.outputs;
  for (size_t o = 0; o < results->size(); ++o) {
    const auto& shape = (*results)[o].shape();
    if (shape.empty() || shape[0] != padded) {
      fail_all(invalid_argument(model + ": output '" + names[o].name +
                                "' has no batch dimension first, which dynamic batching needs (set "
                                "max_batch_size to 0 in its config)"));
      return;
    }
  }
  worker.metrics.record_execution(model, static_cast<uint32_t>(rows));
  int64_t row = 0;
  for (BatchWork& job : live) {
    auto& request = static_cast<OnnxRows&>(*job.body);
    const StageTimes times{picked, input_ns, compute_ns, static_cast<uint32_t>(live.size()), SteadyClock::now()};
    answer_outputs(
        names, request.outputs, [&](size_t o) { return (*results)[o].slice_rows(row, row + job.rows); },
        std::move(request.reservation), model, worker.responder(job.context), times);
    row += job.rows;
  }
}

void run_onnx_batch(std::vector<BatchWork> batch, Device& device, const WorkerContext& worker) {
  const std::string& model = batch.front().key.model;
  if (OnnxInstance* instance = device.ready<OnnxInstance>(model)) {
    instance->run_batch(std::move(batch), worker);
    return;
  }
  const Status missing = device.missing(model);
  for (const BatchWork& job : batch) worker.responder(job.context).fail(missing);
}

}  // namespace recon::daemon
