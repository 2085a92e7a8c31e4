// Triton's config.pbtxt subset: a real-looking configuration read whole, the forms the text format
// allows (lists, repeated fields, <> messages, comments), and every refusal naming file and line.
#include "daemon/serving/triton_config.h"

#include <gtest/gtest.h>

#include <string>

namespace recon::daemon {
namespace {

constexpr const char* kResnet = R"(
name: "resnet"
platform: "onnxruntime_onnx"
max_batch_size: 32   # rows per call
dynamic_batching {
  preferred_batch_size: [ 8, 16 ]
  max_queue_delay_microseconds: 500
}
instance_group [ { count: 1, kind: KIND_GPU } ]
input [
  { name: "x"  data_type: TYPE_FP32  dims: [ 3, -1, -1 ] }
]
output { name: "logits" data_type: TYPE_FP32 dims: [ 1000 ] }
output < name: "features" dims: 2048 >
)";

TEST(TritonConfig, ReadsTheFieldsRecondHonours) {
  auto config = parse_triton_config(kResnet, "resnet/config.pbtxt");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->name, "resnet");
  EXPECT_EQ(config->platform, "onnxruntime_onnx");
  EXPECT_EQ(config->max_batch_size, 32u);
  EXPECT_TRUE(config->dynamic_batching);
  EXPECT_EQ(config->max_queue_delay.count(), 500);
  EXPECT_EQ(config->preferred_batch_sizes, (std::vector<uint32_t>{8, 16}));
  ASSERT_EQ(config->inputs.size(), 1u);
  EXPECT_EQ(config->inputs[0].name, "x");
  EXPECT_EQ(config->inputs[0].data_type, "TYPE_FP32");
  EXPECT_EQ(config->inputs[0].dims, (std::vector<int64_t>{3, -1, -1}));
  ASSERT_EQ(config->outputs.size(), 2u);
  EXPECT_EQ(config->outputs[0].dims, (std::vector<int64_t>{1000}));
  EXPECT_EQ(config->outputs[1].name, "features");
  EXPECT_EQ(config->outputs[1].data_type, "");
  EXPECT_EQ(config->outputs[1].dims, (std::vector<int64_t>{2048}));

  auto bare = parse_triton_config("backend: \"onnxruntime\"\nmax_batch_size: 0\n", "c");
  ASSERT_TRUE(bare.is_ok()) << bare.status().to_string();
  EXPECT_FALSE(bare->dynamic_batching);
  EXPECT_EQ(bare->platform, "onnxruntime_onnx");
  EXPECT_TRUE(parse_triton_config("", "empty").is_ok());
}

TEST(TritonConfig, RefusesWhatItCannotHonourNamingTheLine) {
  const auto refused = [](const std::string& text, const std::string& phrase) {
    auto config = parse_triton_config(text, "m/config.pbtxt");
    ASSERT_FALSE(config.is_ok()) << "accepted: " << text;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(config.status().message().find(phrase), std::string::npos) << config.status().message();
  };
  refused("name: \"m\"\n\nplatform: \"tensorrt_plan\"\n", "m/config.pbtxt:3: platform");
  refused("instance_group [ { count: 2 } ]", "one instance of a model per GPU");
  refused("instance_group [ { kind: KIND_CPU } ]", "KIND_GPU");
  refused("instance_group [ { gpus: [ 0 ] } ]", "not a field recond reads");
  refused("sequence_batching { }", "not a field recond reads");
  refused("max_batch_size: -1", "whole number");
  refused("max_batch_size: 12abc", "whole number");
  refused("input [ { name: \"x\" dims: [ 0 ] } ]", "-1 (any) or at least 1");
  refused("input [ { dims: [ 3 ] } ]", "needs a name");
  refused("input [ { name: \"x\" data_type: FP32 } ]", "TYPE_");
  refused("dynamic_batching { max_queue_delay_microseconds: 5 ", "missing '}'");
  refused("max_batch_size 4", "expected ':'");
  refused("name: \"unterminated\n", "m/config.pbtxt:1");
  refused("max_batch_size: 4\ndynamic_batching { preferred_batch_size: 8 }", "larger than max_batch_size");
  refused(std::string(20, '{'), "expected a field name");
  std::string deep;
  for (int i = 0; i < 20; ++i) deep += "a { ";
  refused(deep, "nested too deeply");
}

}  // namespace
}  // namespace recon::daemon
