// runtime.h's sequences: ops recorded as closures (each checked against a scratch graph when
// recorded); the first submit records them all into one gpu::Graph, with the barriers their data
// dependencies need, and every submit replays that recording.
#include "state.h"

using namespace recon;
using namespace recon::runtime_c;

namespace {

// Ends a run in flight: waits for it and releases its tensors for host access. Caller holds the
// context's mutex.
Status finish(recon_sequence& s) {
  if (!s.in_flight) return Status::ok();
  Status waited = s.graph->wait(s.submitted);
  s.in_flight = false;  // also after a failed wait (device lost): nothing more will come of it
  for (auto& t : s.tensors) --t->in_flight;
  return waited;
}

}  // namespace

extern "C" {

recon_status recon_sequence_create(recon_context* context, recon_sequence** out) {
  if (out == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_sequence_create: out is NULL");
  *out = nullptr;
  if (context == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_sequence_create: context is NULL");
  return guarded([&] {
    auto* s = new recon_sequence;
    s->context = context->state;
    *out = s;
    return RECON_OK;
  });
}

recon_status recon_sequence_submit(recon_sequence* sequence) {
  constexpr const char* kFn = "recon_sequence_submit";
  if (sequence == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_sequence_submit: sequence is NULL");
  return guarded([&] {
    std::shared_ptr<ContextState> ctx = sequence->context;
    std::lock_guard lock(ctx->mutex());
    if (sequence->in_flight) {
      return fail(
          RECON_INVALID_ARGUMENT,
          "recon_sequence_submit: the sequence is in flight; call recon_sequence_wait before submitting it again");
    }
    if (sequence->ops.empty()) return fail(RECON_INVALID_ARGUMENT, "recon_sequence_submit: the sequence is empty");
    if (sequence->graph == nullptr) {
      auto graph = std::make_unique<gpu::Graph>(ctx->runtime());
      for (size_t i = 0; i < sequence->ops.size(); ++i) {
        Status recorded = sequence->ops[i](*graph);
        // Each op recorded cleanly on its own when it was added; what fails here is the device
        // (memory, a lost device), so the code is kept.
        if (!recorded.is_ok()) return fail(kFn, recorded.with_context("recording op " + std::to_string(i)));
      }
      sequence->graph = std::move(graph);
    }
    Result<uint64_t> value = sequence->graph->submit();
    if (!value.is_ok()) return fail(kFn, value.status());
    sequence->submitted = *value;
    sequence->in_flight = true;
    for (auto& t : sequence->tensors) ++t->in_flight;
    return RECON_OK;
  });
}

recon_status recon_sequence_wait(recon_sequence* sequence) {
  if (sequence == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_sequence_wait: sequence is NULL");
  return guarded([&] {
    std::shared_ptr<ContextState> ctx = sequence->context;
    std::lock_guard lock(ctx->mutex());
    return fail("recon_sequence_wait", finish(*sequence));
  });
}

recon_status recon_sequence_op_count(const recon_sequence* sequence, uint32_t* count) {
  if (sequence == nullptr || count == nullptr) {
    return fail(RECON_INVALID_ARGUMENT, "recon_sequence_op_count: sequence or count is NULL");
  }
  std::shared_ptr<ContextState> ctx = sequence->context;
  std::lock_guard lock(ctx->mutex());
  *count = static_cast<uint32_t>(sequence->ops.size());
  return RECON_OK;
}

void recon_sequence_release(recon_sequence* sequence) {
  if (sequence == nullptr) return;
  std::shared_ptr<ContextState> ctx = sequence->context;
  std::lock_guard lock(ctx->mutex());
  (void)finish(*sequence);
  delete sequence;
}

}  // extern "C"
