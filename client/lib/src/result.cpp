// Result, PendingResult (and the PendingCall all pending answers share) and TensorView: the public
// face of result handles.
#include "recon/client/result.h"

#include <cstring>

#include "half_float.h"
#include "result_state.h"

namespace recon::client {

// ---- TensorView ---------------------------------------------------------------------------------

void TensorView::check_type(size_t element_size, int tag) const {
  if (info_ == nullptr) throw Error(ErrorCode::kInvalidArgument, ErrorSource::kClient, "empty TensorView");
  int expected = -1;
  switch (info_->dtype) {
    case DType::kF32:
      expected = 0;
      break;
    case DType::kF16:
    case DType::kBF16:
      expected = 1;
      break;
    case DType::kU8:
      expected = 2;
      break;
    case DType::kI32:
      expected = 3;
      break;
    case DType::kU32:
      expected = 4;
      break;
    case DType::kI64:
      expected = 5;
      break;
  }
  if (tag != expected || element_size != dtype_size(info_->dtype)) {
    throw Error(ErrorCode::kInvalidArgument, ErrorSource::kClient,
                "tensor '" + info_->name + "' holds " + dtype_name(info_->dtype) + " elements");
  }
}

std::vector<float> TensorView::to_float() const {
  if (info_ == nullptr) return {};
  const size_t n = static_cast<size_t>(elements());
  std::vector<float> out(n);
  switch (info_->dtype) {
    case DType::kF32:
      std::memcpy(out.data(), bytes_.data(), n * sizeof(float));
      break;
    case DType::kF16: {
      const auto bits = as<uint16_t>();
      for (size_t i = 0; i < n; ++i) out[i] = detail::half_to_float(bits[i]);
      break;
    }
    case DType::kBF16: {
      const auto bits = as<uint16_t>();
      for (size_t i = 0; i < n; ++i) out[i] = detail::bfloat16_to_float(bits[i]);
      break;
    }
    default:
      throw Error(ErrorCode::kInvalidArgument, ErrorSource::kClient,
                  "tensor '" + info_->name + "' holds " + dtype_name(info_->dtype) + ", not floating-point elements");
  }
  return out;
}

// ---- Result -------------------------------------------------------------------------------------

namespace {

detail::ResultState& checked(const std::unique_ptr<detail::ResultState>& state) {
  if (!state) throw Error(ErrorCode::kInvalidArgument, ErrorSource::kClient, "use of an empty Result");
  return *state;
}

}  // namespace

Result::Result() = default;
Result::Result(std::unique_ptr<detail::ResultState> state) : state_(std::move(state)) {}
Result::Result(Result&&) noexcept = default;
Result& Result::operator=(Result&&) noexcept = default;
Result::~Result() = default;

const std::string& Result::model() const {
  return checked(state_).model();
}
const std::vector<TensorInfo>& Result::tensors() const {
  return checked(state_).tensors();
}
const Timings& Result::timings() const {
  return checked(state_).timings();
}
std::chrono::nanoseconds Result::round_trip() const {
  return checked(state_).round_trip();
}
std::chrono::milliseconds Result::ttl() const {
  return checked(state_).ttl();
}
std::string Result::handle_id() const {
  return checked(state_).handle().hex();
}

uint64_t Result::match_count() const {
  const TensorInfo* matches = find("matches_1");
  return matches != nullptr && !matches->shape.empty() ? matches->shape.front() : 0;
}

const TensorInfo* Result::find(std::string_view name) const {
  const int index = checked(state_).index_of(name);
  return index < 0 ? nullptr : &state_->tensors()[static_cast<size_t>(index)];
}

TensorView Result::tensor(std::string_view name) {
  detail::ResultState& state = checked(state_);
  const int index = state.index_of(name);
  if (index < 0) {
    std::string known;
    for (const TensorInfo& t : state.tensors()) known += (known.empty() ? "" : ", ") + t.name;
    throw Error(ErrorCode::kNotFound, ErrorSource::kClient,
                "the result has no tensor '" + std::string(name) + "' (it has: " + known + ")");
  }
  const std::span<const std::byte> bytes = state.bytes(index);
  return TensorView(&state.tensors()[static_cast<size_t>(index)], bytes);
}

void Result::fetch(std::span<const std::string> names, bool release_after) {
  detail::ResultState& state = checked(state_);
  std::vector<int> indices;
  if (names.empty()) {
    for (size_t i = 0; i < state.tensors().size(); ++i) indices.push_back(static_cast<int>(i));
  }
  for (const std::string& name : names) {
    const int index = state.index_of(name);
    if (index < 0) throw Error(ErrorCode::kNotFound, ErrorSource::kClient, "the result has no tensor '" + name + "'");
    indices.push_back(index);
  }
  state.fetch(indices, release_after);
}

void Result::fetch(std::initializer_list<std::string> names, bool release_after) {
  fetch(std::span<const std::string>(names.begin(), names.size()), release_after);
}

uint64_t Result::fetched_bytes() const {
  return checked(state_).fetched_bytes();
}
std::chrono::nanoseconds Result::fetch_copy_time() const {
  return checked(state_).copy_time();
}

void Result::release() {
  if (state_) state_->release();
}

bool Result::released() const {
  return checked(state_).released();
}

// ---- Pending<T>: the shared waiting part and the answers of infer and match --------------------

namespace detail {

PendingCall::PendingCall(std::shared_ptr<Core> core, std::shared_ptr<Call> call)
    : core_(std::move(core)), call_(std::move(call)) {}

PendingCall& PendingCall::operator=(PendingCall&& other) noexcept {
  if (this != &other) {
    abandon();
    core_ = std::move(other.core_);
    call_ = std::move(other.call_);
  }
  return *this;
}

PendingCall::~PendingCall() {
  abandon();
}

void PendingCall::abandon() noexcept {
  if (call_) call_->abandon();
  call_.reset();
  core_.reset();
}

bool PendingCall::ready() const {
  return call_ && call_->ready();
}

bool PendingCall::wait_for(std::chrono::milliseconds timeout) const {
  return call_ && call_->wait_for(timeout);
}

std::pair<std::shared_ptr<Call>, std::shared_ptr<Core>> PendingCall::take_over(const char* owner) {
  if (!call_) throw Error(ErrorCode::kInvalidArgument, ErrorSource::kClient, std::string("get() on an empty ") + owner);
  return {std::exchange(call_, nullptr), std::exchange(core_, nullptr)};
}

// ResultState::from_wire releases the handle itself when it cannot wrap it.
Result Decode::infer(std::shared_ptr<Call> call, std::shared_ptr<Core> core) {
  Answer answer = call->take();
  expect_body(answer, wire::ResponseBody::InferResult, "Infer");
  return Result(ResultState::from_wire(core, answer.response->body_as_InferResult()->handle(),
                                       call->answered_at - call->sent_at));
}

Result Decode::infer_pair(std::shared_ptr<Call> call, std::shared_ptr<Core> core) {
  Answer answer = call->take();
  expect_body(answer, wire::ResponseBody::InferPairResult, "InferPair");
  return Result(ResultState::from_wire(core, answer.response->body_as_InferPairResult()->handle(),
                                       call->answered_at - call->sent_at));
}

Result Decode::match(std::shared_ptr<Call> call, std::shared_ptr<Core> core) {
  Answer answer = call->take();
  expect_body(answer, wire::ResponseBody::MatchResult, "Match");
  return Result(ResultState::from_wire(core, answer.response->body_as_MatchResult()->handle(),
                                       call->answered_at - call->sent_at));
}

}  // namespace detail

}  // namespace recon::client
