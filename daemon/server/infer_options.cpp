// InferOptions admission: see infer_options.h.
#include "daemon/server/infer_options.h"

#include <algorithm>

#include "daemon/server/responses.h"

namespace recon::daemon {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

std::string model_name(const flatbuffers::String* name, const char* fallback) {
  return name != nullptr && name->size() > 0 ? name->str() : std::string(fallback);
}

Result<InferSettings> infer_settings(const wire::InferOptions* options, const ModelInfo& model,
                                     const ServerLimits& limits, const ReplyTarget& target) {
  InferSettings s;
  s.rules.long_side = model.default_long_side;
  s.rules.crop = CropRule{model.patch_size, model.square_ok};
  s.rules.max_inline_bytes = limits.max_message_bytes;
  if (options != nullptr && options->resolution() != nullptr) {
    const uint32_t h = options->resolution()->height(), w = options->resolution()->width();
    if (h == 0 || w == 0 || h % model.patch_size != 0 || w % model.patch_size != 0 || h > kMaxResolutionSide ||
        w > kMaxResolutionSide) {
      return invalid_argument("resolution " + std::to_string(w) + "x" + std::to_string(h) +
                              " must have sides that are non-zero multiples of " + std::to_string(model.patch_size) +
                              " up to " + std::to_string(kMaxResolutionSide));
    }
    s.rules.required = ImageSize{h, w};
    s.rules.long_side = std::max(h, w);
  }
  if (options != nullptr && options->precision() != wire::Precision::DEFAULT &&
      options->precision() != to_wire(model.precision)) {
    return unimplemented("model '" + model.name + "' is loaded in " + gpu::precision_name(model.precision) +
                         "; per-request precision is not supported");
  }
  if (options != nullptr && options->outputs() != nullptr) {
    for (const flatbuffers::String* output : *options->outputs()) {
      if (std::find(model.outputs.begin(), model.outputs.end(), output->string_view()) == model.outputs.end()) {
        return invalid_argument("unknown output '" + output->str() + "' (model '" + model.name + "' has " +
                                (model.outputs.empty() ? std::string("no choice of outputs") : joined(model.outputs)) +
                                ")");
      }
      s.outputs.push_back(output->str());
    }
  }
  const auto max_ttl = static_cast<uint32_t>(limits.handle_ttl.count());
  const uint32_t asked_ttl = options != nullptr ? options->ttl_ms() : 0;
  s.context.reply = target;
  s.context.ttl_ms = asked_ttl == 0 ? max_ttl : std::min(asked_ttl, max_ttl);
  s.context.received = SteadyClock::now();
  if (options != nullptr && options->deadline_ms() > 0) {
    s.context.deadline = s.context.received + std::chrono::milliseconds(options->deadline_ms());
  }
  return s;
}

Result<Parameters> request_parameters(const flatbuffers::Vector<flatbuffers::Offset<wire::Parameter>>* parameters,
                                      const char* verb) {
  Parameters out;
  if (parameters == nullptr) return out;
  for (const wire::Parameter* p : *parameters) {
    const std::string name = p->name()->str();  // present: required_fields.cpp
    if (!out.emplace(name, p->value() != nullptr ? p->value()->str() : std::string()).second) {
      return invalid_argument(std::string(verb) + " names parameter '" + name + "' twice");
    }
  }
  return out;
}

}  // namespace recon::daemon
