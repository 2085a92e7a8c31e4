// Builders for the success answers the server sends (the Error envelope is error_response in
// daemon/ipc/wire_convert.h). Each returns a finished Response buffer. No state, no I/O.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "daemon/ipc/id128.h"
#include "daemon/serving/device.h"
#include "daemon/serving/jobs/job.h"
#include "daemon/serving/metrics.h"
#include "daemon/serving/model_answer.h"
#include "daemon/serving/result_store.h"
#include "gpu/models/mast3r/mast3r_batch_plan.h"
#include "schema/response_generated.h"

namespace recon::daemon {

wire::DType to_wire(gpu::DType dtype);
wire::ModelState to_wire(ModelState state);
wire::Precision to_wire(gpu::Precision precision);

flatbuffers::Offset<wire::TensorInfo> build_tensor_info(flatbuffers::FlatBufferBuilder& builder,
                                                        const StoredTensor& tensor);
// `counters`: the model's since start (GetStatus); zero where an answer has none (LoadModel, Warmup).
flatbuffers::Offset<wire::ModelStatus> build_model_status(flatbuffers::FlatBufferBuilder& builder,
                                                          const ModelInfo& model, const ModelCounters& counters = {});

flatbuffers::Offset<wire::ResultHandle> build_result_handle(flatbuffers::FlatBufferBuilder& builder,
                                                            const StoredResult& result);

// The renderers of a model's answer (AnswerRenderer), one per verb that asks a model for a result:
// the generic Infer, and the released InferPair, EncodeRetrieval (with the answer's top-k pairs)
// and Match (its match count is the rows of matches_1).
std::vector<uint8_t> infer_response(uint64_t request_id, const ModelAnswer& answer);
std::vector<uint8_t> infer_pair_response(uint64_t request_id, const ModelAnswer& answer);
std::vector<uint8_t> encode_retrieval_response(uint64_t request_id, const ModelAnswer& answer);
std::vector<uint8_t> match_response(uint64_t request_id, const ModelAnswer& answer);
// InferBatch's answers, whole or streamed (a PairsRenderer).
std::vector<uint8_t> infer_batch_response(uint64_t request_id, const PairsAnswer& answer);

struct FetchedRange {
  size_t tensor = 0;                           // index into result.tensors
  uint64_t offset = 0;                         // region destination
  const std::vector<uint8_t>* data = nullptr;  // inline destination
};
std::vector<uint8_t> fetch_response(uint64_t request_id, const StoredResult& result,
                                    const std::vector<FetchedRange>& ranges, uint64_t copy_ns, bool released);

struct SessionLimitsView {
  uint32_t max_regions = 0;
  uint64_t max_region_bytes = 0;
  uint32_t max_handles = 0;
  uint64_t max_result_bytes = 0;
  uint64_t max_message_bytes = 0;
};
std::vector<uint8_t> session_opened_response(uint64_t request_id, const Id128& token, const SessionLimitsView& limits,
                                             const std::string& server_version);
std::vector<uint8_t> release_response(uint64_t request_id, uint32_t released, const std::vector<Id128>& not_found);
std::vector<uint8_t> unregister_region_response(uint64_t request_id, bool deferred);
std::vector<uint8_t> warmup_response(uint64_t request_id, const std::vector<ModelInfo>& models, uint32_t duration_ms);
std::vector<uint8_t> load_model_response(uint64_t request_id, const ModelInfo& model, uint32_t duration_ms);
std::vector<uint8_t> unload_model_response(uint64_t request_id);

// A job's event: progress (`result` null, sent with final = false) or its end (with its outputs).
std::vector<uint8_t> job_event_response(uint64_t request_id, const JobProgress& progress, uint64_t elapsed_ms,
                                        const StoredResult* result, bool final);
std::vector<uint8_t> cancel_job_response(uint64_t request_id, bool cancelled);

}  // namespace recon::daemon
