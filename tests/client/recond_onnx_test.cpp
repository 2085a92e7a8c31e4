// ONNX models served by the real recond, through librecon: loaded from the model directory (a
// version directory with model.onnx, and a bare .onnx file), run on tensors in a shared-memory
// region and inline, chained on the GPU (a result's tensor as the next model's input), a bool mask
// input and a bool output, compared with PyTorch's outputs (tests/models/onnx/make_torch_models.py);
// dynamic batching from a Triton config.pbtxt (several clients' requests in one engine call, each
// answered with its own rows); bad tensors, missing or unknown inputs, a corrupt model file and a
// config that contradicts its model get typed errors while the daemon keeps serving.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "recon/client.h"
#include "tests/client/recond_process.h"
#include "tools/io/npy.h"

namespace recon::client {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

io::NpyArray npy(const fs::path& path) {
  auto a = io::read_npy_file(path.string());
  if (!a.is_ok()) throw std::runtime_error(a.status().to_string());
  return std::move(*a);
}

std::span<const std::byte> bytes_of(const io::NpyArray& a) {
  return {reinterpret_cast<const std::byte*>(a.data.data()), a.data.size()};
}

std::vector<uint64_t> shape_of(const io::NpyArray& a) {
  return {a.shape.begin(), a.shape.end()};
}

// max |got − want| over the f32 tensor `name` of `result` against `want`.
double max_error(Result& result, const std::string& name, const io::NpyArray& want) {
  const TensorView view = result.tensor(name);
  EXPECT_EQ(std::vector<uint64_t>(view.shape().begin(), view.shape().end()), shape_of(want));
  const auto got = view.as<float>();
  const auto* w = reinterpret_cast<const float*>(want.data.data());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - w[i]));
  return worst;
}

class OnnxWithRecond : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    models_ = fs::temp_directory_path() / ("recon-onnx-models-" + std::to_string(::getpid()));
    fs::create_directories(models_ / "mlp" / "1");
    const fs::path torch(RECON_ONNX_TORCH_MODELS);
    fs::copy_file(torch / "mlp" / "model.onnx", models_ / "mlp" / "1" / "model.onnx");
    fs::copy_file(torch / "head" / "model.onnx", models_ / "head.onnx");
    fs::copy_file(torch / "masked" / "model.onnx", models_ / "masked.onnx");
    // The same MLP, batched across requests (Triton's layout and config).
    fs::create_directories(models_ / "mlp_batched" / "1");
    fs::copy_file(torch / "mlp" / "model.onnx", models_ / "mlp_batched" / "1" / "model.onnx");
    std::ofstream(models_ / "mlp_batched" / "config.pbtxt")
        << "name: \"mlp_batched\"\nplatform: \"onnxruntime_onnx\"\nmax_batch_size: 8\n"
           "dynamic_batching { max_queue_delay_microseconds: 300000 }\n"
           "input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 20 ] } ]\n";
    // The same MLP with its fp32 GEMMs on tensor cores as two fp16 parts (model.conf's precision).
    fs::create_directories(models_ / "mlp_split" / "1");
    fs::copy_file(torch / "mlp" / "model.onnx", models_ / "mlp_split" / "1" / "model.onnx");
    std::ofstream(models_ / "mlp_split" / "model.conf") << "precision = fp32-split\n";
    // A config that names an input the model does not have.
    fs::create_directories(models_ / "mlp_misdeclared" / "1");
    fs::copy_file(torch / "mlp" / "model.onnx", models_ / "mlp_misdeclared" / "1" / "model.onnx");
    std::ofstream(models_ / "mlp_misdeclared" / "config.pbtxt")
        << "max_batch_size: 8\ninput [ { name: \"image\" data_type: TYPE_FP32 dims: [ 20 ] } ]\n";
    // A model file cut short: its load must fail alone.
    std::ifstream in(torch / "mlp" / "model.onnx", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(models_ / "cut.onnx", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    recond_ = new testing::Recond(std::vector<std::string>{"--model-dir", models_.string(), "--precision", "fp32"});
    ASSERT_TRUE(recond_->wait_ready(300s)) << recond_->log();
    Client control = Client::connect_control(recond_->options());
    control.load_model({.name = "mlp"});
    control.load_model({.name = "head", .weights = "head.onnx"});
    control.load_model({.name = "masked", .weights = "masked.onnx"});
    control.load_model({.name = "mlp_batched"});
    control.load_model({.name = "mlp_split"});
  }
  static void TearDownTestSuite() {
    if (recond_ != nullptr) {
      EXPECT_EQ(recond_->stop(), 0) << recond_->log();
    }
    delete recond_;
    recond_ = nullptr;
    std::error_code ec;
    fs::remove_all(models_, ec);
  }

  static fs::path torch(const std::string& file) { return fs::path(RECON_ONNX_TORCH_MODELS) / file; }

  static inline testing::Recond* recond_ = nullptr;
  static inline fs::path models_;
};

TEST_F(OnnxWithRecond, InfersFromARegionAndInlineAsPyTorchDoes) {
  Client client = Client::connect(recond_->options());
  const io::NpyArray x5 = npy(torch("mlp/input_1.npy")), x1 = npy(torch("mlp/input_0.npy"));
  ImageBuffer buffer = client.create_buffer(x5.data.size(), "onnx-test");
  const BufferTensor view = buffer.write_tensor(0, DType::kF32, shape_of(x5), bytes_of(x5));
  const ModelInput in_region[] = {ModelInput::buffer_tensor("x", view)};
  Result region = client.infer("mlp", in_region).get();
  EXPECT_LE(max_error(region, "y", npy(torch("mlp/expected_1.npy"))), 1e-5);
  EXPECT_EQ(region.model(), "mlp");

  const ModelInput in_message[] = {ModelInput::inline_tensor("x", DType::kF32, shape_of(x1), bytes_of(x1))};
  Result inline_result = client.infer("mlp", in_message).get();
  EXPECT_LE(max_error(inline_result, "y", npy(torch("mlp/expected_0.npy"))), 1e-5);
}

// fp32-split from model.conf: the model reports it and answers as PyTorch does (within the split's
// accuracy on a device with tensor cores; the scalar path on one without).
TEST_F(OnnxWithRecond, ServesAModelInThePrecisionItsModelConfNames) {
  Client control = Client::connect_control(recond_->options());
  bool listed = false;
  for (const ModelStatus& m : control.status().models) {
    if (m.name != "mlp_split") continue;
    listed = true;
    EXPECT_EQ(m.precision, Precision::kFp32Split);
    EXPECT_EQ(std::string(precision_name(m.precision)), "fp32-split");
  }
  EXPECT_TRUE(listed);
  Client client = Client::connect(recond_->options());
  const io::NpyArray x = npy(torch("mlp/input_1.npy"));
  const ModelInput in[] = {ModelInput::inline_tensor("x", DType::kF32, shape_of(x), bytes_of(x))};
  Result y = client.infer("mlp_split", in).get();
  EXPECT_LE(max_error(y, "y", npy(torch("mlp/expected_1.npy"))), 1e-5);
}

TEST_F(OnnxWithRecond, ChainsAResultTensorIntoTheNextModelOnTheGpu) {
  Client client = Client::connect(recond_->options());
  const io::NpyArray x = npy(torch("mlp/input_1.npy"));
  const ModelInput first[] = {ModelInput::inline_tensor("x", DType::kF32, shape_of(x), bytes_of(x))};
  Result y = client.infer("mlp", first).get();  // not fetched: its tensor stays on the GPU
  const ModelInput second[] = {ModelInput::result("x", y, "y")};
  Result z = client.infer("head", second).get();
  EXPECT_LE(max_error(z, "z", npy(torch("head/chain_expected_1.npy"))), 1e-5);
  EXPECT_EQ(y.fetched_bytes(), 0u);
}

// A bool input goes as U8, one byte each (the wire has no bool element), and a bool output comes
// back as I32 0 or 1, as integer outputs do.
TEST_F(OnnxWithRecond, TakesABoolMaskAsBytesAndAnswersBooleansAsI32) {
  Client client = Client::connect(recond_->options());
  const io::NpyArray x = npy(torch("masked/x_1.npy")), mask = npy(torch("masked/mask_1.npy"));
  ASSERT_EQ(mask.descr, "|b1");
  const ModelInput in[] = {ModelInput::inline_tensor("x", DType::kF32, shape_of(x), bytes_of(x)),
                           ModelInput::inline_tensor("mask", DType::kU8, shape_of(mask), bytes_of(mask))};
  Result r = client.infer("masked", in).get();
  EXPECT_LE(max_error(r, "y", npy(torch("masked/y_1.npy"))), 1e-5);
  const io::NpyArray want = npy(torch("masked/positive_1.npy"));
  const TensorView positive = r.tensor("positive");
  EXPECT_EQ(std::vector<uint64_t>(positive.shape().begin(), positive.shape().end()), shape_of(want));
  const auto got = positive.as<int32_t>();
  ASSERT_EQ(got.size(), want.data.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want.data[i]) << "element " << i;
}

// Two clients' requests (1 + 5 rows and 1 row) reach the model within its queue delay: they run as
// one call over 7 rows, and each result holds exactly its own rows, as PyTorch computes them.
TEST_F(OnnxWithRecond, DynamicBatchingRunsSeveralClientsRequestsInOneCall) {
  Client a = Client::connect(recond_->options());
  Client b = Client::connect(recond_->options());
  const io::NpyArray x1 = npy(torch("mlp/input_0.npy")), x5 = npy(torch("mlp/input_1.npy"));
  ASSERT_EQ(x1.shape.front(), 1u);
  ASSERT_EQ(x5.shape.front(), 5u);
  const ModelInput one[] = {ModelInput::inline_tensor("x", DType::kF32, shape_of(x1), bytes_of(x1))};
  const ModelInput five[] = {ModelInput::inline_tensor("x", DType::kF32, shape_of(x5), bytes_of(x5))};
  Client control = Client::connect_control(recond_->options());
  const auto counters = [&] {
    for (const ModelStatus& m : control.status().models) {
      if (m.name == "mlp_batched") return m;
    }
    ADD_FAILURE() << "mlp_batched is not in the status";
    return ModelStatus{};
  };
  const ModelStatus before = counters();
  EXPECT_EQ(before.max_batch, 8u);
  EXPECT_EQ(before.max_queue_delay_us, 300000u);
  EXPECT_EQ(before.inputs, (std::vector<std::string>{"x"}));

  PendingResult p1 = a.infer("mlp_batched", one);
  PendingResult p2 = b.infer("mlp_batched", five);
  PendingResult p3 = a.infer("mlp_batched", one);
  Result r1 = p1.get(), r2 = p2.get(), r3 = p3.get();
  EXPECT_LE(max_error(r1, "y", npy(torch("mlp/expected_0.npy"))), 1e-5);
  EXPECT_LE(max_error(r2, "y", npy(torch("mlp/expected_1.npy"))), 1e-5);
  EXPECT_LE(max_error(r3, "y", npy(torch("mlp/expected_0.npy"))), 1e-5);
  EXPECT_GT(r2.timings().batch_size, 1u) << "the 5-row request ran with others";

  const ModelStatus after = counters();
  EXPECT_EQ(after.requests - before.requests, 3u);
  EXPECT_EQ(after.inferences - before.inferences, 7u) << "rows";
  EXPECT_LT(after.executions - before.executions, 3u) << "requests shared an engine call";

  // More rows than max_batch_size in one request: refused before it queues.
  const std::vector<float> nine(9 * 20, 0.25f);
  const ModelInput too_many[] = {ModelInput::inline_tensor(
      "x", DType::kF32, {9, 20}, {reinterpret_cast<const std::byte*>(nine.data()), nine.size() * 4})};
  try {
    a.infer("mlp_batched", too_many).get();
    ADD_FAILURE() << "9 rows accepted by a model of max_batch_size 8";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("at most 8 rows"), std::string::npos) << e.what();
  }
  // A config contradicting its model fails that load alone, naming what is wrong.
  try {
    control.load_model({.name = "mlp_misdeclared"});
    ADD_FAILURE() << "a config naming an input the model lacks loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'image', which the model has not"), std::string::npos) << e.what();
  }
  Result again = a.infer("mlp_batched", one).get();
  EXPECT_LE(max_error(again, "y", npy(torch("mlp/expected_0.npy"))), 1e-5);
}

TEST_F(OnnxWithRecond, BadTensorsAndModelFilesGetTypedErrorsAndTheDaemonKeepsServing) {
  Client client = Client::connect(recond_->options());
  auto refused = [&](std::span<const ModelInput> inputs, const std::string& model, const std::string& phrase) {
    try {
      client.infer(model, inputs).get();
      ADD_FAILURE() << "accepted: " << phrase;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
    }
  };
  const std::vector<int32_t> ints(5 * 20, 1);
  const std::span<const std::byte> int_bytes(reinterpret_cast<const std::byte*>(ints.data()), ints.size() * 4);
  const ModelInput wrong_type[] = {ModelInput::inline_tensor("x", DType::kI32, {5, 20}, int_bytes)};
  refused(wrong_type, "mlp", "must be FLOAT");
  const std::vector<float> floats(5 * 21, 0.5f);
  const std::span<const std::byte> float_bytes(reinterpret_cast<const std::byte*>(floats.data()), floats.size() * 4);
  const ModelInput wrong_shape[] = {ModelInput::inline_tensor("x", DType::kF32, {5, 21}, float_bytes)};
  refused(wrong_shape, "mlp", "[-1,20]");
  refused({}, "mlp", "takes one input 'x'");
  const ModelInput extra[] = {ModelInput::inline_tensor("x", DType::kF32, {5, 20}, float_bytes.first(400)),
                              ModelInput::inline_tensor("w", DType::kF32, {1}, float_bytes.first(4))};
  refused(extra, "mlp", "has no input 'w'");

  // A tensor that does not fit its region is refused before anything runs.
  ImageBuffer buffer = client.create_buffer(4096, "onnx-test-small");
  EXPECT_THROW(buffer.tensor(0, DType::kF32, {5, 20000}), Error);

  Client control = Client::connect_control(recond_->options());
  try {
    control.load_model({.name = "cut", .weights = "cut.onnx"});
    ADD_FAILURE() << "a cut model file loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cut"), std::string::npos) << e.what();
  }

  // Everyone else is still served.
  const io::NpyArray x = npy(torch("mlp/input_0.npy"));
  const ModelInput good[] = {ModelInput::inline_tensor("x", DType::kF32, shape_of(x), bytes_of(x))};
  Result r = client.infer("mlp", good).get();
  EXPECT_LE(max_error(r, "y", npy(torch("mlp/expected_0.npy"))), 1e-5);
}

}  // namespace
}  // namespace recon::client
