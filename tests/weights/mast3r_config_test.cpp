// Mast3rConfig: official defaults, JSON parsing (infinities, unknown keys, types), validation and
// the round trip through safetensors metadata.
#include "gpu/weights/mast3r_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "gpu/weights/safetensors.h"
#include "gpu/weights/safetensors_writer.h"

namespace recon::gpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kInf = Mast3rConfig::kInf;

Mast3rConfig parse_ok(std::string_view json) {
  Result<Mast3rConfig> r = Mast3rConfig::from_json(json);
  EXPECT_TRUE(r.is_ok()) << json << "\n" << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : Mast3rConfig{};
}

Status parse_error(std::string_view json) {
  Result<Mast3rConfig> r = Mast3rConfig::from_json(json);
  EXPECT_FALSE(r.is_ok()) << "accepted: " << json;
  return r.status();
}

TEST(Mast3rConfig, DefaultsAreTheReleasedViTLargeModel) {
  const Mast3rConfig c;
  EXPECT_TRUE(c.validate().is_ok());
  EXPECT_EQ(c.enc_embed_dim, 1024);
  EXPECT_EQ(c.enc_depth, 24);
  EXPECT_EQ(c.enc_num_heads, 16);
  EXPECT_EQ(c.dec_embed_dim, 768);
  EXPECT_EQ(c.dec_depth, 12);
  EXPECT_EQ(c.dec_num_heads, 12);
  EXPECT_EQ(c.patch_size, 16);
  EXPECT_EQ(c.mlp_ratio, 4.0);
  EXPECT_EQ(c.head_type, "catmlp+dpt");
  EXPECT_EQ(c.output_mode, "pts3d+desc24");
  EXPECT_EQ(c.depth_mode, (ActivationMode{"exp", -kInf, kInf}));
  EXPECT_EQ(c.conf_mode, (ActivationMode{"exp", 1.0, kInf}));
  EXPECT_EQ(c.desc_conf_mode, (ActivationMode{"exp", 0.0, kInf}));
  EXPECT_EQ(c.desc_mode, "norm");
  EXPECT_TRUE(c.two_confs);
  EXPECT_EQ(c.norm_eps, 1e-6);
  EXPECT_EQ(c.pos_embed, "RoPE100");
  // Derived values used by the runtime.
  EXPECT_EQ(c.desc_dim(), 24);
  EXPECT_EQ(c.rope_base(), 100.0);
  EXPECT_EQ(c.enc_head_dim(), 64);
  EXPECT_EQ(c.dec_head_dim(), 64);
  EXPECT_EQ(c.enc_mlp_hidden(), 4096);
  EXPECT_EQ(c.dec_mlp_hidden(), 3072);
  EXPECT_EQ(c.local_mlp_in(), 1792);
  EXPECT_EQ(c.local_mlp_hidden(), 7168);
  EXPECT_EQ(c.local_mlp_out(), 6400);
  EXPECT_THAT(c.dpt_hooks(), ElementsAre(0, 6, 9, 12));
  EXPECT_THAT(c.dpt_layer_dims, ElementsAre(96, 192, 384, 768));
  EXPECT_EQ(c.dpt_feature_dim, 256);
  EXPECT_EQ(c.dpt_last_dim, 128);
  EXPECT_EQ(c.dpt_num_channels(), 4);
}

TEST(Mast3rConfig, EmptyObjectKeepsEveryDefault) {
  EXPECT_EQ(parse_ok("{}"), Mast3rConfig{});
}

TEST(Mast3rConfig, ParsesTheOfficialConstructorArgumentsWithInfinityStrings) {
  // The README's training constructor, as our converter writes it, plus the unused official keys.
  const Mast3rConfig c = parse_ok(R"({
      "enc_depth": 24, "dec_depth": 12, "enc_embed_dim": 1024, "dec_embed_dim": 768,
      "enc_num_heads": 16, "dec_num_heads": 12, "pos_embed": "RoPE100",
      "patch_embed_cls": "ManyAR_PatchEmbed", "img_size": [512, 512], "head_type": "catmlp+dpt",
      "output_mode": "pts3d+desc24", "depth_mode": ["exp", "-inf", "inf"],
      "conf_mode": ["exp", 1, "inf"], "landscape_only": true, "two_confs": true,
      "desc_conf_mode": ["exp", 0, "Infinity"], "freeze": "none", "mask_ratio": 0.9,
      "norm_im2_in_dec": true, "mlp_ratio": 4.0, "patch_size": 16, "desc_mode": "norm",
      "norm_layer": null})");
  EXPECT_EQ(c.depth_mode, (ActivationMode{"exp", -kInf, kInf}));
  EXPECT_EQ(c.conf_mode.vmax, kInf);
  EXPECT_EQ(c.desc_conf_mode.vmax, kInf);
  EXPECT_EQ(c.patch_embed_cls, "ManyAR_PatchEmbed");
  EXPECT_TRUE(c.landscape_only);
  // Only the keys that do not matter differ from the defaults.
  Mast3rConfig expected;
  expected.patch_embed_cls = "ManyAR_PatchEmbed";
  expected.landscape_only = true;
  EXPECT_EQ(c, expected);
}

TEST(Mast3rConfig, PartialObjectsOverrideOnlyTheirKeys) {
  const Mast3rConfig c = parse_ok(R"({"enc_depth": 2, "img_size": 224, "conf_mode": ["sigmoid", 0.5, 3]})");
  EXPECT_EQ(c.enc_depth, 2);
  EXPECT_THAT(c.img_size, ElementsAre(224, 224));
  EXPECT_EQ(c.conf_mode, (ActivationMode{"sigmoid", 0.5, 3.0}));
  EXPECT_EQ(c.dec_depth, 12);
  EXPECT_EQ(c.desc_conf_mode, (ActivationMode{"exp", 0.0, kInf}));
}

TEST(Mast3rConfig, NullDescConfModeFollowsConfMode) {
  const Mast3rConfig c = parse_ok(R"({"desc_conf_mode": null, "conf_mode": ["exp", 2, "inf"]})");
  EXPECT_EQ(c.desc_conf_mode, (ActivationMode{"exp", 2.0, kInf}));
}

TEST(Mast3rConfig, RejectsUnknownKeysNamingAllOfThem) {
  const Status s = parse_error(R"({"enc_depth": 2, "enc_dpeth": 3, "use_flash": true})");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("unknown keys 'enc_dpeth', 'use_flash'"));
}

TEST(Mast3rConfig, RejectsWrongTypes) {
  EXPECT_THAT(parse_error(R"({"enc_depth": "24"})").message(), HasSubstr("enc_depth must be an integer, got string"));
  EXPECT_THAT(parse_error(R"({"enc_depth": 24.0})").message(), HasSubstr("enc_depth must be an integer"));
  EXPECT_THAT(parse_error(R"({"two_confs": 1})").message(), HasSubstr("two_confs must be true or false"));
  EXPECT_THAT(parse_error(R"({"pos_embed": 100})").message(), HasSubstr("pos_embed must be a string"));
  EXPECT_THAT(parse_error(R"({"depth_mode": "exp"})").message(), HasSubstr("depth_mode must be an array"));
  EXPECT_THAT(parse_error(R"({"conf_mode": ["exp", 1]})").message(), HasSubstr("conf_mode must be an array"));
  EXPECT_THAT(parse_error(R"({"conf_mode": ["exp", 1, "huge"]})").message(), HasSubstr("'huge'"));
  EXPECT_THAT(parse_error(R"({"conf_mode": null})").message(), HasSubstr("conf_mode null"));
  EXPECT_THAT(parse_error(R"({"dpt_layer_dims": [1, 2, 3]})").message(), HasSubstr("array of 4 integers"));
  EXPECT_THAT(parse_error(R"({"img_size": [1, 2, 3]})").message(), HasSubstr("img_size"));
  EXPECT_THAT(parse_error("[]").message(), HasSubstr("must be a JSON object"));
  EXPECT_THAT(parse_error("{").message(), HasSubstr("JSON error at byte 1"));
  EXPECT_THAT(parse_error(R"({"enc_depth": 1, "enc_depth": 2})").message(), HasSubstr("duplicate key"));
}

TEST(Mast3rConfig, ValidationRejectsInconsistentOrUnsupportedValues) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"enc_num_heads": 15})", "not divisible by enc_num_heads"},
      {R"({"enc_embed_dim": 40, "enc_num_heads": 4})", "not a multiple of 4"},
      {R"({"dec_embed_dim": 768, "dec_num_heads": 128})", "not a multiple of 4"},
      {R"({"dec_depth": 3})", "dec_depth = 3 is outside [4, 1024]"},
      {R"({"enc_depth": 0})", "enc_depth"},
      {R"({"patch_size": 0})", "patch_size = 0"},
      {R"({"enc_embed_dim": -64})", "enc_embed_dim"},
      {R"({"mlp_ratio": 0})", "mlp_ratio"},
      {R"({"mlp_ratio": 1e300})", "mlp_ratio"},
      {R"({"head_type": "linear"})", "head_type 'linear' is not supported"},
      {R"({"output_mode": "pts3d"})", "output_mode 'pts3d'"},
      {R"({"output_mode": "pts3d+desc"})", "output_mode"},
      {R"({"output_mode": "pts3d+desc+24"})", "output_mode"},
      {R"({"output_mode": "pts3d+desc0"})", "output_mode"},
      {R"({"depth_mode": ["tanh", "-inf", "inf"]})", "depth_mode mode 'tanh'"},
      {R"({"depth_mode": ["exp", 0, "inf"]})", "bounds must be (-inf, inf)"},
      {R"({"conf_mode": ["relu", 1, "inf"]})", "conf_mode mode 'relu'"},
      {R"({"conf_mode": ["exp", "-inf", "inf"]})", "finite vmin"},
      {R"({"conf_mode": ["exp", 3, 1]})", "vmin <= vmax"},
      {R"({"desc_conf_mode": ["sigmoid", 0, "inf"]})", "sigmoid needs a finite vmax"},
      {R"({"desc_mode": "l2"})", "desc_mode 'l2'"},
      {R"({"pos_embed": "cosine"})", "pos_embed 'cosine' is not supported"},
      {R"({"pos_embed": "RoPE"})", "pos_embed"},
      {R"({"pos_embed": "RoPEabc"})", "pos_embed"},
      {R"({"pos_embed": "RoPE-5"})", "pos_embed"},
      {R"({"norm_im2_in_dec": false})", "norm_im2_in_dec"},
      {R"({"norm_eps": 0})", "norm_eps"},
      {R"({"mask_ratio": 2})", "mask_ratio"},
      {R"({"dpt_layer_dims": [0, 1, 2, 3]})", "dpt_layer_dims"},
      {R"({"dpt_feature_dim": 1})", "dpt_feature_dim"},
      {R"({"dpt_last_dim": 0})", "dpt_last_dim"},
      {R"({"local_mlp_ratio": -1})", "local_mlp_ratio"},
      {R"({"img_size": [0, 512]})", "img_size"},
  };
  for (const auto& [json, needle] : cases) {
    const Status s = parse_error(json);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(s.message(), HasSubstr(needle)) << json;
  }
}

TEST(Mast3rConfig, TestOnlyFieldsShrinkTheHeads) {
  const Mast3rConfig c = parse_ok(R"({"enc_embed_dim": 32, "enc_num_heads": 2, "enc_depth": 2,
      "dec_embed_dim": 16, "dec_num_heads": 1, "dec_depth": 4, "patch_size": 4, "mlp_ratio": 2,
      "output_mode": "pts3d+desc3", "dpt_layer_dims": [4, 8, 8, 16], "dpt_feature_dim": 8,
      "dpt_last_dim": 6, "local_mlp_ratio": 0.5})");
  EXPECT_EQ(c.enc_mlp_hidden(), 64);
  EXPECT_EQ(c.dec_mlp_hidden(), 32);
  EXPECT_EQ(c.local_mlp_in(), 48);
  EXPECT_EQ(c.local_mlp_hidden(), 24);
  EXPECT_EQ(c.local_mlp_out(), (3 + 1) * 16);
  EXPECT_THAT(c.dpt_hooks(), ElementsAre(0, 2, 3, 4));
  Mast3rConfig one_conf = c;
  one_conf.two_confs = false;
  EXPECT_EQ(one_conf.local_mlp_out(), 3 * 16);
}

TEST(Mast3rConfig, ToJsonRoundTrips) {
  const Mast3rConfig official;
  const std::string text = official.to_json();
  EXPECT_THAT(text, HasSubstr(R"("depth_mode":["exp","-inf","inf"])"));
  EXPECT_THAT(text, HasSubstr(R"("conf_mode":["exp",1,"inf"])"));
  // The released model's JSON holds only official constructor arguments.
  for (const char* key : {"dpt_", "local_mlp_ratio", "norm_eps"}) EXPECT_THAT(text, Not(HasSubstr(key)));
  EXPECT_EQ(parse_ok(text), official);

  Mast3rConfig tiny;
  tiny.enc_embed_dim = 32;
  tiny.enc_num_heads = 2;
  tiny.dec_depth = 4;
  tiny.dpt_layer_dims = {4, 8, 8, 16};
  tiny.dpt_feature_dim = 8;
  tiny.dpt_last_dim = 6;
  tiny.local_mlp_ratio = 0.5;
  tiny.norm_eps = 1e-5;
  tiny.conf_mode = {"sigmoid", -0.25, 7.5};
  ASSERT_TRUE(tiny.validate().is_ok());
  EXPECT_EQ(parse_ok(tiny.to_json()), tiny);
}

TEST(Mast3rConfig, DuneEncoderSettingsParseValidateAndRoundTrip) {
  const Mast3rConfig c = parse_ok(R"({"encoder": "dune", "patch_size": 14, "enc_embed_dim": 384,
      "enc_num_heads": 6, "enc_depth": 12, "dune_backbone": "dune_vitsmall_14_448_encoder",
      "dune_num_register_tokens": 4, "dune_pos_embed_grid": 32, "dune_interpolate_offset": 0.1,
      "dune_interpolate_antialias": false, "dune_layerscale": true, "dune_ffn_layer": "mlp"})");
  EXPECT_TRUE(c.is_dune());
  EXPECT_EQ(c.local_mlp_in(), 384 + 768);
  EXPECT_EQ(c.local_mlp_out(), 25 * 14 * 14);
  EXPECT_EQ(c.dune_norm_eps, 1e-5);
  EXPECT_EQ(parse_ok(c.to_json()), c);
  // A DUNE ViT has no RoPE: a head dim that is not a multiple of 4 is fine there.
  parse_ok(R"({"encoder": "dune", "patch_size": 14, "enc_embed_dim": 30, "enc_num_heads": 5})");
  // A CroCo config writes none of the DUNE keys.
  EXPECT_THAT(Mast3rConfig{}.to_json(), Not(HasSubstr("dune")));
  EXPECT_THAT(Mast3rConfig{}.to_json(), Not(HasSubstr("encoder")));

  const std::pair<const char*, const char*> bad[] = {
      {R"({"encoder": "vit"})", "encoder 'vit' is not supported"},
      {R"({"encoder": "dune"})", "patch_size = 16: a DUNE encoder has 14-pixel patches"},
      {R"({"encoder": "dune", "patch_size": 14, "dune_ffn_layer": "swiglufused"})", "dune_ffn_layer 'swiglufused'"},
      {R"({"encoder": "dune", "patch_size": 14, "dune_num_register_tokens": -1})", "dune_num_register_tokens"},
      {R"({"encoder": "dune", "patch_size": 14, "dune_pos_embed_grid": 0})", "dune_pos_embed_grid"},
      {R"({"encoder": "dune", "patch_size": 14, "dune_interpolate_offset": 1})", "dune_interpolate_offset"},
      {R"({"encoder": "dune", "patch_size": 14, "dune_norm_eps": 0})", "dune_norm_eps"},
      {R"({"encoder": "dune", "patch_size": 14, "dune_layerscale": 1})", "dune_layerscale must be true or false"},
  };
  for (const auto& [json, needle] : bad) EXPECT_THAT(parse_error(json).message(), HasSubstr(needle)) << json;
}

TEST(Mast3rConfig, ComesFromSafetensorsMetadataOrDefaults) {
  SafetensorsWriter plain;
  Result<SafetensorsFile> no_meta = SafetensorsFile::from_bytes(plain.serialize());
  ASSERT_TRUE(no_meta.is_ok());
  Result<Mast3rConfig> defaults = Mast3rConfig::from_safetensors(*no_meta);
  ASSERT_TRUE(defaults.is_ok());
  EXPECT_EQ(*defaults, Mast3rConfig{});

  SafetensorsWriter with_meta;
  with_meta.add_metadata("mast3r.config", R"({"enc_depth": 6, "depth_mode": ["exp", "-inf", "inf"]})");
  Result<SafetensorsFile> f = SafetensorsFile::from_bytes(with_meta.serialize());
  ASSERT_TRUE(f.is_ok());
  Result<Mast3rConfig> c = Mast3rConfig::from_safetensors(*f);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->enc_depth, 6);

  SafetensorsWriter bad;
  bad.add_metadata("mast3r.config", R"({"enc_depth": 6, "bogus": 1})");
  Result<SafetensorsFile> g = SafetensorsFile::from_bytes(bad.serialize());
  ASSERT_TRUE(g.is_ok());
  const Result<Mast3rConfig> e = Mast3rConfig::from_safetensors(*g);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("metadata entry mast3r.config"));
  EXPECT_THAT(e.status().message(), HasSubstr("'bogus'"));
}

}  // namespace
}  // namespace recon::gpu
