// ModelRequest: one request for one result of a model, whatever verb carried it — the generic
// Infer (named inputs, parameters), or a released verb (InferPair, EncodeRetrieval, Match) that
// the transport turns into the same thing. Admission fills it once on the I/O thread: the model is
// ready, images are accepted (leased or copied), result references are resolved to results of the
// request's own session, a handle is reserved. The model's kind then reads its inputs and
// parameters, makes the work its instances run and submits it (ModelKind::admit); the helpers below are what
// every kind's admission uses, so that a misnamed or missing input reads the same for all kinds.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "daemon/serving/image_input.h"
#include "daemon/serving/model.h"
#include "daemon/serving/parameters.h"
#include "daemon/serving/request_context.h"
#include "daemon/serving/result_store.h"
#include "daemon/serving/scheduler.h"
#include "daemon/serving/server_options.h"
#include "daemon/serving/tensor_input.h"
#include "daemon/serving/work_items.h"
#include "gpu/status.h"

namespace recon::daemon {

// A result of the same session as an input: one of its tensors, or all of them.
struct ResultInput {
  std::shared_ptr<const StoredResult> result;  // kept alive by the request: a Release cannot free it
  std::string tensor;                          // empty: the whole result
};

struct ModelInput {
  std::string name;  // a name given several times is a list, in order
  std::variant<PendingImage, ResultInput, PendingTensor> value;
};

struct ModelRequest {
  std::string verb;  // for messages: "Infer", "InferPair", ...
  RequestContext context;
  ModelInfo model;
  std::vector<ModelInput> inputs;
  std::vector<std::string> outputs;  // empty = all
  Parameters parameters;
  HandleReservation reservation;
  const ServerLimits* limits = nullptr;  // the daemon's (max images, max matches)
  // The daemon's batching of MASt3R pairs (--max-batch, --batch-wait-us); models with a batching
  // config of their own carry it in `model.batching`.
  BatchRule pair_batching;
};

// Takes every input named `name` out of `request`, in order. INVALID_ARGUMENT when one is not an
// image, or when there are fewer than `min` or more than `max`.
Result<std::vector<PendingImage>> take_images(ModelRequest& request, std::string_view name, size_t min, size_t max);
// Exactly one image named `name`.
Result<PendingImage> take_image(ModelRequest& request, std::string_view name);
// Exactly one result reference named `name`.
Result<ResultInput> take_result(ModelRequest& request, std::string_view name);
// Exactly one input named `name`, whatever it holds (for kinds that take tensors or results).
Result<ModelInput> take_input(ModelRequest& request, std::string_view name);
// After a kind took what it reads: INVALID_ARGUMENT naming an input it does not read (`reads`
// lists those it does, for the message).
Status check_no_other_inputs(const ModelRequest& request, std::string_view reads);
// "model 'name' (kind)", for messages.
std::string model_label(const ModelRequest& request);

}  // namespace recon::daemon
