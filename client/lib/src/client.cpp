// Client: connection set-up, buffers, inference requests, status and management calls.
#include "recon/client/client.h"

#include "core.h"
#include "recon/client/version.h"
#include "region.h"
#include "result_state.h"
#include "schema/protocol.h"
#include "status_convert.h"

namespace recon::client {
namespace {

flatbuffers::Offset<wire::Image> image_ref(flatbuffers::FlatBufferBuilder& builder, const ImageView& view, uint64_t lo,
                                           uint64_t hi) {
  const wire::Id128 region(lo, hi);
  const auto ref = wire::CreateImageRef(builder, &region, view.offset(), view.height(), view.width(), view.stride(),
                                        wire::PixelFormat::RGB8);
  return wire::CreateImage(builder, wire::ImageSource::ImageRef, ref.Union());
}

// A tensor input: in its ImageBuffer's region, or the bytes inline.
// (`lo`, `hi`: the region id of input.tensor_view, which only Client may read.)
flatbuffers::Offset<wire::TensorInput> tensor_input(flatbuffers::FlatBufferBuilder& builder, const ModelInput& input,
                                                    uint64_t lo, uint64_t hi) {
  if (input.tensor_view != nullptr) {
    const BufferTensor& view = *input.tensor_view;
    if (!view.valid()) throw detail::invalid("input '" + input.name + "' needs a tensor from an ImageBuffer");
    const wire::Id128 region(lo, hi);
    const auto shape = builder.CreateVector(view.shape());
    return wire::CreateTensorInput(builder, static_cast<wire::DType>(view.dtype()), shape, &region, view.offset());
  }
  uint64_t bytes = dtype_size(input.inline_dtype);
  for (uint64_t d : input.inline_shape) bytes *= d;
  if (input.inline_shape.empty() || bytes == 0 || bytes != input.inline_data.size()) {
    throw detail::invalid("input '" + input.name + "': " + std::to_string(input.inline_data.size()) +
                          " inline bytes for its shape and type (" + std::to_string(bytes) + " bytes)");
  }
  const auto shape = builder.CreateVector(input.inline_shape);
  const auto data =
      builder.CreateVector(reinterpret_cast<const uint8_t*>(input.inline_data.data()), input.inline_data.size());
  return wire::CreateTensorInput(builder, static_cast<wire::DType>(input.inline_dtype), shape, nullptr, 0, data);
}

flatbuffers::Offset<wire::InferOptions> build_infer_options(flatbuffers::FlatBufferBuilder& builder,
                                                            const InferOptions& options) {
  std::vector<flatbuffers::Offset<flatbuffers::String>> outputs;
  for (const std::string& name : options.outputs) outputs.push_back(builder.CreateString(name));
  const auto output_vector = options.outputs.empty() ? 0 : builder.CreateVector(outputs);
  wire::InferOptionsBuilder o(builder);
  wire::Resolution resolution;
  if (options.resolution) {
    resolution = wire::Resolution(options.resolution->height, options.resolution->width);
    o.add_resolution(&resolution);
  }
  if (!options.outputs.empty()) o.add_outputs(output_vector);
  o.add_precision(static_cast<wire::Precision>(options.precision));
  o.add_deadline_ms(static_cast<uint32_t>(options.deadline.count()));
  o.add_ttl_ms(static_cast<uint32_t>(options.ttl.count()));
  return o.Finish();
}

// A request over an image list (infer_batch, encode_retrieval, start_job): at least one image,
// each from an ImageBuffer. `call` names the method in the error.
void check_image_list(std::span<const ImageView> images, const std::string& call) {
  if (images.empty()) throw detail::invalid(call + " needs at least one image");
  for (const ImageView& image : images) {
    if (!image.valid()) throw detail::invalid(call + " needs images from an ImageBuffer");
  }
}

// The orphan handler of a request whose answer carries one result handle (`handle_of`; called only
// for an answer of type `body`): a late answer's handle is released at once. Weak: the Call lives
// inside the Core's I/O thread, which must not keep the Core alive.
detail::Call::OrphanHandler release_late_handle(std::weak_ptr<detail::Core> weak, wire::ResponseBody body,
                                                const wire::ResultHandle* (*handle_of)(const wire::Response&)) {
  return [weak = std::move(weak), body, handle_of](const detail::Answer& answer) {
    auto core = weak.lock();
    if (!core || answer.response->body_type() != body) return;
    const wire::ResultHandle* h = handle_of(*answer.response);
    if (h != nullptr && h->id() != nullptr) core->release_async(detail::from_wire(h->id()));
  };
}

std::vector<wire::Resolution> to_wire(std::span<const Resolution> resolutions) {
  std::vector<wire::Resolution> out;
  for (const Resolution& r : resolutions) out.emplace_back(r.height, r.width);
  return out;
}

}  // namespace

Client::Client(std::shared_ptr<detail::Core> core) : core_(std::move(core)) {}
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;
Client::~Client() = default;

Client Client::connect(const ConnectOptions& options) {
  return Client(detail::Core::open(options, true));
}

Client Client::connect_control(const ConnectOptions& options) {
  return Client(detail::Core::open(options, false));
}

detail::Core& Client::core() const {
  if (!core_) throw detail::invalid("use of a moved-from Client");
  return *core_;
}

bool Client::has_session() const {
  return core().has_session();
}
const SessionInfo& Client::session() const {
  return core().session_info();
}
const ConnectOptions& Client::options() const {
  return core().options();
}

ImageBuffer Client::create_buffer(uint64_t bytes, std::string_view label) {
  detail::Core& c = core();
  if (!c.has_session()) throw detail::invalid("this client has no session (connect_control): it cannot create buffers");
  detail::SharedMemory memory = detail::SharedMemory::create("recon-" + std::string(label), bytes);
  const detail::RegisteredRegion registered = c.register_region(memory.fd(), memory.size(), label);
  return ImageBuffer(std::make_shared<detail::Region>(std::move(memory), registered, std::string(label), core_));
}

PendingResult Client::infer(const ImageView& image1, const ImageView& image2, const InferOptions& options) {
  detail::Core& c = core();
  if (!c.has_session()) throw detail::invalid("this client has no session (connect_control): it cannot infer");
  if (!image1.valid() || !image2.valid()) throw detail::invalid("infer needs two images from an ImageBuffer");
  c.check_open();

  flatbuffers::FlatBufferBuilder builder(1024);
  const auto model = builder.CreateString(options.model);
  const auto a = image_ref(builder, image1, image1.region_lo_, image1.region_hi_);
  const auto b = image_ref(builder, image2, image2.region_lo_, image2.region_hi_);
  const auto infer_options = build_infer_options(builder, options);
  const auto body = wire::CreateInferPair(builder, model, a, b, infer_options);
  const uint64_t request_id = c.next_request_id();
  detail::finish_request(builder, request_id, c.session(), wire::RequestBody::InferPair, body.Union());

  // A handle that arrives after its PendingResult was dropped (or timed out) is released at once.
  auto orphan = release_late_handle(core_, wire::ResponseBody::InferPairResult,
                                    [](const wire::Response& r) { return r.body_as_InferPairResult()->handle(); });
  auto call = c.start(detail::Target::kClient, builder, request_id, options.timeout, std::move(orphan));
  return PendingResult(detail::PendingCall(core_, std::move(call)), &detail::Decode::infer_pair, "PendingResult");
}

PendingResult Client::infer(std::string_view model, std::span<const ModelInput> inputs,
                            const std::map<std::string, std::string>& parameters, const InferOptions& options) {
  detail::Core& c = core();
  if (!c.has_session()) throw detail::invalid("this client has no session (connect_control): it cannot infer");
  if (model.empty()) throw detail::invalid("infer needs a model name");
  if (!options.model.empty() && options.model != model) {
    throw detail::invalid("infer names model '" + std::string(model) + "' and options.model '" + options.model + "'");
  }
  c.check_open();
  flatbuffers::FlatBufferBuilder builder(1024 + 128 * inputs.size());
  std::vector<flatbuffers::Offset<wire::NamedInput>> named;
  for (const ModelInput& input : inputs) {
    const auto name = builder.CreateString(input.name);
    const int sources = (input.image_view != nullptr) + (input.source != nullptr) + (input.tensor_view != nullptr) +
                        (input.has_inline ? 1 : 0);
    if (sources != 1) {
      throw detail::invalid("input '" + input.name + "' needs exactly one of an image, a tensor and a result");
    }
    if (input.tensor_view != nullptr || input.has_inline) {
      const uint64_t lo = input.tensor_view != nullptr ? input.tensor_view->region_lo_ : 0;
      const uint64_t hi = input.tensor_view != nullptr ? input.tensor_view->region_hi_ : 0;
      named.push_back(wire::CreateNamedInput(builder, name, wire::InputSource::TensorInput,
                                             tensor_input(builder, input, lo, hi).Union()));
      continue;
    }
    if (input.image_view != nullptr) {
      const ImageView& view = *input.image_view;
      if (!view.valid()) throw detail::invalid("input '" + input.name + "' needs an image from an ImageBuffer");
      const auto image = image_ref(builder, view, view.region_lo_, view.region_hi_);
      named.push_back(wire::CreateNamedInput(builder, name, wire::InputSource::Image, image.Union()));
      continue;
    }
    const Result& result = *input.source;
    if (!result.valid()) throw detail::invalid("input '" + input.name + "' needs a Result");
    if (result.state_->released()) {
      throw Error(ErrorCode::kNotFound, ErrorSource::kClient, "input '" + input.name + "' is a released result");
    }
    const wire::Id128 handle = detail::to_wire(result.state_->handle());
    const auto ref =
        wire::CreateResultRef(builder, &handle, input.tensor.empty() ? 0 : builder.CreateString(input.tensor));
    named.push_back(wire::CreateNamedInput(builder, name, wire::InputSource::ResultRef, ref.Union()));
  }
  std::vector<flatbuffers::Offset<wire::Parameter>> wire_parameters;
  for (const auto& [name, value] : parameters) {
    wire_parameters.push_back(wire::CreateParameterDirect(builder, name.c_str(), value.c_str()));
  }
  const auto model_name = builder.CreateString(model.data(), model.size());
  const auto input_vector = builder.CreateVector(named);
  const auto parameter_vector = builder.CreateVector(wire_parameters);
  const auto infer_options = build_infer_options(builder, options);
  const auto body = wire::CreateInfer(builder, model_name, input_vector, parameter_vector, infer_options);
  const uint64_t request_id = c.next_request_id();
  detail::finish_request(builder, request_id, c.session(), wire::RequestBody::Infer, body.Union());
  auto orphan = release_late_handle(core_, wire::ResponseBody::InferResult,
                                    [](const wire::Response& r) { return r.body_as_InferResult()->handle(); });
  auto call = c.start(detail::Target::kClient, builder, request_id, options.timeout, std::move(orphan));
  return PendingResult(detail::PendingCall(core_, std::move(call)), &detail::Decode::infer, "PendingResult");
}

PendingBatch Client::infer_batch(std::span<const ImageView> images, const BatchOptions& batch,
                                 const InferOptions& options) {
  detail::Core& c = core();
  if (!c.has_session()) throw detail::invalid("this client has no session (connect_control): it cannot infer");
  check_image_list(images, "infer_batch");
  for (const ImagePair& p : batch.pairs) {
    if (p.first >= images.size() || p.second >= images.size()) {
      throw detail::invalid("pair (" + std::to_string(p.first) + ", " + std::to_string(p.second) +
                            ") names an image beyond the " + std::to_string(images.size()) + " given");
    }
  }
  c.check_open();

  flatbuffers::FlatBufferBuilder builder(1024 + 128 * images.size());
  const auto model = builder.CreateString(options.model);
  std::vector<flatbuffers::Offset<wire::Image>> refs;
  refs.reserve(images.size());
  for (const ImageView& image : images) refs.push_back(image_ref(builder, image, image.region_lo_, image.region_hi_));
  const auto image_vector = builder.CreateVector(refs);
  std::vector<wire::ImagePair> pairs;
  for (const ImagePair& p : batch.pairs) pairs.emplace_back(p.first, p.second);
  const auto pair_vector = pairs.empty() ? 0 : builder.CreateVectorOfStructs(pairs);
  const auto infer_options = build_infer_options(builder, options);
  const auto body = wire::CreateInferBatch(builder, model, image_vector, pair_vector, batch.symmetric, infer_options,
                                           /*stream=*/false);
  const uint64_t request_id = c.next_request_id();
  detail::finish_request(builder, request_id, c.session(), wire::RequestBody::InferBatch, body.Union());

  std::weak_ptr<detail::Core> weak = core_;
  auto orphan = [weak](const detail::Answer& answer) {
    auto core = weak.lock();
    if (!core || answer.response->body_type() != wire::ResponseBody::InferBatchResult) return;
    const auto* handles = answer.response->body_as_InferBatchResult()->handles();
    if (handles == nullptr) return;
    for (const wire::ResultHandle* handle : *handles) {
      if (handle != nullptr && handle->id() != nullptr) core->release_async(detail::from_wire(handle->id()));
    }
  };
  auto call = c.start(detail::Target::kClient, builder, request_id, options.timeout, std::move(orphan));
  return PendingBatch(detail::PendingCall(core_, std::move(call)), &detail::Decode::batch, "PendingBatch");
}

PendingResult Client::match(const Result& source, const MatchOptions& options) {
  detail::Core& c = core();
  if (!c.has_session()) throw detail::invalid("this client has no session (connect_control): it cannot match");
  if (!source.valid()) throw detail::invalid("match needs a Result");
  if (source.state_->released()) {
    throw Error(ErrorCode::kNotFound, ErrorSource::kClient, "match on a released result handle");
  }
  c.check_open();
  flatbuffers::FlatBufferBuilder builder(256);
  const wire::Id128 handle = detail::to_wire(source.state_->handle());
  const auto body = wire::CreateMatch(builder, &handle, options.max_matches, options.subsample, options.min_confidence);
  const uint64_t request_id = c.next_request_id();
  detail::finish_request(builder, request_id, c.session(), wire::RequestBody::Match, body.Union());
  auto orphan = release_late_handle(core_, wire::ResponseBody::MatchResult,
                                    [](const wire::Response& r) { return r.body_as_MatchResult()->handle(); });
  auto call = c.start(detail::Target::kClient, builder, request_id, options.timeout, std::move(orphan));
  return PendingResult(detail::PendingCall(core_, std::move(call)), &detail::Decode::match, "PendingResult");
}

PendingRetrieval Client::encode_retrieval(std::span<const ImageView> images, const RetrievalOptions& options) {
  detail::Core& c = core();
  if (!c.has_session()) throw detail::invalid("this client has no session (connect_control): it cannot encode");
  check_image_list(images, "encode_retrieval");
  c.check_open();
  flatbuffers::FlatBufferBuilder builder(1024 + 128 * images.size());
  const auto model = builder.CreateString(options.model);
  std::vector<flatbuffers::Offset<wire::Image>> refs;
  for (const ImageView& image : images) refs.push_back(image_ref(builder, image, image.region_lo_, image.region_hi_));
  const auto image_vector = builder.CreateVector(refs);
  InferOptions infer;
  infer.resolution = options.resolution;
  infer.ttl = options.ttl;
  const auto infer_options = build_infer_options(builder, infer);
  const auto body = wire::CreateEncodeRetrieval(builder, model, image_vector, infer_options, options.top_k);
  const uint64_t request_id = c.next_request_id();
  detail::finish_request(builder, request_id, c.session(), wire::RequestBody::EncodeRetrieval, body.Union());
  auto orphan = release_late_handle(core_, wire::ResponseBody::EncodeRetrievalResult, [](const wire::Response& r) {
    return r.body_as_EncodeRetrievalResult()->handle();
  });
  auto call = c.start(detail::Target::kClient, builder, request_id, options.timeout, std::move(orphan));
  return PendingRetrieval(detail::PendingCall(core_, std::move(call)), &detail::Decode::retrieval, "PendingRetrieval");
}

Job Client::start_job(std::span<const ImageView> images, const JobOptions& options) {
  detail::Core& c = core();
  if (!c.has_session()) throw detail::invalid("this client has no session (connect_control): it cannot start a job");
  check_image_list(images, "start_job");
  c.check_open();
  flatbuffers::FlatBufferBuilder builder(1024 + 128 * images.size());
  const auto job = builder.CreateString(options.job);
  const auto model = builder.CreateString(options.model);
  std::vector<flatbuffers::Offset<wire::Image>> refs;
  for (const ImageView& image : images) refs.push_back(image_ref(builder, image, image.region_lo_, image.region_hi_));
  const auto image_vector = builder.CreateVector(refs);
  std::vector<flatbuffers::Offset<wire::Parameter>> parameters;
  for (const auto& [name, value] : options.parameters) {
    parameters.push_back(wire::CreateParameter(builder, builder.CreateString(name), builder.CreateString(value)));
  }
  const auto parameter_vector = builder.CreateVector(parameters);
  InferOptions infer;
  infer.resolution = options.resolution;
  infer.ttl = options.ttl;
  const auto infer_options = build_infer_options(builder, infer);
  const auto body = wire::CreateStartJob(builder, job, model, image_vector, parameter_vector, infer_options);
  const uint64_t request_id = c.next_request_id();
  detail::finish_request(builder, request_id, c.session(), wire::RequestBody::StartJob, body.Union());
  auto orphan = release_late_handle(core_, wire::ResponseBody::JobEvent,
                                    [](const wire::Response& r) { return r.body_as_JobEvent()->result(); });
  auto call = c.start(detail::Target::kClient, builder, request_id, options.timeout, std::move(orphan));
  return Job(core_, std::move(call), request_id);
}

DaemonStatus Client::status(bool include_sessions) {
  detail::Core& c = core();
  flatbuffers::FlatBufferBuilder builder(128);
  const auto body = wire::CreateGetStatus(builder, include_sessions);
  const uint64_t request_id = c.next_request_id();
  const detail::Target target = include_sessions ? detail::Target::kManager : detail::Target::kClient;
  detail::finish_request(builder, request_id, include_sessions ? detail::Id{} : c.session(),
                         wire::RequestBody::GetStatus, body.Union());
  const detail::Answer answer = c.call(target, builder, request_id, wire::ResponseBody::StatusReport, "GetStatus", {});
  return detail::status_from_wire(*answer.response->body_as_StatusReport());
}

WarmupReport Client::warmup(std::span<const std::string> models, std::span<const Resolution> resolutions,
                            std::chrono::milliseconds timeout) {
  detail::Core& c = core();
  flatbuffers::FlatBufferBuilder builder(256);
  std::vector<flatbuffers::Offset<flatbuffers::String>> names;
  for (const std::string& m : models) names.push_back(builder.CreateString(m));
  const auto name_vector = builder.CreateVector(names);
  const auto res = to_wire(resolutions);
  const auto res_vector = builder.CreateVectorOfStructs(res);
  const auto body = wire::CreateWarmup(builder, name_vector, res_vector);
  const uint64_t request_id = c.next_request_id();
  detail::finish_request(builder, request_id, {}, wire::RequestBody::Warmup, body.Union());
  const detail::Answer answer = c.call(detail::Target::kManager, builder, request_id, wire::ResponseBody::WarmupResult,
                                       "Warmup", timeout.count() > 0 ? timeout : std::chrono::hours(24 * 365));
  const wire::WarmupResult* result = answer.response->body_as_WarmupResult();
  WarmupReport report;
  if (result->models() != nullptr) {
    for (const wire::ModelStatus* m : *result->models()) report.models.push_back(detail::model_from_wire(m));
  }
  report.duration = std::chrono::milliseconds(result->duration_ms());
  return report;
}

LoadModelReport Client::load_model(const LoadModelRequest& request, std::chrono::milliseconds timeout) {
  if (request.name.empty()) throw detail::invalid("load_model needs a model name");
  detail::Core& c = core();
  flatbuffers::FlatBufferBuilder builder(256);
  const auto name = builder.CreateString(request.name);
  const auto kind = builder.CreateString(request.kind);
  const auto weights = builder.CreateString(request.weights.empty() ? request.name : request.weights);
  const auto res = to_wire(request.resolutions);
  const auto res_vector = builder.CreateVectorOfStructs(res);
  const auto backbone = builder.CreateString(request.backbone);
  const auto body = wire::CreateLoadModel(builder, name, kind, weights, static_cast<wire::Precision>(request.precision),
                                          res_vector, request.warm, request.version, backbone);
  const uint64_t request_id = c.next_request_id();
  detail::finish_request(builder, request_id, {}, wire::RequestBody::LoadModel, body.Union());
  const detail::Answer answer =
      c.call(detail::Target::kManager, builder, request_id, wire::ResponseBody::LoadModelResult, "LoadModel",
             timeout.count() > 0 ? timeout : std::chrono::hours(24 * 365));
  const wire::LoadModelResult* result = answer.response->body_as_LoadModelResult();
  return LoadModelReport{detail::model_from_wire(result->model()), std::chrono::milliseconds(result->duration_ms())};
}

void Client::unload_model(std::string_view name) {
  if (name.empty()) throw detail::invalid("unload_model needs a model name");
  detail::Core& c = core();
  flatbuffers::FlatBufferBuilder builder(128);
  const auto text = builder.CreateString(name.data(), name.size());
  const auto body = wire::CreateUnloadModel(builder, text);
  const uint64_t request_id = c.next_request_id();
  detail::finish_request(builder, request_id, {}, wire::RequestBody::UnloadModel, body.Union());
  c.call(detail::Target::kManager, builder, request_id, wire::ResponseBody::UnloadModelResult, "UnloadModel", {});
}

const char* library_version() {
  return RECON_CLIENT_VERSION;
}
unsigned protocol_version() {
  return wire::kProtocolVersion;
}

}  // namespace recon::client
