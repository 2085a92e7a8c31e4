// runtime.h's tensor calls: pooled device memory (the activations pool), zero-filled at creation;
// uploads and downloads through the staging pool, converting f32 ↔ f16 on the host.

#include <cstring>
#include <vector>

#include "gpu/weights/half_float.h"
#include "state.h"

using namespace recon;
using namespace recon::runtime_c;

namespace {

Result<gpu::DType> device_dtype(recon_dtype dtype, const char* what) {
  if (dtype == RECON_F32) return gpu::DType::kF32;
  if (dtype == RECON_F16) return gpu::DType::kF16;
  return invalid_argument(std::string(what) + " is " + dtype_string(dtype) + "; RECON_F32 or RECON_F16 expected");
}

size_t host_size(recon_dtype dtype) {
  return dtype == RECON_F16 ? 2 : 4;
}

// INVALID_ARGUMENT unless `bytes` holds exactly the tensor's elements as `host`.
Status check_host_buffer(const gpu::Tensor& t, recon_dtype host, const void* data, uint64_t bytes) {
  if (data == nullptr) return invalid_argument("data is NULL");
  const uint64_t want = static_cast<uint64_t>(t.numel()) * host_size(host);
  if (bytes != want) {
    return invalid_argument(std::to_string(bytes) + " bytes given; tensor " + gpu::shape_string(t.shape()) + " as " +
                            dtype_string(host) + " is " + std::to_string(want) + " bytes");
  }
  return Status::ok();
}

Status check_not_in_flight(const TensorState& t) {
  if (t.in_flight > 0) {
    return invalid_argument("the tensor is used by a submitted sequence; call recon_sequence_wait first");
  }
  return Status::ok();
}

Status upload(TensorState& t, recon_dtype host, const void* data, uint64_t bytes) {
  RECON_ASSIGN_OR_RETURN(gpu::DType host_dtype, device_dtype(host, "host_dtype"));
  RECON_RETURN_IF_ERROR(check_host_buffer(t.tensor, host, data, bytes));
  RECON_RETURN_IF_ERROR(check_not_in_flight(t));
  gpu::Runtime& rt = t.context->runtime();
  if (host_dtype == t.tensor.dtype()) return t.tensor.upload(rt, data, bytes);
  const size_t n = static_cast<size_t>(t.tensor.numel());
  if (host_dtype == gpu::DType::kF32) {  // f32 → f16
    std::vector<uint16_t> converted(n);
    gpu::f32_bytes_to_f16(static_cast<const std::byte*>(data), n, converted.data());
    return t.tensor.upload(rt, converted.data(), n * 2);
  }
  std::vector<float> converted(n);  // f16 → f32
  gpu::f16_bytes_to_f32(static_cast<const std::byte*>(data), n, converted.data());
  return t.tensor.upload(rt, converted.data(), n * 4);
}

Status download(TensorState& t, recon_dtype host, void* data, uint64_t bytes) {
  RECON_ASSIGN_OR_RETURN(gpu::DType host_dtype, device_dtype(host, "host_dtype"));
  RECON_RETURN_IF_ERROR(check_host_buffer(t.tensor, host, data, bytes));
  RECON_RETURN_IF_ERROR(check_not_in_flight(t));
  gpu::Runtime& rt = t.context->runtime();
  if (host_dtype == t.tensor.dtype()) return t.tensor.download(rt, data, bytes);
  const size_t n = static_cast<size_t>(t.tensor.numel());
  if (host_dtype == gpu::DType::kF16) {  // f32 on the device → f16
    std::vector<std::byte> raw(n * 4);
    RECON_RETURN_IF_ERROR(t.tensor.download(rt, raw.data(), raw.size()));
    for (size_t i = 0; i < n; ++i) {
      float f;
      std::memcpy(&f, raw.data() + 4 * i, 4);
      const uint16_t h = gpu::f32_to_f16(f);
      std::memcpy(static_cast<std::byte*>(data) + 2 * i, &h, 2);
    }
    return Status::ok();
  }
  std::vector<std::byte> raw(n * 2);  // f16 on the device → f32
  RECON_RETURN_IF_ERROR(t.tensor.download(rt, raw.data(), raw.size()));
  gpu::f16_bytes_to_f32(raw.data(), n, static_cast<float*>(data));
  return Status::ok();
}

}  // namespace

extern "C" {

recon_status recon_tensor_create(recon_context* context, recon_dtype dtype, uint32_t rank, const uint64_t* shape,
                                 recon_tensor** out) {
  constexpr const char* kFn = "recon_tensor_create";
  if (out == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_tensor_create: out is NULL");
  *out = nullptr;
  if (context == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_tensor_create: context is NULL");
  if (rank < 1 || rank > RECON_RUNTIME_MAX_RANK) {
    return fail(RECON_INVALID_ARGUMENT, "recon_tensor_create: rank " + std::to_string(rank) + " (1 to " +
                                            std::to_string(RECON_RUNTIME_MAX_RANK) + " supported)");
  }
  if (shape == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_tensor_create: shape is NULL");
  return guarded([&] {
    Result<gpu::DType> d = device_dtype(dtype, "dtype");
    if (!d.is_ok()) return fail(kFn, d.status());
    gpu::Shape s;
    uint64_t numel = 1;
    for (uint32_t i = 0; i < rank; ++i) {
      if (shape[i] == 0 || shape[i] > (uint64_t{1} << 40) || __builtin_mul_overflow(numel, shape[i], &numel) ||
          numel > (uint64_t{1} << 40)) {
        return fail(RECON_INVALID_ARGUMENT, "recon_tensor_create: dimension " + std::to_string(i) + " is " +
                                                std::to_string(shape[i]) +
                                                " (every dimension ≥ 1, at most 2^40 elements in all)");
      }
      s.push_back(static_cast<int64_t>(shape[i]));
    }
    std::shared_ptr<ContextState> ctx = context->state;
    std::lock_guard lock(ctx->mutex());
    gpu::Runtime& rt = ctx->runtime();
    if (*d == gpu::DType::kF16 && !rt.caps().storage_16bit) {
      return fail(RECON_UNIMPLEMENTED, "recon_tensor_create: RECON_F16 needs 16-bit storage buffers, which " +
                                           rt.caps().device_name + " lacks");
    }
    Result<gpu::Tensor> t = gpu::Tensor::zeros(rt, *d, s);
    if (!t.is_ok()) return fail(kFn, t.status());
    auto state = std::make_shared<TensorState>();
    state->context = ctx;
    state->id = ctx->next_tensor_id();
    state->tensor = std::move(t).value();
    *out = new recon_tensor{std::move(state)};
    return RECON_OK;
  });
}

void recon_tensor_release(recon_tensor* tensor) {
  if (tensor == nullptr) return;
  std::shared_ptr<ContextState> ctx = tensor->state->context;
  std::lock_guard lock(ctx->mutex());
  ctx->forget_tensor(tensor->state->id);
  delete tensor;  // a sequence that recorded it keeps its memory
}

recon_status recon_tensor_shape(const recon_tensor* tensor, recon_dtype* dtype, uint32_t* rank, uint64_t* shape) {
  if (tensor == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_tensor_shape: tensor is NULL");
  const gpu::Tensor& t = tensor->state->tensor;  // immutable after creation
  if (dtype != nullptr) *dtype = t.dtype() == gpu::DType::kF16 ? RECON_F16 : RECON_F32;
  if (rank != nullptr) *rank = static_cast<uint32_t>(t.shape().size());
  if (shape != nullptr) {
    for (size_t i = 0; i < t.shape().size(); ++i) shape[i] = static_cast<uint64_t>(t.shape()[i]);
  }
  return RECON_OK;
}

recon_status recon_tensor_upload(recon_tensor* tensor, recon_dtype host_dtype, const void* data, uint64_t bytes) {
  if (tensor == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_tensor_upload: tensor is NULL");
  return guarded([&] {
    std::shared_ptr<ContextState> ctx = tensor->state->context;
    std::lock_guard lock(ctx->mutex());
    return fail("recon_tensor_upload", upload(*tensor->state, host_dtype, data, bytes));
  });
}

recon_status recon_tensor_download(const recon_tensor* tensor, recon_dtype host_dtype, void* data, uint64_t bytes) {
  if (tensor == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_tensor_download: tensor is NULL");
  return guarded([&] {
    std::shared_ptr<ContextState> ctx = tensor->state->context;
    std::lock_guard lock(ctx->mutex());
    return fail("recon_tensor_download", download(*tensor->state, host_dtype, data, bytes));
  });
}

}  // extern "C"
