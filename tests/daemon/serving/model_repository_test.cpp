// ModelRepository on directories made here: versions, model.conf, the weights file, and every
// refusal (paths outside the root, bad model.conf, missing versions).
#include "daemon/serving/model_repository.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace recon::daemon {
namespace {

namespace fs = std::filesystem;

class ModelRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("recon-repository-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& relative, const std::string& text = "weights") {
    const fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  std::string at(const std::string& relative) const { return (root_ / relative).string(); }

  fs::path root_;
};

TEST_F(ModelRepositoryTest, AModelDirectoryGivesItsHighestVersionAndModelConf) {
  write("head/model.conf", "# a retrieval head\nkind = retrieval\nbackbone = mast3r\nprecision = fp16\n");
  write("head/1/a.safetensors");
  write("head/2/b.safetensors");
  write("head/10/c.safetensors");
  write("head/notes/d.safetensors");  // not a version: ignored
  const ModelRepository repository(root_.string());
  auto spec = repository.find("head", "retrieval", 0);
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  EXPECT_EQ(spec->name, "retrieval");
  EXPECT_EQ(spec->kind, "retrieval");
  EXPECT_EQ(spec->backbone, "mast3r");
  EXPECT_EQ(spec->precision, gpu::Precision::kF16);
  EXPECT_EQ(spec->version, 10u);
  EXPECT_EQ(spec->path, at("head/10/c.safetensors"));

  auto second = repository.find("head", "retrieval", 2);
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_EQ(second->version, 2u);
  EXPECT_EQ(second->path, at("head/2/b.safetensors"));
  EXPECT_EQ(repository.find("head", "retrieval", 3).status().code(), StatusCode::kNotFound);
}

TEST_F(ModelRepositoryTest, WithoutModelConfOrVersionsTheOneWeightsFileIsAMast3rModel) {
  write("plain/model.safetensors");
  write("plain/README.txt");
  const ModelRepository repository(root_.string());
  auto spec = repository.find("plain", "plain", 0);
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  EXPECT_EQ(spec->kind, "mast3r");
  EXPECT_EQ(spec->version, 0u);
  EXPECT_FALSE(spec->precision.has_value());
  EXPECT_EQ(spec->path, at("plain/model.safetensors"));
  // Version 1 of a model without version directories does not exist.
  EXPECT_EQ(repository.find("plain", "plain", 1).status().code(), StatusCode::kNotFound);
}

TEST_F(ModelRepositoryTest, ModelOnnxInAVersionDirectoryOrAnOnnxFileIsAnOnnxModel) {
  write("resnet/1/model.onnx");
  write("resnet/2/model.onnx");
  write("bare.onnx");
  const ModelRepository repository(root_.string());
  auto spec = repository.find("resnet", "resnet", 0);
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  EXPECT_EQ(spec->kind, "onnx");
  EXPECT_EQ(spec->version, 2u);
  EXPECT_EQ(spec->path, at("resnet/2/model.onnx"));
  auto file = repository.find("bare.onnx", "bare", 0);
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(file->kind, "onnx");
  // model.conf still decides.
  write("resnet/model.conf", "kind = mast3r\n");
  EXPECT_EQ(repository.find("resnet", "resnet", 0)->kind, "mast3r");
}

// Triton's layout with its config: the platform makes it an onnx model, max_batch_size with
// dynamic_batching its batching, the inputs and outputs its declared signature; or the same
// batching from model.conf; never from both.
TEST_F(ModelRepositoryTest, ConfigPbtxtOrModelConfSetsDynamicBatching) {
  write("resnet/1/model.onnx");
  write("resnet/config.pbtxt",
        "name: \"resnet\"\nplatform: \"onnxruntime_onnx\"\nmax_batch_size: 16\n"
        "dynamic_batching { max_queue_delay_microseconds: 300 }\n"
        "input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]\n");
  const ModelRepository repository(root_.string());
  auto spec = repository.find("resnet", "resnet", 0);
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  EXPECT_EQ(spec->kind, "onnx");
  ASSERT_TRUE(spec->batching.has_value());
  EXPECT_EQ(*spec->batching, (BatchRule{16, std::chrono::microseconds(300), false}));
  EXPECT_EQ(spec->max_batch_size, 16u);
  ASSERT_EQ(spec->declared_inputs.size(), 1u);
  EXPECT_EQ(spec->declared_inputs[0].dims, (std::vector<int64_t>{3, 224, 224}));

  // Preferred batch sizes, in any order and repeated: the rule has each once, ascending.
  write("resnet/config.pbtxt", "max_batch_size: 16\ndynamic_batching { preferred_batch_size: [ 8, 4, 8 ] }\n");
  spec = repository.find("resnet", "resnet", 0);
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  ASSERT_TRUE(spec->batching.has_value());
  EXPECT_EQ(spec->batching->preferred, (std::vector<uint32_t>{4, 8}));

  // max_batch_size without dynamic_batching: requests may carry a batch, none are combined.
  write("resnet/config.pbtxt", "max_batch_size: 16\n");
  spec = repository.find("resnet", "resnet", 0);
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  EXPECT_FALSE(spec->batching.has_value());

  write("resnet/config.pbtxt", "name: \"other\"\n");
  EXPECT_NE(repository.find("resnet", "resnet", 0).status().message().find("not the model directory's"),
            std::string::npos);
  write("resnet/config.pbtxt", "platform: \"pytorch_libtorch\"\n");
  EXPECT_NE(repository.find("resnet", "resnet", 0).status().message().find("config.pbtxt:1: platform"),
            std::string::npos);

  std::filesystem::remove(root_ / "resnet" / "config.pbtxt");
  write("resnet/model.conf", "max_batch_size = 8\nmax_queue_delay_us = 1000\n");
  spec = repository.find("resnet", "resnet", 0);
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  EXPECT_EQ(*spec->batching, (BatchRule{8, std::chrono::microseconds(1000), false}));
  write("resnet/config.pbtxt", "max_batch_size: 4\n");
  EXPECT_NE(repository.find("resnet", "resnet", 0).status().message().find("keep one"), std::string::npos);
  write("resnet/model.conf", "max_batch_size = many\n");
  EXPECT_NE(repository.find("resnet", "resnet", 0).status().to_string().find("model.conf:1: max_batch_size"),
            std::string::npos);
}

TEST_F(ModelRepositoryTest, ModelConfWeightsChoosesAmongSeveralFiles) {
  write("two/1/fp32.safetensors");
  write("two/1/fp16.safetensors");
  const ModelRepository repository(root_.string());
  const Status ambiguous = repository.find("two", "two", 0).status();
  EXPECT_EQ(ambiguous.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ambiguous.message().find("holds 2 model files"), std::string::npos) << ambiguous.to_string();

  write("two/model.conf", "weights = fp16.safetensors  \n");
  auto spec = repository.find("two", "two", 0);
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  EXPECT_EQ(spec->path, at("two/1/fp16.safetensors"));

  write("two/model.conf", "weights = absent.safetensors\n");
  EXPECT_EQ(repository.find("two", "two", 0).status().code(), StatusCode::kNotFound);
  write("two/model.conf", "weights = ../1/fp16.safetensors\n");
  EXPECT_EQ(repository.find("two", "two", 0).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ModelRepositoryTest, AWeightsFileNamedDirectlyLoadsAsBefore) {
  write("models/tiny.safetensors");
  const ModelRepository repository(root_.string());
  auto spec = repository.find("models/tiny.safetensors", "tiny", 0);
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  EXPECT_EQ(spec->kind, "mast3r");
  EXPECT_EQ(spec->path, at("models/tiny.safetensors"));
  EXPECT_EQ(repository.find("models/tiny.safetensors", "tiny", 2).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ModelRepositoryTest, BadModelConfNamesFileAndLine) {
  write("bad/model.safetensors");
  const ModelRepository repository(root_.string());
  const std::pair<const char*, const char*> cases[] = {
      {"kind = mast3r\nsize = 512\n", "model.conf:2: unknown key 'size'"},
      {"kind = mast3r\nkind = retrieval\n", "model.conf:2: 'kind' is given twice"},
      {"precision = fp8\n", "model.conf:1: precision"},
      {"just words\n", "model.conf:1: expected key = value"},
      {"backbone = Not/A/Name\n", "model.conf:1: backbone"},
  };
  for (const auto& [text, expected] : cases) {
    write("bad/model.conf", text);
    const Status status = repository.find("bad", "bad", 0).status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(status.to_string().find(expected), std::string::npos) << status.to_string();
  }
}

TEST_F(ModelRepositoryTest, PathsOutsideTheRootAndMissingEntriesAreRefused) {
  write("inside/model.safetensors");
  const ModelRepository repository(root_.string());
  for (const char* entry : {"", ".", "/etc/passwd", "../outside", "inside/../../outside", "inside/.."}) {
    EXPECT_EQ(repository.find(entry, "x", 0).status().code(), StatusCode::kInvalidArgument) << entry;
  }
  EXPECT_EQ(repository.find("absent", "x", 0).status().code(), StatusCode::kNotFound);
  const ModelRepository none("");
  EXPECT_FALSE(none.enabled());
  EXPECT_EQ(none.find("inside", "x", 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace recon::daemon
