// The MASt3R parameter list and the weight-file check (see mast3r_weight_catalog.h).
// The shapes follow the PyTorch modules: Linear (out, in); Conv2d (out, in, kH, kW);
// ConvTranspose2d (in, out, kH, kW).
#include "gpu/weights/mast3r_weight_catalog.h"

#include <algorithm>
#include <set>
#include <utility>

namespace recon::gpu {

namespace {

using Shape = std::vector<std::int64_t>;

class CatalogBuilder {
 public:
  void add(std::string name, Shape shape, std::string alias_of = {}, WeightKind kind = WeightKind::kOther) {
    specs_.push_back(WeightSpec{std::move(name), std::move(shape), std::move(alias_of), kind});
  }
  void linear(const std::string& prefix, std::int64_t in, std::int64_t out) {
    add(prefix + ".weight", {out, in}, {}, WeightKind::kLinear);
    add(prefix + ".bias", {out});
  }
  void norm(const std::string& prefix, std::int64_t dim) {
    add(prefix + ".weight", {dim});
    add(prefix + ".bias", {dim});
  }
  void conv(const std::string& prefix, std::int64_t in, std::int64_t out, std::int64_t k, bool bias = true) {
    add(prefix + ".weight", {out, in, k, k}, {}, WeightKind::kConv);
    if (bias) add(prefix + ".bias", {out});
  }
  void conv_transpose(const std::string& prefix, std::int64_t in, std::int64_t out, std::int64_t k) {
    add(prefix + ".weight", {in, out, k, k}, {}, WeightKind::kConvTranspose);
    add(prefix + ".bias", {out});
  }
  std::vector<WeightSpec> take() { return std::move(specs_); }

 private:
  std::vector<WeightSpec> specs_;
};

void add_encoder_block(CatalogBuilder& b, const std::string& p, std::int64_t dim, std::int64_t hidden) {
  b.norm(p + ".norm1", dim);
  b.linear(p + ".attn.qkv", dim, 3 * dim);
  b.linear(p + ".attn.proj", dim, dim);
  b.norm(p + ".norm2", dim);
  b.linear(p + ".mlp.fc1", dim, hidden);
  b.linear(p + ".mlp.fc2", hidden, dim);
}

// AsymmetricMASt3RWithDUNEBackbone's encoder side under its official names: the DUNE ViT
// (`dune_backbone.`, its blocks in the one chunk of block_chunks=1) and the wrapper's LayerNorm
// `norm`. The ViT's own final norm and mask_token are not read by DUNE-MASt3R and are not listed.
void add_dune_encoder(CatalogBuilder& b, const Mast3rConfig& c) {
  const std::int64_t e = c.enc_embed_dim, g = c.dune_pos_embed_grid;
  const std::string v = "dune_backbone.";
  b.add(v + "cls_token", {1, 1, e});
  b.add(v + "pos_embed", {1, 1 + g * g, e});
  if (c.dune_num_register_tokens > 0) b.add(v + "register_tokens", {1, c.dune_num_register_tokens, e});
  b.conv(v + "patch_embed.proj", 3, e, c.patch_size);
  for (std::int64_t i = 0; i < c.enc_depth; ++i) {
    const std::string p = v + "blocks.0." + std::to_string(i);
    b.norm(p + ".norm1", e);
    b.linear(p + ".attn.qkv", e, 3 * e);
    b.linear(p + ".attn.proj", e, e);
    if (c.dune_layerscale) b.add(p + ".ls1.gamma", {e});
    b.norm(p + ".norm2", e);
    b.linear(p + ".mlp.fc1", e, c.enc_mlp_hidden());
    b.linear(p + ".mlp.fc2", c.enc_mlp_hidden(), e);
    if (c.dune_layerscale) b.add(p + ".ls2.gamma", {e});
  }
  b.norm("norm", e);
}

void add_decoder_block(CatalogBuilder& b, const std::string& p, std::int64_t dim, std::int64_t hidden) {
  b.norm(p + ".norm1", dim);
  b.linear(p + ".attn.qkv", dim, 3 * dim);
  b.linear(p + ".attn.proj", dim, dim);
  for (const char* proj : {"projq", "projk", "projv", "proj"}) b.linear(p + ".cross_attn." + proj, dim, dim);
  b.norm(p + ".norm2", dim);
  b.norm(p + ".norm3", dim);
  b.linear(p + ".mlp.fc1", dim, hidden);
  b.linear(p + ".mlp.fc2", hidden, dim);
  b.norm(p + ".norm_y", dim);
}

void add_head(CatalogBuilder& b, const std::string& head, const Mast3rConfig& c) {
  const std::string dpt = head + ".dpt";
  const std::int64_t f = c.dpt_feature_dim;
  const auto& ld = c.dpt_layer_dims;
  for (int i = 0; i < 4; ++i) {
    b.add(dpt + ".scratch.layer" + std::to_string(i + 1) + "_rn.weight", {f, ld[i], 3, 3}, {}, WeightKind::kConv);
  }
  for (int i = 0; i < 4; ++i) {
    b.add(dpt + ".scratch.layer_rn." + std::to_string(i) + ".weight", {f, ld[i], 3, 3},
          dpt + ".scratch.layer" + std::to_string(i + 1) + "_rn.weight", WeightKind::kConv);
  }
  for (int r = 1; r <= 4; ++r) {
    const std::string p = dpt + ".scratch.refinenet" + std::to_string(r);
    b.conv(p + ".out_conv", f, f, 1);
    for (const char* unit : {".resConfUnit1", ".resConfUnit2"}) {
      b.conv(p + unit + ".conv1", f, f, 3);
      b.conv(p + unit + ".conv2", f, f, 3);
    }
  }
  b.conv(dpt + ".head.0", f, f / 2, 3);
  b.conv(dpt + ".head.2", f / 2, c.dpt_last_dim, 3);
  b.conv(dpt + ".head.4", c.dpt_last_dim, c.dpt_num_channels(), 1);
  const std::string ap = dpt + ".act_postprocess.";
  b.conv(ap + "0.0", c.enc_embed_dim, ld[0], 1);
  b.conv_transpose(ap + "0.1", ld[0], ld[0], 4);
  b.conv(ap + "1.0", c.dec_embed_dim, ld[1], 1);
  b.conv_transpose(ap + "1.1", ld[1], ld[1], 2);
  b.conv(ap + "2.0", c.dec_embed_dim, ld[2], 1);
  b.conv(ap + "3.0", c.dec_embed_dim, ld[3], 1);
  b.conv(ap + "3.1", ld[3], ld[3], 3);
  b.linear(head + ".head_local_features.fc1", c.local_mlp_in(), c.local_mlp_hidden());
  b.linear(head + ".head_local_features.fc2", c.local_mlp_hidden(), c.local_mlp_out());
}

}  // namespace

std::vector<WeightSpec> mast3r_weight_catalog(const Mast3rConfig& c) {
  CatalogBuilder b;
  const std::int64_t e = c.enc_embed_dim;
  const std::int64_t d = c.dec_embed_dim;
  if (c.is_dune()) {
    add_dune_encoder(b, c);
  } else {
    b.add("mask_token", {1, 1, d});
    b.conv("patch_embed.proj", 3, e, c.patch_size);
    for (std::int64_t i = 0; i < c.enc_depth; ++i) {
      add_encoder_block(b, "enc_blocks." + std::to_string(i), e, c.enc_mlp_hidden());
    }
    b.norm("enc_norm", e);
  }
  b.linear("decoder_embed", e, d);
  for (std::int64_t i = 0; i < c.dec_depth; ++i) {
    add_decoder_block(b, "dec_blocks." + std::to_string(i), d, c.dec_mlp_hidden());
  }
  b.norm("dec_norm", d);
  for (std::int64_t i = 0; i < c.dec_depth; ++i) {
    add_decoder_block(b, "dec_blocks2." + std::to_string(i), d, c.dec_mlp_hidden());
  }
  add_head(b, "downstream_head1", c);
  add_head(b, "downstream_head2", c);
  return b.take();
}

// ---- check_weights ----------------------------------------------------------------------------

const std::string* Mast3rWeightMap::find(std::string_view name) const {
  const auto it = file_name_.find(name);
  return it == file_name_.end() ? nullptr : &it->second;
}

const TensorInfo* Mast3rWeightMap::find(const SafetensorsFile& file, std::string_view name) const {
  const std::string* file_name = find(name);
  return file_name == nullptr ? nullptr : file.find(*file_name);
}

namespace {

bool same_bytes(const SafetensorsFile& file, const TensorInfo& a, const TensorInfo& b) {
  if (a.dtype != b.dtype || a.shape != b.shape) return false;
  const auto x = file.data(a);
  const auto y = file.data(b);
  return std::equal(x.begin(), x.end(), y.begin(), y.end());
}

}  // namespace

Result<Mast3rWeightMap> check_weights(const SafetensorsFile& file, const Mast3rConfig& config, std::size_t max_listed) {
  RECON_RETURN_IF_ERROR(config.validate());
  const std::vector<WeightSpec> catalog = mast3r_weight_catalog(config);
  std::vector<std::string> missing, unexpected, wrong_shape, wrong_dtype, conflicts, both_names;
  std::set<std::string, std::less<>> expected_names;
  Mast3rWeightMap map;

  // Shape and dtype of one present tensor against its catalog entry.
  auto check_present = [&](const TensorInfo& t, const WeightSpec& spec) {
    if (t.shape != spec.shape) {
      wrong_shape.push_back(t.name + ": expected " + shape_to_string(spec.shape) + ", found " +
                            shape_to_string(t.shape));
    }
    if (!is_float_convertible(t.dtype)) {
      wrong_dtype.push_back(t.name + ": dtype " + dtype_name(t.dtype) + " (needs F32, F16 or BF16)");
    }
  };

  std::map<std::string_view, const WeightSpec*> alias_of_canonical;
  for (const WeightSpec& spec : catalog) {
    expected_names.insert(spec.name);
    if (!spec.alias_of.empty()) alias_of_canonical.emplace(spec.alias_of, &spec);
  }
  for (const WeightSpec& spec : catalog) {
    if (!spec.alias_of.empty()) continue;  // handled with its canonical entry below
    const TensorInfo* t = file.find(spec.name);
    const auto alias_it = alias_of_canonical.find(spec.name);
    const WeightSpec* alias = alias_it == alias_of_canonical.end() ? nullptr : alias_it->second;
    const TensorInfo* a = alias != nullptr ? file.find(alias->name) : nullptr;
    if (t == nullptr && a == nullptr) {
      missing.push_back(spec.name + " " + shape_to_string(spec.shape) +
                        (alias != nullptr ? " (or its alias " + alias->name + ")" : ""));
      continue;
    }
    if (t != nullptr) check_present(*t, spec);
    if (a != nullptr) check_present(*a, *alias);
    if (t != nullptr && a != nullptr) {
      both_names.push_back(spec.name);
      // Only meaningful when both have the right shape; otherwise wrong_shape already says so.
      if (t->shape == spec.shape && a->shape == spec.shape && !same_bytes(file, *t, *a)) {
        conflicts.push_back(spec.name + " and " + alias->name + " hold different data");
      }
    }
    const std::string& held = t != nullptr ? t->name : a->name;
    map.file_name_.emplace(spec.name, held);
    if (alias != nullptr) map.file_name_.emplace(alias->name, held);
  }
  for (const TensorInfo& t : file.tensors()) {
    if (expected_names.count(t.name) == 0) {
      unexpected.push_back(t.name + " " + dtype_name(t.dtype) + " " + shape_to_string(t.shape));
    }
  }

  if (missing.empty() && unexpected.empty() && wrong_shape.empty() && wrong_dtype.empty() && conflicts.empty()) {
    if (!both_names.empty()) {
      map.notes_.push_back(std::to_string(both_names.size()) +
                           " aliased DPT weights are stored under both names with identical data (e.g. " +
                           both_names.front() + ")");
    }
    return map;
  }

  std::string message = "weights do not match the MASt3R config (" + std::string(config.is_dune() ? "DUNE " : "") +
                        "enc " + std::to_string(config.enc_embed_dim) + "x" + std::to_string(config.enc_depth) +
                        ", dec " + std::to_string(config.dec_embed_dim) + "x" + std::to_string(config.dec_depth) +
                        "): " + std::to_string(missing.size()) + " missing, " + std::to_string(unexpected.size()) +
                        " unexpected, " + std::to_string(wrong_shape.size()) + " wrong shape, " +
                        std::to_string(wrong_dtype.size()) + " wrong dtype, " + std::to_string(conflicts.size()) +
                        " alias conflicts";
  std::size_t listed = 0;
  std::size_t total = 0;
  const std::pair<const char*, const std::vector<std::string>*> groups[] = {
      {"missing", &missing},         {"unexpected", &unexpected},    {"wrong shape", &wrong_shape},
      {"wrong dtype", &wrong_dtype}, {"alias conflict", &conflicts},
  };
  for (const auto& [label, lines] : groups) {
    for (const std::string& line : *lines) {
      ++total;
      if (listed < max_listed) {
        message += "\n  " + std::string(label) + ": " + line;
        ++listed;
      }
    }
  }
  if (total > listed) message += "\n  ... and " + std::to_string(total - listed) + " more";
  return invalid_argument(std::move(message));
}

}  // namespace recon::gpu
