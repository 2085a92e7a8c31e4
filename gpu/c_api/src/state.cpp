#include "state.h"

#include <algorithm>
#include <exception>
#include <new>

namespace recon::runtime_c {
namespace {

thread_local std::string g_last_error;

recon_status status_of(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return RECON_OK;
    case StatusCode::kInvalidArgument:
      return RECON_INVALID_ARGUMENT;
    case StatusCode::kNotFound:
      return RECON_NOT_FOUND;
    case StatusCode::kPermissionDenied:
      return RECON_PERMISSION_DENIED;
    case StatusCode::kResourceExhausted:
      return RECON_RESOURCE_EXHAUSTED;
    case StatusCode::kUnavailable:
      return RECON_UNAVAILABLE;
    case StatusCode::kInternal:
      return RECON_INTERNAL;
    case StatusCode::kDataLoss:
      return RECON_DATA_LOSS;
    case StatusCode::kUnimplemented:
      return RECON_UNIMPLEMENTED;
    case StatusCode::kCancelled:
      return RECON_CANCELLED;
  }
  return RECON_UNKNOWN;
}

}  // namespace

recon_status fail(recon_status status, std::string message) {
  g_last_error = std::move(message);
  return status;
}

recon_status fail(const char* function, const Status& status) {
  if (status.is_ok()) return RECON_OK;
  return fail(status_of(status.code()), std::string(function) + ": " + status.message());
}

const std::string& last_error() {
  return g_last_error;
}

recon_status guarded(const std::function<recon_status()>& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(RECON_RESOURCE_EXHAUSTED, "out of host memory");
  } catch (const std::exception& e) {
    return fail(RECON_INTERNAL, e.what());
  } catch (...) {
    return fail(RECON_INTERNAL, "unknown exception");
  }
}

std::string dtype_string(recon_dtype dtype) {
  switch (dtype) {
    case RECON_F32:
      return "RECON_F32";
    case RECON_F16:
      return "RECON_F16";
    case RECON_BF16:
      return "RECON_BF16";
    case RECON_U8:
      return "RECON_U8";
    case RECON_I32:
      return "RECON_I32";
    case RECON_U32:
      return "RECON_U32";
    case RECON_I64:
      return "RECON_I64";
  }
  return "dtype " + std::to_string(static_cast<int>(dtype));
}

std::string dtype_string(gpu::DType dtype) {
  return dtype == gpu::DType::kF16 ? "RECON_F16" : dtype == gpu::DType::kF32 ? "RECON_F32" : gpu::dtype_name(dtype);
}

Status check_tensor(const recon_context* context, const recon_tensor* tensor, const char* what, bool optional) {
  if (tensor == nullptr) {
    return optional ? Status::ok() : invalid_argument(std::string(what) + " is NULL");
  }
  if (tensor->state->context != context->state) {
    return invalid_argument(std::string(what) + " is a tensor of another context");
  }
  return Status::ok();
}

Status ContextState::run_now(const std::string& key, std::vector<uint64_t> tensor_ids, const Recorder& record) {
  auto it = std::find_if(immediate_.begin(), immediate_.end(), [&](const CachedOp& op) { return op.key == key; });
  if (it != immediate_.end()) {
    immediate_.splice(immediate_.begin(), immediate_, it);
  } else {
    auto graph = std::make_unique<gpu::Graph>(*runtime_);
    RECON_RETURN_IF_ERROR(record(*graph));
    if (immediate_.size() >= kMaxCachedOps) immediate_.pop_back();
    immediate_.push_front(CachedOp{key, std::move(tensor_ids), std::move(graph)});
  }
  return immediate_.front().graph->run();
}

void ContextState::forget_tensor(uint64_t id) {
  immediate_.remove_if([&](const CachedOp& op) {
    return std::find(op.tensor_ids.begin(), op.tensor_ids.end(), id) != op.tensor_ids.end();
  });
}

recon_status run_or_record(const char* function, recon_context* context, recon_sequence* sequence,
                           const std::string& key, std::initializer_list<Operand> operands, Recorder record) {
  std::shared_ptr<ContextState> ctx = context->state;
  std::lock_guard lock(ctx->mutex());
  if (sequence != nullptr) {
    if (sequence->context != ctx)
      return fail(RECON_INVALID_ARGUMENT, std::string(function) + ": the sequence belongs to another context");
    if (sequence->graph != nullptr) {
      return fail(RECON_INVALID_ARGUMENT,
                  std::string(function) + ": the sequence was submitted, which sealed it; record into a new sequence");
    }
    {
      gpu::Graph scratch(ctx->runtime());
      Status checked = record(scratch);
      if (!checked.is_ok()) return fail(function, checked);
    }
    sequence->ops.push_back(std::move(record));
    for (const Operand& o : operands) {
      const recon_tensor* t = o.tensor;
      if (t == nullptr) continue;
      if (std::find(sequence->tensors.begin(), sequence->tensors.end(), t->state) == sequence->tensors.end()) {
        sequence->tensors.push_back(t->state);
      }
    }
    return RECON_OK;
  }
  std::vector<uint64_t> ids;
  std::string full_key = key;
  for (const Operand& o : operands) {
    const recon_tensor* t = o.tensor;
    if (t == nullptr) {
      full_key += " -";
      continue;
    }
    if (t->state->in_flight > 0) {
      return fail(RECON_INVALID_ARGUMENT, std::string(function) + ": " + o.name +
                                              " is used by a submitted sequence; call recon_sequence_wait first");
    }
    ids.push_back(t->state->id);
    full_key += " " + std::to_string(t->state->id);
  }
  return fail(function, ctx->run_now(full_key, std::move(ids), record));
}

}  // namespace recon::runtime_c
