// ResultState: handle bookkeeping, lazy fetches into the output arena, RAII release.
#include "result_state.h"

#include <algorithm>

namespace recon::client::detail {
namespace {

Error internal(const std::string& message) {
  return Error(ErrorCode::kInternal, ErrorSource::kConnection, message);
}

}  // namespace

std::unique_ptr<ResultState> ResultState::from_wire(std::shared_ptr<Core> core, const wire::ResultHandle* handle,
                                                    std::chrono::nanoseconds round_trip) {
  if (handle == nullptr) throw internal("recond answered InferPair without a result handle");
  std::unique_ptr<ResultState> state(new ResultState());
  state->core_ = std::move(core);
  state->handle_ = detail::from_wire(handle->id());
  if (state->handle_.is_zero()) throw internal("recond answered with a result handle without an id");
  state->round_trip_ = round_trip;
  state->model_ = handle->model() != nullptr ? handle->model()->str() : "";
  state->ttl_ = std::chrono::milliseconds(handle->ttl_ms());
  if (const wire::Timings* t = handle->timings()) {
    state->timings_.queue = std::chrono::nanoseconds(t->queue_ns());
    state->timings_.input = std::chrono::nanoseconds(t->input_ns());
    state->timings_.compute = std::chrono::nanoseconds(t->compute_ns());
    state->timings_.output = std::chrono::nanoseconds(t->output_ns());
    state->timings_.total = std::chrono::nanoseconds(t->total_ns());
    state->timings_.batch_size = t->batch_size();
  }
  if (handle->tensors() != nullptr) {
    for (const wire::TensorInfo* info : *handle->tensors()) {
      TensorInfo out;
      out.name = info->name() != nullptr ? info->name()->str() : "";
      if (info->shape() != nullptr) out.shape.assign(info->shape()->begin(), info->shape()->end());
      out.dtype = static_cast<DType>(info->dtype());
      out.byte_size = info->byte_size();
      // The size must be what shape and dtype say: it decides how much of our memory a view spans.
      const size_t element = dtype_size(out.dtype);
      if (element == 0 || out.name.empty() || out.elements() * element != out.byte_size) {
        throw internal("recond described tensor '" + out.name + "' inconsistently (shape, dtype and byte_size)");
      }
      state->tensors_.push_back(std::move(out));
    }
  }
  state->fetched_.resize(state->tensors_.size());
  return state;
}

ResultState::~ResultState() {
  release();
  for (const OutputArena::Block& block : blocks_) core_->arena().free(block);
}

int ResultState::index_of(std::string_view name) const {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::span<const std::byte> ResultState::bytes(int index) {
  std::lock_guard lock(mutex_);
  if (!fetched_[static_cast<size_t>(index)]) fetch_locked({index}, false);
  return *fetched_[static_cast<size_t>(index)];
}

void ResultState::fetch(const std::vector<int>& indices, bool release_after) {
  std::lock_guard lock(mutex_);
  std::vector<int> missing;
  for (int i : indices) {
    if (!fetched_[static_cast<size_t>(i)] && std::find(missing.begin(), missing.end(), i) == missing.end()) {
      missing.push_back(i);
    }
  }
  if (missing.empty()) {
    if (release_after && !released_) {
      released_ = true;
      core_->release_async(handle_);
    }
    return;
  }
  fetch_locked(missing, release_after);
}

void ResultState::fetch_locked(const std::vector<int>& indices, bool release_after) {
  if (released_) {
    throw Error(ErrorCode::kNotFound, ErrorSource::kClient,
                "result handle " + handle_.hex().substr(0, 8) + "… was released; its tensors can no longer be fetched");
  }
  core_->check_open();
  uint64_t need = 0;
  for (int i : indices) need += align_up(tensors_[static_cast<size_t>(i)].byte_size, OutputArena::kAlignment);
  const OutputArena::Block block = core_->arena().allocate(need);
  bool keep_block = false;
  try {
    flatbuffers::FlatBufferBuilder builder(512);
    std::vector<flatbuffers::Offset<flatbuffers::String>> names;
    names.reserve(indices.size());
    for (int i : indices) names.push_back(builder.CreateString(tensors_[static_cast<size_t>(i)].name));
    const auto name_vector = builder.CreateVector(names);
    const wire::Id128 region = to_wire(block.region);
    const auto destination = wire::CreateRegionDestination(builder, &region, block.offset, block.size,
                                                           static_cast<uint32_t>(OutputArena::kAlignment));
    const wire::Id128 handle = to_wire(handle_);
    const auto body = wire::CreateFetch(builder, &handle, name_vector, wire::FetchDestination::RegionDestination,
                                        destination.Union(), release_after);
    const uint64_t request_id = core_->next_request_id();
    finish_request(builder, request_id, core_->session(), wire::RequestBody::Fetch, body.Union());
    const Answer answer =
        core_->call(Target::kClient, builder, request_id, wire::ResponseBody::FetchResult, "Fetch", {});
    const wire::FetchResult* result = answer.response->body_as_FetchResult();

    // Every requested tensor must come back, inside our block, with the size we expect: the
    // views we hand out must never reach outside memory this Result owns.
    std::vector<std::optional<std::span<const std::byte>>> got(tensors_.size());
    if (result->tensors() != nullptr) {
      for (const wire::FetchedTensor* t : *result->tensors()) {
        const wire::TensorInfo* info = t->info();
        const std::string name = info != nullptr && info->name() != nullptr ? info->name()->str() : "";
        const int index = index_of(name);
        if (index < 0 || std::find(indices.begin(), indices.end(), index) == indices.end()) {
          throw internal("recond's Fetch answer holds tensor '" + name + "', which was not asked for");
        }
        const uint64_t size = tensors_[static_cast<size_t>(index)].byte_size;
        if (info->byte_size() != size) throw internal("recond fetched '" + name + "' with a different size");
        if (t->offset() < block.offset || t->offset() - block.offset > block.size ||
            size > block.size - (t->offset() - block.offset)) {
          throw internal("recond placed '" + name + "' outside the destination it was given");
        }
        got[static_cast<size_t>(index)] = std::span<const std::byte>(block.base + t->offset(), size);
      }
    }
    for (int i : indices) {
      if (!got[static_cast<size_t>(i)]) {
        throw internal("recond's Fetch answer lacks tensor '" + tensors_[static_cast<size_t>(i)].name + "'");
      }
    }
    for (int i : indices) fetched_[static_cast<size_t>(i)] = got[static_cast<size_t>(i)];
    keep_block = true;
    blocks_.push_back(block);
    fetched_bytes_ += result->bytes_written();
    copy_time_ += std::chrono::nanoseconds(result->copy_ns());
    if (release_after) released_ = true;
  } catch (...) {
    if (!keep_block) core_->arena().free(block);
    throw;
  }
}

void ResultState::release() noexcept {
  std::lock_guard lock(mutex_);
  if (released_) return;
  released_ = true;
  core_->release_async(handle_);
}

bool ResultState::released() const {
  std::lock_guard lock(mutex_);
  return released_;
}

uint64_t ResultState::fetched_bytes() const {
  std::lock_guard lock(mutex_);
  return fetched_bytes_;
}

std::chrono::nanoseconds ResultState::copy_time() const {
  std::lock_guard lock(mutex_);
  return copy_time_;
}

}  // namespace recon::client::detail
