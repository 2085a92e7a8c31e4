// JSON reading and writing of Mast3rConfig (see mast3r_config.h). Python tuples are JSON arrays;
// infinities are the strings "inf", "+inf", "-inf" (also "Infinity"/"-Infinity", as Python's json
// module would spell them if quoted).
#include <cmath>
#include <vector>

#include "gpu/weights/mast3r_config.h"
#include "gpu/weights/safetensors.h"

namespace recon::gpu {

namespace {

Status type_error(const std::string& key, const char* expected, const JsonValue& v) {
  return invalid_argument("MASt3R config: " + key + " must be " + expected + ", got " + JsonValue::type_name(v.type()));
}

Status read_int(const std::string& key, const JsonValue& v, std::int64_t& out) {
  const auto i = v.as_int64();
  if (!i) return type_error(key, "an integer", v);
  out = *i;
  return Status::ok();
}

Status read_number(const std::string& key, const JsonValue& v, double& out) {
  if (!v.is_number()) return type_error(key, "a number", v);
  out = v.as_double();
  return Status::ok();
}

// A number, or a string spelling an infinity.
Status read_bound(const std::string& key, const JsonValue& v, double& out) {
  if (v.is_string()) {
    const std::string& s = v.as_string();
    if (s == "inf" || s == "+inf" || s == "Infinity" || s == "+Infinity") {
      out = Mast3rConfig::kInf;
    } else if (s == "-inf" || s == "-Infinity") {
      out = -Mast3rConfig::kInf;
    } else {
      return invalid_argument("MASt3R config: " + key + " bound '" + s + "' is not a number, \"inf\" or \"-inf\"");
    }
    return Status::ok();
  }
  return read_number(key, v, out);
}

Status read_bool(const std::string& key, const JsonValue& v, bool& out) {
  if (!v.is_bool()) return type_error(key, "true or false", v);
  out = v.as_bool();
  return Status::ok();
}

Status read_string(const std::string& key, const JsonValue& v, std::string& out) {
  if (!v.is_string()) return type_error(key, "a string", v);
  out = v.as_string();
  return Status::ok();
}

Status read_mode(const std::string& key, const JsonValue& v, ActivationMode& out) {
  if (!v.is_array() || v.items().size() != 3 || !v.items()[0].is_string()) {
    return invalid_argument("MASt3R config: " + key +
                            " must be an array [mode, vmin, vmax], e.g. [\"exp\", 1, \"inf\"]");
  }
  out.mode = v.items()[0].as_string();
  RECON_RETURN_IF_ERROR(read_bound(key, v.items()[1], out.vmin));
  return read_bound(key, v.items()[2], out.vmax);
}

template <std::size_t N>
Status read_int_array(const std::string& key, const JsonValue& v, std::array<std::int64_t, N>& out) {
  if (!v.is_array() || v.items().size() != N) {
    return invalid_argument("MASt3R config: " + key + " must be an array of " + std::to_string(N) + " integers");
  }
  for (std::size_t i = 0; i < N; ++i) RECON_RETURN_IF_ERROR(read_int(key, v.items()[i], out[i]));
  return Status::ok();
}

// Sets the field named `key`; `known` is false when no field has that name.
Status apply(Mast3rConfig& c, const std::string& key, const JsonValue& v, bool& known, bool& desc_conf_follows) {
  known = true;
  if (key == "patch_size") return read_int(key, v, c.patch_size);
  if (key == "img_size") {
    if (v.is_number()) {
      RECON_RETURN_IF_ERROR(read_int(key, v, c.img_size[0]));
      c.img_size[1] = c.img_size[0];
      return Status::ok();
    }
    return read_int_array(key, v, c.img_size);
  }
  if (key == "enc_embed_dim") return read_int(key, v, c.enc_embed_dim);
  if (key == "enc_depth") return read_int(key, v, c.enc_depth);
  if (key == "enc_num_heads") return read_int(key, v, c.enc_num_heads);
  if (key == "dec_embed_dim") return read_int(key, v, c.dec_embed_dim);
  if (key == "dec_depth") return read_int(key, v, c.dec_depth);
  if (key == "dec_num_heads") return read_int(key, v, c.dec_num_heads);
  if (key == "mlp_ratio") return read_number(key, v, c.mlp_ratio);
  if (key == "norm_im2_in_dec") return read_bool(key, v, c.norm_im2_in_dec);
  if (key == "pos_embed") return read_string(key, v, c.pos_embed);
  if (key == "head_type") return read_string(key, v, c.head_type);
  if (key == "output_mode") return read_string(key, v, c.output_mode);
  if (key == "depth_mode") return read_mode(key, v, c.depth_mode);
  if (key == "conf_mode") {
    if (v.is_null()) return invalid_argument("MASt3R config: conf_mode null (no confidence output) is not supported");
    return read_mode(key, v, c.conf_mode);
  }
  if (key == "desc_mode") return read_string(key, v, c.desc_mode);
  if (key == "two_confs") return read_bool(key, v, c.two_confs);
  if (key == "desc_conf_mode") {
    desc_conf_follows = v.is_null();  // upstream: None means "use conf_mode"
    return desc_conf_follows ? Status::ok() : read_mode(key, v, c.desc_conf_mode);
  }
  if (key == "freeze") return read_string(key, v, c.freeze);
  if (key == "landscape_only") return read_bool(key, v, c.landscape_only);
  if (key == "patch_embed_cls") return read_string(key, v, c.patch_embed_cls);
  if (key == "mask_ratio") return read_number(key, v, c.mask_ratio);
  if (key == "norm_layer") return Status::ok();  // a Python callable upstream; see norm_eps
  if (key == "norm_eps") return read_number(key, v, c.norm_eps);
  if (key == "encoder") return read_string(key, v, c.encoder);
  if (key == "dune_backbone") return read_string(key, v, c.dune_backbone);
  if (key == "dune_num_register_tokens") return read_int(key, v, c.dune_num_register_tokens);
  if (key == "dune_pos_embed_grid") return read_int(key, v, c.dune_pos_embed_grid);
  if (key == "dune_interpolate_offset") return read_number(key, v, c.dune_interpolate_offset);
  if (key == "dune_interpolate_antialias") return read_bool(key, v, c.dune_interpolate_antialias);
  if (key == "dune_layerscale") return read_bool(key, v, c.dune_layerscale);
  if (key == "dune_ffn_layer") return read_string(key, v, c.dune_ffn_layer);
  if (key == "dune_ln_eps") return read_number(key, v, c.dune_ln_eps);
  if (key == "dune_norm_eps") return read_number(key, v, c.dune_norm_eps);
  if (key == "dpt_layer_dims") return read_int_array(key, v, c.dpt_layer_dims);
  if (key == "dpt_feature_dim") return read_int(key, v, c.dpt_feature_dim);
  if (key == "dpt_last_dim") return read_int(key, v, c.dpt_last_dim);
  if (key == "local_mlp_ratio") {
    double r = 0.0;
    RECON_RETURN_IF_ERROR(read_number(key, v, r));
    c.local_mlp_ratio = r;
    return Status::ok();
  }
  known = false;
  return Status::ok();
}

// JSON has no infinities or NaN: spell them as strings (the reader accepts "inf"/"-inf" only
// where a bound is expected, so an unvalidated NaN is caught when read back, not here).
JsonValue num(double d) {
  if (std::isnan(d)) return JsonValue::string("nan");
  if (std::isinf(d)) return JsonValue::string(d > 0 ? "inf" : "-inf");
  return JsonValue::number(d);
}

JsonValue mode_to_json(const ActivationMode& m) {
  JsonValue a = JsonValue::array();
  a.push_back(JsonValue::string(m.mode));
  a.push_back(num(m.vmin));
  a.push_back(num(m.vmax));
  return a;
}

template <std::size_t N>
JsonValue ints_to_json(const std::array<std::int64_t, N>& values) {
  JsonValue a = JsonValue::array();
  for (const std::int64_t v : values) a.push_back(JsonValue::integer(v));
  return a;
}

}  // namespace

Result<Mast3rConfig> Mast3rConfig::from_json_value(const JsonValue& object) {
  if (!object.is_object()) {
    return invalid_argument(std::string("MASt3R config must be a JSON object, got ") +
                            JsonValue::type_name(object.type()));
  }
  Mast3rConfig c;
  bool desc_conf_follows = false;
  std::vector<std::string> unknown;
  for (const JsonMember& m : object.members()) {
    bool known = false;
    RECON_RETURN_IF_ERROR(apply(c, m.key, m.value, known, desc_conf_follows));
    if (!known) unknown.push_back(m.key);
  }
  if (!unknown.empty()) {
    std::string names;
    for (const std::string& k : unknown) names += (names.empty() ? "'" : ", '") + k + "'";
    return invalid_argument("MASt3R config: unknown key" + std::string(unknown.size() > 1 ? "s " : " ") + names);
  }
  if (desc_conf_follows) c.desc_conf_mode = c.conf_mode;
  RECON_RETURN_IF_ERROR(c.validate());
  return c;
}

Result<Mast3rConfig> Mast3rConfig::from_json(std::string_view json) {
  JsonLimits limits;
  limits.max_input_bytes = 1u << 20;
  limits.max_depth = 8;
  limits.max_values = 4096;
  RECON_ASSIGN_OR_RETURN(JsonValue v, parse_json(json, limits));
  return from_json_value(v);
}

Result<Mast3rConfig> Mast3rConfig::from_safetensors(const SafetensorsFile& file) {
  const std::optional<std::string_view> text = file.metadata(kMetadataKey);
  if (!text) {
    Mast3rConfig defaults;
    return defaults;
  }
  Result<Mast3rConfig> c = from_json(*text);
  if (!c.is_ok()) return c.status().with_context("metadata entry " + std::string(kMetadataKey));
  return c;
}

JsonValue Mast3rConfig::to_json_value() const {
  const Mast3rConfig official;
  JsonValue o = JsonValue::object();
  o.add("patch_size", JsonValue::integer(patch_size));
  o.add("img_size", ints_to_json(img_size));
  o.add("enc_embed_dim", JsonValue::integer(enc_embed_dim));
  o.add("enc_depth", JsonValue::integer(enc_depth));
  o.add("enc_num_heads", JsonValue::integer(enc_num_heads));
  o.add("dec_embed_dim", JsonValue::integer(dec_embed_dim));
  o.add("dec_depth", JsonValue::integer(dec_depth));
  o.add("dec_num_heads", JsonValue::integer(dec_num_heads));
  o.add("mlp_ratio", num(mlp_ratio));
  o.add("norm_im2_in_dec", JsonValue::boolean(norm_im2_in_dec));
  o.add("pos_embed", JsonValue::string(pos_embed));
  o.add("head_type", JsonValue::string(head_type));
  o.add("output_mode", JsonValue::string(output_mode));
  o.add("depth_mode", mode_to_json(depth_mode));
  o.add("conf_mode", mode_to_json(conf_mode));
  o.add("desc_mode", JsonValue::string(desc_mode));
  o.add("two_confs", JsonValue::boolean(two_confs));
  o.add("desc_conf_mode", mode_to_json(desc_conf_mode));
  o.add("freeze", JsonValue::string(freeze));
  o.add("landscape_only", JsonValue::boolean(landscape_only));
  o.add("patch_embed_cls", JsonValue::string(patch_embed_cls));
  o.add("mask_ratio", num(mask_ratio));
  // Keys that are not official constructor arguments appear only when they differ from the
  // released model, so the usual output stays a valid AsymmetricMASt3R(**config).
  if (norm_eps != official.norm_eps) o.add("norm_eps", num(norm_eps));
  if (dpt_layer_dims != official.dpt_layer_dims) o.add("dpt_layer_dims", ints_to_json(dpt_layer_dims));
  if (dpt_feature_dim != official.dpt_feature_dim) o.add("dpt_feature_dim", JsonValue::integer(dpt_feature_dim));
  if (dpt_last_dim != official.dpt_last_dim) o.add("dpt_last_dim", JsonValue::integer(dpt_last_dim));
  if (local_mlp_ratio) o.add("local_mlp_ratio", num(*local_mlp_ratio));
  if (is_dune()) {
    o.add("encoder", JsonValue::string(encoder));
    o.add("dune_backbone", JsonValue::string(dune_backbone));
    o.add("dune_num_register_tokens", JsonValue::integer(dune_num_register_tokens));
    o.add("dune_pos_embed_grid", JsonValue::integer(dune_pos_embed_grid));
    o.add("dune_interpolate_offset", num(dune_interpolate_offset));
    o.add("dune_interpolate_antialias", JsonValue::boolean(dune_interpolate_antialias));
    o.add("dune_layerscale", JsonValue::boolean(dune_layerscale));
    o.add("dune_ffn_layer", JsonValue::string(dune_ffn_layer));
    o.add("dune_ln_eps", num(dune_ln_eps));
    o.add("dune_norm_eps", num(dune_norm_eps));
  }
  return o;
}

std::string Mast3rConfig::to_json() const {
  return to_json_string(to_json_value());
}

}  // namespace recon::gpu
