// Success answers: see responses.h.
#include "daemon/server/responses.h"

#include "daemon/ipc/wire_convert.h"
#include "schema/protocol.h"

namespace recon::daemon {

wire::DType to_wire(gpu::DType dtype) {
  switch (dtype) {
    case gpu::DType::kF32:
      return wire::DType::F32;
    case gpu::DType::kF16:
      return wire::DType::F16;
    case gpu::DType::kU8:
      return wire::DType::U8;
    case gpu::DType::kI32:
      return wire::DType::I32;
  }
  return wire::DType::F32;
}

wire::ModelState to_wire(ModelState state) {
  switch (state) {
    case ModelState::kLoading:
      return wire::ModelState::LOADING;
    case ModelState::kWarming:
      return wire::ModelState::WARMING;
    case ModelState::kReady:
      return wire::ModelState::READY;
    case ModelState::kFailed:
      return wire::ModelState::FAILED;
    case ModelState::kUnloading:
      return wire::ModelState::UNLOADING;
  }
  return wire::ModelState::FAILED;
}

wire::Precision to_wire(gpu::Precision precision) {
  switch (precision) {
    case gpu::Precision::kF32:
      return wire::Precision::FP32;
    case gpu::Precision::kF32Split:
      return wire::Precision::FP32_SPLIT;
    case gpu::Precision::kF16:
      return wire::Precision::FP16;
    case gpu::Precision::kF16Heads:
      return wire::Precision::FP16_HEADS;
  }
  return wire::Precision::FP32;
}

flatbuffers::Offset<wire::TensorInfo> build_tensor_info(flatbuffers::FlatBufferBuilder& builder,
                                                        const StoredTensor& tensor) {
  return wire::CreateTensorInfoDirect(builder, tensor.name.c_str(), &tensor.shape, to_wire(tensor.dtype), tensor.bytes);
}

flatbuffers::Offset<wire::ModelStatus> build_model_status(flatbuffers::FlatBufferBuilder& builder,
                                                          const ModelInfo& model, const ModelCounters& counters) {
  std::vector<wire::Resolution> resolutions;
  for (const ImageSize& r : model.resolutions) resolutions.emplace_back(r.height, r.width);
  std::vector<flatbuffers::Offset<flatbuffers::String>> inputs, outputs;
  for (const std::string& name : model.inputs) inputs.push_back(builder.CreateString(name));
  for (const std::string& name : model.outputs) outputs.push_back(builder.CreateString(name));
  const bool images = model.kind == "mast3r" || model.kind == "retrieval";  // kinds fed prepared images
  return wire::CreateModelStatusDirect(
      builder, model.name.c_str(), model.kind.c_str(), to_wire(model.state), to_wire(model.precision), &resolutions,
      model.weight_bytes, model.error.empty() ? nullptr : model.error.c_str(), model.version, &inputs, &outputs,
      model.batching.max_rows, static_cast<uint32_t>(model.batching.max_wait.count()), counters.requests,
      counters.inferences, counters.executions, counters.queue_us, counters.compute_us,
      images ? model.default_long_side : 0, images ? model.patch_size : 0, images && model.square_ok);
}

flatbuffers::Offset<wire::ResultHandle> build_result_handle(flatbuffers::FlatBufferBuilder& builder,
                                                            const StoredResult& result) {
  std::vector<flatbuffers::Offset<wire::TensorInfo>> infos;
  infos.reserve(result.tensors.size());
  for (const StoredTensor& t : result.tensors) infos.push_back(build_tensor_info(builder, t));
  const RequestTimings& t = result.timings;
  const auto timings =
      wire::CreateTimings(builder, t.queue_ns, t.input_ns, t.compute_ns, t.output_ns, t.total_ns, t.batch_size);
  const wire::Id128 id = to_wire(result.id);
  return wire::CreateResultHandleDirect(builder, &id, &infos, timings, result.ttl_ms, result.model.c_str());
}

std::vector<uint8_t> infer_response(uint64_t request_id, const ModelAnswer& answer) {
  flatbuffers::FlatBufferBuilder builder(1024);
  const auto handle = build_result_handle(builder, answer.result);
  const auto body = wire::CreateInferResult(builder, handle);
  finish_response(builder, request_id, wire::ResponseBody::InferResult, body.Union());
  return to_bytes(builder);
}

std::vector<uint8_t> infer_pair_response(uint64_t request_id, const ModelAnswer& answer) {
  flatbuffers::FlatBufferBuilder builder(1024);
  const auto handle = build_result_handle(builder, answer.result);
  const auto body = wire::CreateInferPairResult(builder, handle);
  finish_response(builder, request_id, wire::ResponseBody::InferPairResult, body.Union());
  return to_bytes(builder);
}

std::vector<uint8_t> infer_batch_response(uint64_t request_id, const PairsAnswer& answer) {
  flatbuffers::FlatBufferBuilder builder(1024 * (answer.results.size() + 1));
  std::vector<flatbuffers::Offset<wire::ResultHandle>> handles;
  handles.reserve(answer.results.size());
  for (const StoredResult* r : answer.results) handles.push_back(build_result_handle(builder, *r));
  std::vector<wire::ImagePair> wire_pairs;
  wire_pairs.reserve(answer.pairs.size());
  for (const gpu::ImagePair& p : answer.pairs) {
    wire_pairs.emplace_back(static_cast<uint32_t>(p.first), static_cast<uint32_t>(p.second));
  }
  const auto body = wire::CreateInferBatchResultDirect(builder, &handles, &wire_pairs, answer.first_index);
  finish_response(builder, request_id, wire::ResponseBody::InferBatchResult, body.Union(), answer.final);
  return to_bytes(builder);
}

std::vector<uint8_t> encode_retrieval_response(uint64_t request_id, const ModelAnswer& answer) {
  static const std::vector<std::pair<uint32_t, uint32_t>> kNoPairs;
  static const std::vector<float> kNoScores;
  const auto& pairs = answer.pairs != nullptr ? *answer.pairs : kNoPairs;
  const auto& scores = answer.scores != nullptr ? *answer.scores : kNoScores;
  flatbuffers::FlatBufferBuilder builder(1024 + 12 * pairs.size());
  const auto handle = build_result_handle(builder, answer.result);
  std::vector<wire::ImagePair> wire_pairs;
  wire_pairs.reserve(pairs.size());
  for (const auto& [first, second] : pairs) wire_pairs.emplace_back(first, second);
  const auto body = wire::CreateEncodeRetrievalResultDirect(builder, handle, &wire_pairs, &scores);
  finish_response(builder, request_id, wire::ResponseBody::EncodeRetrievalResult, body.Union());
  return to_bytes(builder);
}

std::vector<uint8_t> match_response(uint64_t request_id, const ModelAnswer& answer) {
  // A match result's rows: matches_1 is [K, 2].
  const StoredTensor* matches = answer.result.find("matches_1");
  const uint64_t count = matches != nullptr && !matches->shape.empty() ? matches->shape.front() : 0;
  flatbuffers::FlatBufferBuilder builder(1024);
  const auto handle = build_result_handle(builder, answer.result);
  const auto body = wire::CreateMatchResult(builder, handle, static_cast<uint32_t>(count));
  finish_response(builder, request_id, wire::ResponseBody::MatchResult, body.Union());
  return to_bytes(builder);
}

std::vector<uint8_t> fetch_response(uint64_t request_id, const StoredResult& result,
                                    const std::vector<FetchedRange>& ranges, uint64_t copy_ns, bool released) {
  size_t inline_bytes = 0;
  for (const FetchedRange& r : ranges) inline_bytes += r.data ? r.data->size() : 0;
  flatbuffers::FlatBufferBuilder builder(1024 + inline_bytes);
  std::vector<flatbuffers::Offset<wire::FetchedTensor>> tensors;
  uint64_t written = 0;
  for (const FetchedRange& r : ranges) {
    const StoredTensor& t = result.tensors[r.tensor];
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> data;
    if (r.data) {
      builder.ForceVectorAlignment(r.data->size(), sizeof(uint8_t), 16);  // readable as floats in place
      data = builder.CreateVector(*r.data);
    }
    const auto info = build_tensor_info(builder, t);
    tensors.push_back(wire::CreateFetchedTensor(builder, info, r.offset, data));
    written += t.bytes;
  }
  const wire::Id128 id = to_wire(result.id);
  const auto body = wire::CreateFetchResultDirect(builder, &id, &tensors, written, copy_ns, released);
  finish_response(builder, request_id, wire::ResponseBody::FetchResult, body.Union());
  return to_bytes(builder);
}

std::vector<uint8_t> session_opened_response(uint64_t request_id, const Id128& token, const SessionLimitsView& limits,
                                             const std::string& server_version) {
  flatbuffers::FlatBufferBuilder builder(256);
  const auto wire_limits =
      wire::CreateSessionLimits(builder, limits.max_regions, limits.max_region_bytes, limits.max_handles,
                                limits.max_result_bytes, limits.max_message_bytes);
  const wire::Id128 id = to_wire(token);
  const auto body = wire::CreateSessionOpenedDirect(builder, &id, wire_limits, server_version.c_str(),
                                                    wire::kMinProtocolVersion, wire::kProtocolVersion);
  finish_response(builder, request_id, wire::ResponseBody::SessionOpened, body.Union());
  return to_bytes(builder);
}

std::vector<uint8_t> release_response(uint64_t request_id, uint32_t released, const std::vector<Id128>& not_found) {
  flatbuffers::FlatBufferBuilder builder(256);
  std::vector<wire::Id128> ids;
  ids.reserve(not_found.size());
  for (const Id128& id : not_found) ids.push_back(to_wire(id));
  const auto body = wire::CreateReleaseResultDirect(builder, released, &ids);
  finish_response(builder, request_id, wire::ResponseBody::ReleaseResult, body.Union());
  return to_bytes(builder);
}

std::vector<uint8_t> unregister_region_response(uint64_t request_id, bool deferred) {
  flatbuffers::FlatBufferBuilder builder(128);
  const auto body = wire::CreateUnregisterRegionResult(builder, deferred);
  finish_response(builder, request_id, wire::ResponseBody::UnregisterRegionResult, body.Union());
  return to_bytes(builder);
}

std::vector<uint8_t> warmup_response(uint64_t request_id, const std::vector<ModelInfo>& models, uint32_t duration_ms) {
  flatbuffers::FlatBufferBuilder builder(512);
  std::vector<flatbuffers::Offset<wire::ModelStatus>> statuses;
  statuses.reserve(models.size());
  for (const ModelInfo& m : models) statuses.push_back(build_model_status(builder, m));
  const auto body = wire::CreateWarmupResultDirect(builder, &statuses, duration_ms);
  finish_response(builder, request_id, wire::ResponseBody::WarmupResult, body.Union());
  return to_bytes(builder);
}

std::vector<uint8_t> load_model_response(uint64_t request_id, const ModelInfo& model, uint32_t duration_ms) {
  flatbuffers::FlatBufferBuilder builder(512);
  const auto status = build_model_status(builder, model);
  const auto body = wire::CreateLoadModelResult(builder, status, duration_ms);
  finish_response(builder, request_id, wire::ResponseBody::LoadModelResult, body.Union());
  return to_bytes(builder);
}

std::vector<uint8_t> unload_model_response(uint64_t request_id) {
  flatbuffers::FlatBufferBuilder builder(64);
  const auto body = wire::CreateUnloadModelResult(builder);
  finish_response(builder, request_id, wire::ResponseBody::UnloadModelResult, body.Union());
  return to_bytes(builder);
}

std::vector<uint8_t> job_event_response(uint64_t request_id, const JobProgress& progress, uint64_t elapsed_ms,
                                        const StoredResult* result, bool final) {
  flatbuffers::FlatBufferBuilder builder(result != nullptr ? 1024 : 256);
  const auto stage = builder.CreateString(progress.stage);
  const auto message = progress.message.empty() ? 0 : builder.CreateString(progress.message);
  const auto handle = result != nullptr ? build_result_handle(builder, *result) : 0;
  const auto body =
      wire::CreateJobEvent(builder, stage, progress.done, progress.total, progress.loss, message, elapsed_ms, handle);
  finish_response(builder, request_id, wire::ResponseBody::JobEvent, body.Union(), final);
  return to_bytes(builder);
}

std::vector<uint8_t> cancel_job_response(uint64_t request_id, bool cancelled) {
  flatbuffers::FlatBufferBuilder builder(64);
  const auto body = wire::CreateCancelJobResult(builder, cancelled);
  finish_response(builder, request_id, wire::ResponseBody::CancelJobResult, body.Union());
  return to_bytes(builder);
}

}  // namespace recon::daemon
