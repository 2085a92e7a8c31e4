// The MASt3R weight catalog against the official state_dict key list (data/, copied from
// shared/notes/mast3r-state-dict-keys.tsv), and check_weights() on small synthetic files.
#include "gpu/weights/mast3r_weight_catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "gpu/weights/half_float.h"
#include "gpu/weights/safetensors_writer.h"

namespace recon::gpu {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// "(1024, 3, 16, 16)" / "(1024,)" → {1024, 3, 16, 16} / {1024}
std::vector<std::int64_t> parse_tuple(std::string s) {
  std::vector<std::int64_t> out;
  for (char& c : s) {
    if (c == '(' || c == ')' || c == ',') c = ' ';
  }
  std::istringstream in(s);
  std::int64_t v;
  while (in >> v) out.push_back(v);
  return out;
}

std::map<std::string, std::vector<std::int64_t>> load_official_keys() {
  std::ifstream in(std::string(RECON_WEIGHTS_TEST_DATA_DIR) + "/mast3r-state-dict-keys.tsv");
  EXPECT_TRUE(in.good()) << "missing test data " << RECON_WEIGHTS_TEST_DATA_DIR;
  std::map<std::string, std::vector<std::int64_t>> keys;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, shape, dtype;
    std::getline(fields, name, '\t');
    std::getline(fields, shape, '\t');
    std::getline(fields, dtype, '\t');
    EXPECT_EQ(dtype, "torch.float32") << name;
    EXPECT_TRUE(keys.emplace(name, parse_tuple(shape)).second) << "duplicate " << name;
  }
  return keys;
}

std::uint64_t numel(const std::vector<std::int64_t>& shape) {
  std::uint64_t n = 1;
  for (const std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

TEST(Mast3rWeightCatalog, DefaultConfigReproducesTheOfficialStateDict) {
  const auto official = load_official_keys();
  ASSERT_EQ(official.size(), 1017u);
  const std::vector<WeightSpec> catalog = mast3r_weight_catalog(Mast3rConfig{});
  ASSERT_EQ(catalog.size(), 1017u);
  std::map<std::string, std::vector<std::int64_t>> ours;
  for (const WeightSpec& w : catalog) EXPECT_TRUE(ours.emplace(w.name, w.shape).second) << "duplicate " << w.name;
  for (const auto& [name, shape] : official) {
    const auto it = ours.find(name);
    if (it == ours.end()) {
      ADD_FAILURE() << "catalog lacks " << name;
    } else {
      EXPECT_EQ(it->second, shape) << name;
    }
  }
  for (const auto& [name, shape] : ours) EXPECT_EQ(official.count(name), 1u) << "catalog invents " << name;
}

TEST(Mast3rWeightCatalog, ParameterCountsMatchTheSpec) {
  std::uint64_t unique = 0, with_aliases = 0;
  for (const WeightSpec& w : mast3r_weight_catalog(Mast3rConfig{})) {
    with_aliases += numel(w.shape);
    if (w.alias_of.empty()) unique += numel(w.shape);
  }
  EXPECT_EQ(unique, 688638856u);  // mast3r-spec.md §9
  EXPECT_EQ(with_aliases, 695274376u);
}

// The module kind decides the device layout: every rank-2 weight is an nn.Linear's, every rank-4
// one a convolution's, transposed only in the two upsampling reassembly stages of each DPT.
TEST(Mast3rWeightCatalog, EveryWeightNamesItsModuleKind) {
  int linear = 0, conv = 0, transposed = 0;
  for (const WeightSpec& w : mast3r_weight_catalog(Mast3rConfig{})) {
    SCOPED_TRACE(w.name);
    const bool weight = w.name.ends_with(".weight");
    if (w.kind == WeightKind::kLinear) {
      ++linear;
      EXPECT_TRUE(weight && w.shape.size() == 2);
    } else if (w.kind == WeightKind::kConv) {
      ++conv;
      EXPECT_TRUE(weight && w.shape.size() == 4);
    } else if (w.kind == WeightKind::kConvTranspose) {
      ++transposed;
      EXPECT_TRUE(w.name.find(".act_postprocess.0.1.") != std::string::npos ||
                  w.name.find(".act_postprocess.1.1.") != std::string::npos);
    } else {
      EXPECT_TRUE(!weight || (w.shape.size() != 2 && w.shape.size() != 4));
    }
  }
  // Encoder 24×4 + decoder_embed + 2 decoders × 12 × 8 + 2 heads × 2 local-feature fc.
  EXPECT_EQ(linear, 96 + 1 + 192 + 4);
  // patch_embed + per head: 4 layer_rn (and their 4 aliases), 4 × (out_conv + 4 RCU convs),
  // head.0/2/4, act_postprocess 0.0, 1.0, 2.0, 3.0, 3.1.
  EXPECT_EQ(conv, 1 + 2 * (8 + 20 + 3 + 5));
  EXPECT_EQ(transposed, 4);
}

TEST(Mast3rWeightCatalog, EightAliasesPointAtCanonicalEntriesOfTheSameShape) {
  const std::vector<WeightSpec> catalog = mast3r_weight_catalog(Mast3rConfig{});
  std::map<std::string, const WeightSpec*> by_name;
  for (const WeightSpec& w : catalog) by_name[w.name] = &w;
  int aliases = 0;
  for (const WeightSpec& w : catalog) {
    if (w.alias_of.empty()) continue;
    ++aliases;
    EXPECT_THAT(w.name, HasSubstr(".dpt.scratch.layer_rn."));
    ASSERT_EQ(by_name.count(w.alias_of), 1u) << w.alias_of;
    EXPECT_EQ(by_name[w.alias_of]->shape, w.shape);
    EXPECT_TRUE(by_name[w.alias_of]->alias_of.empty());
  }
  EXPECT_EQ(aliases, 8);
  EXPECT_EQ(by_name["downstream_head2.dpt.scratch.layer_rn.3.weight"]->alias_of,
            "downstream_head2.dpt.scratch.layer4_rn.weight");
  // Present although never used at inference.
  EXPECT_EQ(by_name.count("mask_token"), 1u);
  EXPECT_EQ(by_name.count("downstream_head1.dpt.scratch.refinenet4.resConfUnit1.conv1.weight"), 1u);
}

// A tiny model: every tensor a few hundred bytes, same structure as the real one.
Mast3rConfig tiny_config() {
  Mast3rConfig c;
  c.patch_size = 4;
  c.enc_embed_dim = 16;
  c.enc_num_heads = 2;
  c.enc_depth = 2;
  c.dec_embed_dim = 8;
  c.dec_num_heads = 1;
  c.dec_depth = 4;
  c.mlp_ratio = 2;
  c.output_mode = "pts3d+desc3";
  c.dpt_layer_dims = {4, 4, 8, 8};
  c.dpt_feature_dim = 8;
  c.dpt_last_dim = 4;
  c.local_mlp_ratio = 1;
  return c;
}

TEST(Mast3rWeightCatalog, TinyConfigShrinksEveryTensor) {
  const Mast3rConfig c = tiny_config();
  ASSERT_TRUE(c.validate().is_ok());
  std::map<std::string, std::vector<std::int64_t>> shapes;
  for (const WeightSpec& w : mast3r_weight_catalog(c)) shapes[w.name] = w.shape;
  EXPECT_EQ(shapes.size(), 1u + 2 + 2 * 12 + 2 + 2 + 2 * 4 * 24 + 2 + 2 * 72);
  using S = std::vector<std::int64_t>;
  EXPECT_EQ(shapes["mask_token"], (S{1, 1, 8}));
  EXPECT_EQ(shapes["patch_embed.proj.weight"], (S{16, 3, 4, 4}));
  EXPECT_EQ(shapes["enc_blocks.1.attn.qkv.weight"], (S{48, 16}));
  EXPECT_EQ(shapes["enc_blocks.1.mlp.fc1.weight"], (S{32, 16}));
  EXPECT_EQ(shapes["decoder_embed.weight"], (S{8, 16}));
  EXPECT_EQ(shapes["dec_blocks2.3.mlp.fc2.weight"], (S{8, 16}));
  EXPECT_EQ(shapes["dec_blocks.0.cross_attn.projk.weight"], (S{8, 8}));
  EXPECT_EQ(shapes["downstream_head1.dpt.act_postprocess.0.0.weight"], (S{4, 16, 1, 1}));
  EXPECT_EQ(shapes["downstream_head1.dpt.act_postprocess.0.1.weight"], (S{4, 4, 4, 4}));
  EXPECT_EQ(shapes["downstream_head1.dpt.act_postprocess.3.1.weight"], (S{8, 8, 3, 3}));
  EXPECT_EQ(shapes["downstream_head2.dpt.scratch.layer3_rn.weight"], (S{8, 8, 3, 3}));
  EXPECT_EQ(shapes["downstream_head2.dpt.head.0.weight"], (S{4, 8, 3, 3}));
  EXPECT_EQ(shapes["downstream_head2.dpt.head.2.weight"], (S{4, 4, 3, 3}));
  EXPECT_EQ(shapes["downstream_head2.dpt.head.4.weight"], (S{4, 4, 1, 1}));
  EXPECT_EQ(shapes["downstream_head2.head_local_features.fc1.weight"], (S{24, 24}));
  EXPECT_EQ(shapes["downstream_head2.head_local_features.fc2.weight"], (S{std::int64_t{3 + 1} * 16, 24}));
  EXPECT_EQ(shapes.count("enc_blocks.2.norm1.weight"), 0u);
  EXPECT_EQ(shapes.count("dec_blocks2.4.norm1.weight"), 0u);
}

enum class AliasNames { kCanonical, kAlias, kBoth };

// A complete tiny checkpoint; `skip` leaves tensors out, `reshape` changes one tensor's shape.
SafetensorsWriter tiny_writer(const Mast3rConfig& c, AliasNames names, const std::string& skip = "",
                              const std::string& reshape = "") {
  SafetensorsWriter w;
  w.add_metadata(std::string(Mast3rConfig::kMetadataKey), c.to_json());
  std::map<std::string, std::vector<float>> canonical_values;
  float next = 0.0f;
  for (const WeightSpec& spec : mast3r_weight_catalog(c)) {
    if (spec.name == skip) continue;
    const bool is_alias = !spec.alias_of.empty();
    const bool has_alias = spec.name.find("_rn.weight") != std::string::npos && !is_alias;
    if (is_alias && names == AliasNames::kCanonical) continue;
    if (has_alias && names == AliasNames::kAlias) continue;
    std::vector<std::int64_t> shape = spec.shape;
    if (spec.name == reshape) shape.back() += 1;
    std::vector<float> v(numel(shape));
    if (is_alias && canonical_values.count(spec.alias_of) != 0 && shape == spec.shape) {
      v = canonical_values[spec.alias_of];  // the same parameter under its second name
    } else {
      for (float& x : v) x = (next += 0.25f);
    }
    if (has_alias) canonical_values[spec.name] = v;
    EXPECT_TRUE(w.add_f32(spec.name, shape, v).is_ok());
  }
  return w;
}

Result<Mast3rWeightMap> check(const SafetensorsWriter& w, const Mast3rConfig& c) {
  Result<SafetensorsFile> f = SafetensorsFile::from_bytes(w.serialize());
  EXPECT_TRUE(f.is_ok()) << f.status().to_string();
  if (!f.is_ok()) return f.status();
  return check_weights(*f, c);
}

constexpr const char* kCanon = "downstream_head1.dpt.scratch.layer2_rn.weight";
constexpr const char* kAlias = "downstream_head1.dpt.scratch.layer_rn.1.weight";

TEST(CheckWeights, AcceptsACompleteFileWithCanonicalNamesAndResolvesAliases) {
  const Mast3rConfig c = tiny_config();
  const Result<Mast3rWeightMap> m = check(tiny_writer(c, AliasNames::kCanonical), c);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  ASSERT_NE(m->find(kAlias), nullptr);
  EXPECT_EQ(*m->find(kAlias), kCanon);
  EXPECT_EQ(*m->find(kCanon), kCanon);
  EXPECT_EQ(*m->find("enc_norm.weight"), "enc_norm.weight");
  EXPECT_EQ(m->find("not.a.weight"), nullptr);
  EXPECT_TRUE(m->notes().empty());
}

TEST(CheckWeights, AcceptsAFileThatOnlyHasTheAliasNames) {
  const Mast3rConfig c = tiny_config();
  const SafetensorsWriter w = tiny_writer(c, AliasNames::kAlias);
  Result<SafetensorsFile> f = SafetensorsFile::from_bytes(w.serialize());
  ASSERT_TRUE(f.is_ok());
  ASSERT_EQ(f->find(kCanon), nullptr);
  const Result<Mast3rWeightMap> m = check_weights(*f, c);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(*m->find(kCanon), kAlias);
  const TensorInfo* t = m->find(*f, kCanon);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->name, kAlias);
}

TEST(CheckWeights, AcceptsBothAliasNamesWithEqualDataAndNotesIt) {
  const Mast3rConfig c = tiny_config();
  const Result<Mast3rWeightMap> m = check(tiny_writer(c, AliasNames::kBoth), c);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  ASSERT_EQ(m->notes().size(), 1u);
  EXPECT_THAT(m->notes()[0], HasSubstr("8 aliased DPT weights"));
  EXPECT_EQ(*m->find(kAlias), kCanon);
}

TEST(CheckWeights, ReportsMissingUnexpectedAndWrongShapeInOneError) {
  const Mast3rConfig c = tiny_config();
  SafetensorsWriter w =
      tiny_writer(c, AliasNames::kCanonical, "dec_blocks2.3.norm_y.bias", "enc_blocks.1.mlp.fc2.weight");
  const std::vector<float> extra = {1, 2};
  ASSERT_TRUE(w.add_f32("enc_blocks.2.norm1.weight", {2}, extra).is_ok());
  const Result<Mast3rWeightMap> m = check(w, c);
  ASSERT_FALSE(m.is_ok());
  const std::string& msg = m.status().message();
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("1 missing, 1 unexpected, 1 wrong shape"));
  EXPECT_THAT(msg, HasSubstr("missing: dec_blocks2.3.norm_y.bias [8]"));
  EXPECT_THAT(msg, HasSubstr("unexpected: enc_blocks.2.norm1.weight F32 [2]"));
  EXPECT_THAT(msg, HasSubstr("wrong shape: enc_blocks.1.mlp.fc2.weight: expected [16, 32], found [16, 33]"));
}

TEST(CheckWeights, MissingAliasedWeightMentionsBothNames) {
  const Mast3rConfig c = tiny_config();
  const Result<Mast3rWeightMap> m = check(tiny_writer(c, AliasNames::kCanonical, kCanon), c);
  ASSERT_FALSE(m.is_ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr(std::string("missing: ") + kCanon + " [8, 4, 3, 3] (or its alias " + kAlias + ")"));
}

TEST(CheckWeights, CapsTheListAndCountsTheRest) {
  const Mast3rConfig c = tiny_config();
  const Result<Mast3rWeightMap> m = check(SafetensorsWriter(), c);
  ASSERT_FALSE(m.is_ok());
  const std::size_t expected = mast3r_weight_catalog(c).size() - 8;  // aliases count once
  const std::string& msg = m.status().message();
  EXPECT_THAT(msg, HasSubstr(std::to_string(expected) + " missing"));
  EXPECT_THAT(msg, HasSubstr("... and " + std::to_string(expected - 20) + " more"));
  EXPECT_EQ(std::count(msg.begin(), msg.end(), '\n'), 21);
}

TEST(CheckWeights, RejectsAliasesHoldingDifferentData) {
  const Mast3rConfig c = tiny_config();
  SafetensorsWriter w = tiny_writer(c, AliasNames::kCanonical);
  std::vector<float> other(std::size_t{8} * 4 * 9, -1.0f);
  ASSERT_TRUE(w.add_f32(kAlias, {8, 4, 3, 3}, other).is_ok());
  const Result<Mast3rWeightMap> m = check(w, c);
  ASSERT_FALSE(m.is_ok());
  EXPECT_THAT(m.status().message(), HasSubstr(std::string("alias conflict: ") + kCanon + " and " + kAlias));
}

TEST(CheckWeights, WrongShapedAliasIsReportedUnderItsOwnName) {
  const Mast3rConfig c = tiny_config();
  SafetensorsWriter w = tiny_writer(c, AliasNames::kCanonical);
  std::vector<float> other(std::size_t{8} * 4 * 3 * 4, 0.0f);
  ASSERT_TRUE(w.add_f32(kAlias, {8, 4, 3, 4}, other).is_ok());
  const Result<Mast3rWeightMap> m = check(w, c);
  ASSERT_FALSE(m.is_ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr(std::string("wrong shape: ") + kAlias + ": expected [8, 4, 3, 3], found [8, 4, 3, 4]"));
  EXPECT_THAT(m.status().message(), Not(HasSubstr("alias conflict:")));
}

TEST(CheckWeights, RejectsNonFloatDtypesButAcceptsHalfAndBfloat) {
  const Mast3rConfig c = tiny_config();
  SafetensorsWriter w;
  int i = 0;
  for (const WeightSpec& spec : mast3r_weight_catalog(c)) {
    if (!spec.alias_of.empty()) continue;
    const std::size_t n = numel(spec.shape);
    const Dtype dtype = spec.name == "enc_norm.bias" ? Dtype::kI32 : (i++ % 2 == 0 ? Dtype::kF16 : Dtype::kBF16);
    std::vector<std::byte> bytes(n * dtype_size(dtype), std::byte{0});
    ASSERT_TRUE(w.add_tensor(spec.name, dtype, spec.shape, bytes).is_ok());
  }
  const Result<Mast3rWeightMap> m = check(w, c);
  ASSERT_FALSE(m.is_ok());
  EXPECT_THAT(m.status().message(), HasSubstr("0 missing, 0 unexpected, 0 wrong shape, 1 wrong dtype"));
  EXPECT_THAT(m.status().message(), HasSubstr("wrong dtype: enc_norm.bias: dtype I32"));
}

TEST(CheckWeights, ConfigAndWeightsLoadTogetherFromOneFile) {
  const Mast3rConfig c = tiny_config();
  Result<SafetensorsFile> f = SafetensorsFile::from_bytes(tiny_writer(c, AliasNames::kBoth).serialize());
  ASSERT_TRUE(f.is_ok());
  Result<Mast3rConfig> loaded = Mast3rConfig::from_safetensors(*f);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(*loaded, c);
  const Result<Mast3rWeightMap> m = check_weights(*f, *loaded);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  // A file checked against the wrong config fails with a clear summary, not a crash.
  const Result<Mast3rWeightMap> wrong = check_weights(*f, Mast3rConfig{});
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_THAT(wrong.status().message(), HasSubstr("enc 1024x24, dec 768x12"));
  EXPECT_THAT(wrong.status().message(), HasSubstr("more"));
}

}  // namespace
}  // namespace recon::gpu
