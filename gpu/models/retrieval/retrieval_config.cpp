// RetrievalConfig: the retrieval checkpoint's head arguments, their JSON form in the safetensors
// metadata, and their validation. No GPU code.
#include <cmath>
#include <string>

#include "gpu/models/retrieval/retrieval.h"
#include "gpu/weights/json.h"

namespace recon::gpu {
namespace {

// Bounds a file can ask for: a width beyond this is a corrupt header, not a model.
constexpr int64_t kMaxRetrievalWidth = 1 << 16;
constexpr double kMaxNfeat = 2147483647.0;  // keeps the conversion to int64 defined

}  // namespace

int64_t RetrievalConfig::kept_tokens(int64_t n) const {
  // how_select_local: a negative nfeat is a fraction of the tokens, truncated like int().
  const int64_t want = nfeat < 0 ? static_cast<int64_t>(-nfeat * static_cast<double>(n)) : static_cast<int64_t>(nfeat);
  return want < n ? want : n;
}

Status RetrievalConfig::validate() const {
  if (dim <= 0 || dim > kMaxRetrievalWidth) return invalid_argument("retrieval config: dim " + std::to_string(dim));
  for (int64_t h : hdims) {
    if (h <= 0 || h > kMaxRetrievalWidth) return invalid_argument("retrieval config: hdims entry " + std::to_string(h));
  }
  if (residual && (hdims.empty() || hdims.back() != dim)) {
    return invalid_argument("retrieval config: residual needs hdims ending in dim " + std::to_string(dim));
  }
  if (postwhiten && hdims.empty()) return invalid_argument("retrieval config: postwhiten needs a projector (hdims)");
  if (!std::isfinite(nfeat) || nfeat < -1.0 || (nfeat >= 0 && nfeat < 1) || nfeat > kMaxNfeat) {
    return invalid_argument("retrieval config: nfeat must be in [1, 2^31) or a fraction in [-1, 0)");
  }
  if (!(layer_norm_eps > 0) || !std::isfinite(layer_norm_eps)) {
    return invalid_argument("retrieval config: layer_norm_eps must be > 0");
  }
  return Status::ok();
}

Result<RetrievalConfig> RetrievalConfig::from_json(std::string_view json) {
  RECON_ASSIGN_OR_RETURN(JsonValue v, parse_json(json));
  if (!v.is_object()) return invalid_argument("retrieval config: not a JSON object");
  RetrievalConfig c;
  for (const JsonMember& m : v.members()) {
    const JsonValue& x = m.value;
    auto need_int = [&](int64_t& out) -> Status {
      if (!x.as_int64()) return invalid_argument("retrieval config: " + m.key + " must be an integer");
      out = *x.as_int64();
      return Status::ok();
    };
    auto need_bool = [&](bool& out) -> Status {
      if (!x.is_bool()) return invalid_argument("retrieval config: " + m.key + " must be true or false");
      out = x.as_bool();
      return Status::ok();
    };
    if (m.key == "dim") {
      RECON_RETURN_IF_ERROR(need_int(c.dim));
    } else if (m.key == "prewhiten") {
      RECON_RETURN_IF_ERROR(need_bool(c.prewhiten));
    } else if (m.key == "postwhiten") {
      RECON_RETURN_IF_ERROR(need_bool(c.postwhiten));
    } else if (m.key == "residual") {
      RECON_RETURN_IF_ERROR(need_bool(c.residual));
    } else if (m.key == "hdims") {
      if (!x.is_array()) return invalid_argument("retrieval config: hdims must be an array of integers");
      for (const JsonValue& h : x.items()) {
        if (!h.as_int64()) return invalid_argument("retrieval config: hdims must be an array of integers");
        c.hdims.push_back(*h.as_int64());
      }
    } else if (m.key == "nfeat" || m.key == "layer_norm_eps") {
      if (!x.is_number()) return invalid_argument("retrieval config: " + m.key + " must be a number");
      (m.key == "nfeat" ? c.nfeat : c.layer_norm_eps) = x.as_double();
    } else if (m.key == "featweights") {
      // The only attention the official model implements; anything else is refused, not ignored.
      if (!x.is_string() || x.as_string() != "l2norm") {
        return unimplemented("retrieval config: featweights other than \"l2norm\"");
      }
    } else {
      return invalid_argument("retrieval config: unknown key \"" + m.key + "\"");
    }
  }
  RECON_RETURN_IF_ERROR(c.validate());
  return c;
}

std::string RetrievalConfig::to_json() const {
  JsonValue o = JsonValue::object();
  o.add("dim", JsonValue::integer(dim));
  o.add("prewhiten", JsonValue::boolean(prewhiten));
  JsonValue h = JsonValue::array();
  for (int64_t d : hdims) h.push_back(JsonValue::integer(d));
  o.add("hdims", std::move(h));
  o.add("residual", JsonValue::boolean(residual));
  o.add("postwhiten", JsonValue::boolean(postwhiten));
  o.add("featweights", JsonValue::string("l2norm"));
  o.add("nfeat", JsonValue::number(nfeat));
  o.add("layer_norm_eps", JsonValue::number(layer_norm_eps));
  return to_json_string(o);
}

}  // namespace recon::gpu
