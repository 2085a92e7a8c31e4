// The C ABI (recon/recon.h) over the C++ client: every exception stops here and becomes a
// recon_status, with its message kept per thread for recon_last_error().
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "recon/client.h"
#include "recon/recon.h"

struct recon_client {
  explicit recon_client(recon::client::Client c) : client(std::move(c)), images(client) {}
  recon::client::Client client;
  recon::client::ImagePool images;
};

struct recon_result {
  recon::client::Result result;
};

namespace {

using namespace recon::client;

thread_local std::string g_last_error;

recon_status fail(recon_status status, std::string message) {
  g_last_error = std::move(message);
  return status;
}

recon_status status_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return RECON_INVALID_ARGUMENT;
    case ErrorCode::kNotFound:
      return RECON_NOT_FOUND;
    case ErrorCode::kPermissionDenied:
      return RECON_PERMISSION_DENIED;
    case ErrorCode::kResourceExhausted:
      return RECON_RESOURCE_EXHAUSTED;
    case ErrorCode::kUnavailable:
      return RECON_UNAVAILABLE;
    case ErrorCode::kInternal:
      return RECON_INTERNAL;
    case ErrorCode::kDataLoss:
      return RECON_DATA_LOSS;
    case ErrorCode::kUnimplemented:
      return RECON_UNIMPLEMENTED;
    case ErrorCode::kCancelled:
      return RECON_CANCELLED;
    default:
      return RECON_UNKNOWN;
  }
}

// Runs `body`, turning whatever it throws into a status.
template <typename Body>
recon_status guarded(Body&& body) noexcept {
  try {
    body();
    return RECON_OK;
  } catch (const Error& e) {
    return fail(status_of(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return fail(RECON_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return fail(RECON_INTERNAL, e.what());
  }
}

HostImage host_image(const recon_image& image) {
  return HostImage{image.pixels, image.width, image.height, image.stride};
}

// A struct passed in is read only as far as both sides know it.
template <typename T>
T read_options(const T* given) {
  T out{};
  if (given != nullptr) std::memcpy(&out, given, std::min(sizeof(T), given->struct_size));
  out.struct_size = sizeof(T);
  return out;
}

}  // namespace

extern "C" {

uint32_t recon_c_abi_version(void) {
  return RECON_C_ABI_VERSION;
}

const char* recon_library_version(void) {
  return library_version();
}

const char* recon_status_name(recon_status status) {
  switch (status) {
    case RECON_OK:
      return "OK";
    case RECON_UNKNOWN:
      return "UNKNOWN";
    default:
      return error_code_name(static_cast<ErrorCode>(status));
  }
}

const char* recon_last_error(void) {
  return g_last_error.c_str();
}

recon_status recon_client_connect(const char* socket_dir, const char* client_name, uint32_t timeout_ms,
                                  recon_client** out) {
  if (out == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_client_connect: out is NULL");
  *out = nullptr;
  return guarded([&] {
    ConnectOptions options = socket_dir != nullptr ? ConnectOptions::in_directory(socket_dir) : ConnectOptions{};
    if (client_name != nullptr) options.client_name = client_name;
    if (timeout_ms != 0) options.timeout = std::chrono::milliseconds(timeout_ms);
    *out = new recon_client(Client::connect(options));
  });
}

void recon_client_release(recon_client* client) {
  delete client;
}

recon_status recon_infer_pair(recon_client* client, const recon_image* image1, const recon_image* image2,
                              const recon_infer_options* options, recon_result** out) {
  if (out == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_infer_pair: out is NULL");
  *out = nullptr;
  if (client == nullptr || image1 == nullptr || image2 == nullptr) {
    return fail(RECON_INVALID_ARGUMENT, "recon_infer_pair needs a client and two images");
  }
  return guarded([&] {
    const recon_infer_options o = read_options(options);
    InferOptions infer;
    if (o.model != nullptr) infer.model = o.model;
    if (o.height != 0 || o.width != 0) infer.resolution = Resolution{o.height, o.width};
    infer.ttl = std::chrono::milliseconds(o.ttl_ms);
    infer.timeout = std::chrono::milliseconds(o.timeout_ms);
    const HostImage images[] = {host_image(*image1), host_image(*image2)};
    ImagePool::Lease staged = client->images.stage(images);  // held until the answer arrived
    Result result = client->client.infer(staged.views()[0], staged.views()[1], infer).get();
    *out = new recon_result{std::move(result)};
  });
}

recon_status recon_match(recon_client* client, const recon_result* pair, const recon_match_options* options,
                         recon_result** out) {
  if (out == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_match: out is NULL");
  *out = nullptr;
  if (client == nullptr || pair == nullptr)
    return fail(RECON_INVALID_ARGUMENT, "recon_match needs a client and a pair");
  return guarded([&] {
    const recon_match_options o = read_options(options);
    MatchOptions match;
    match.max_matches = o.max_matches;
    match.subsample = o.subsample;
    match.min_confidence = o.min_confidence;
    *out = new recon_result{client->client.match(pair->result, match).get()};
  });
}

size_t recon_result_tensor_count(const recon_result* result) {
  return result != nullptr ? result->result.tensors().size() : 0;
}

recon_status recon_result_tensor_info(const recon_result* result, size_t index, recon_tensor_info* info) {
  if (result == nullptr || info == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_result_tensor_info: NULL");
  const auto& tensors = result->result.tensors();
  if (index >= tensors.size()) {
    return fail(RECON_INVALID_ARGUMENT,
                "tensor index " + std::to_string(index) + " of " + std::to_string(tensors.size()));
  }
  const TensorInfo& t = tensors[index];
  if (t.shape.size() > RECON_MAX_DIMS) return fail(RECON_UNIMPLEMENTED, "tensor '" + t.name + "' has too many dims");
  *info = recon_tensor_info{};
  info->name = t.name.c_str();
  info->dtype = static_cast<recon_dtype>(t.dtype);
  info->ndim = static_cast<uint32_t>(t.shape.size());
  for (size_t i = 0; i < t.shape.size(); ++i) info->shape[i] = t.shape[i];
  info->bytes = t.byte_size;
  return RECON_OK;
}

recon_status recon_result_view(recon_result* result, const char* name, const void** data, uint64_t* bytes) {
  if (result == nullptr || name == nullptr || data == nullptr || bytes == nullptr) {
    return fail(RECON_INVALID_ARGUMENT, "recon_result_view: NULL argument");
  }
  return guarded([&] {
    const TensorView view = result->result.tensor(name);
    *data = view.bytes().data();
    *bytes = view.bytes().size();
  });
}

recon_status recon_result_fetch(recon_result* result, const char* name, void* destination, uint64_t capacity,
                                uint64_t* written) {
  const void* data = nullptr;
  uint64_t bytes = 0;
  if (destination == nullptr && capacity > 0) return fail(RECON_INVALID_ARGUMENT, "recon_result_fetch: NULL buffer");
  const recon_status viewed = recon_result_view(result, name, &data, &bytes);
  if (viewed != RECON_OK) return viewed;
  if (bytes > capacity) {
    return fail(RECON_RESOURCE_EXHAUSTED, "tensor '" + std::string(name) + "' has " + std::to_string(bytes) +
                                              " bytes; the buffer holds " + std::to_string(capacity));
  }
  if (bytes > 0) std::memcpy(destination, data, bytes);
  if (written != nullptr) *written = bytes;
  return RECON_OK;
}

void recon_result_release(recon_result* result) {
  delete result;
}

}  // extern "C"
