// The InferOptions every inference request carries (InferPair, InferBatch, EncodeRetrieval),
// checked once at admission against the model: output resolution, output names, precision, TTL
// and deadline.
// Runs on the I/O thread; pure (no I/O, no state).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "daemon/server/wire_inputs.h"
#include "daemon/serving/model.h"
#include "daemon/serving/parameters.h"
#include "daemon/serving/request_context.h"
#include "daemon/serving/result_store.h"
#include "daemon/serving/server_options.h"
#include "gpu/status.h"
#include "schema/request_generated.h"

namespace recon::daemon {

struct InferSettings {
  ImageRules rules;                  // how images are prepared (long side, required size)
  std::vector<std::string> outputs;  // empty = all
  RequestContext context;            // `target`, the handle TTL (asked, capped by the daemon's), the deadline
};

// INVALID_ARGUMENT for a resolution that is not a multiple of the patch size (or too large) or
// an unknown output; UNIMPLEMENTED for a precision other than the model's. `options` may be null.
Result<InferSettings> infer_settings(const wire::InferOptions* options, const ModelInfo& model,
                                     const ServerLimits& limits, const ReplyTarget& target);

// A request's parameters by name (Infer, StartJob); INVALID_ARGUMENT for a name given twice.
Result<Parameters> request_parameters(const flatbuffers::Vector<flatbuffers::Offset<wire::Parameter>>* parameters,
                                      const char* verb);

// The model a request names: empty = `fallback`.
std::string model_name(const flatbuffers::String* name, const char* fallback);

}  // namespace recon::daemon
