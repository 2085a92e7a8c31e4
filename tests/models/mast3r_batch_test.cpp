// Pipelined batches of the MASt3R engine: infer_batch must give, for every pair, what infer() gives
// on that pair alone (the independent per-pair path, itself checked against the PyTorch reference
// in mast3r_golden_test.cpp), encode each distinct image once, and refuse bad input; images encoded
// once for many calls (encode_images, infer_encoded); encode() and device-tensor image sources; host image packing; and
// the graph submission options the pipeline is built on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "gpu/models/mast3r/image_packing.h"
#include "gpu/models/mast3r/mast3r_engine.h"
#include "gpu/ops/elementwise_basic.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using testing::GpuTest;

const std::string kGoldenDir = RECON_GOLDEN_DIR;

struct Image {
  std::vector<uint8_t> pixels;
  int64_t height = 0, width = 0;
  ImageU8View view() const { return {pixels.data(), height, width, 0}; }
};

Image random_image(int64_t height, int64_t width, uint32_t seed) {
  Image img{std::vector<uint8_t>(static_cast<size_t>(height * width * 3)), height, width};
  std::mt19937 gen(seed);
  for (auto& b : img.pixels) b = static_cast<uint8_t>(gen());
  return img;
}

double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    worst = std::max(worst, double(std::abs(a[i] - b[i])));
  }
  return worst;
}

class Mast3rBatchTest : public GpuTest {
 protected:
  std::unique_ptr<Mast3rEngine> load(const std::string& config, Precision precision) {
    auto e = Mast3rEngine::load(rt(), kGoldenDir + "/" + config + "/model.safetensors", precision);
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    return e.is_ok() ? std::move(e).value() : nullptr;
  }

  // Every pair's outputs from infer_batch against infer() on that pair; the largest difference.
  double batch_vs_pairwise(Mast3rEngine& engine, std::span<const ImageU8View> images,
                           std::span<const ImagePair> pairs) {
    auto batch = engine.infer_batch(images, pairs);
    EXPECT_TRUE(batch.is_ok()) << batch.status().to_string();
    if (!batch.is_ok()) return INFINITY;
    EXPECT_EQ(batch->size(), pairs.size());
    double worst = 0;
    for (size_t k = 0; k < pairs.size() && k < batch->size(); ++k) {
      auto one = engine.infer(std::span(&images[pairs[k].first], 1), std::span(&images[pairs[k].second], 1));
      EXPECT_TRUE(one.is_ok()) << one.status().to_string();
      if (!one.is_ok()) return INFINITY;
      EXPECT_EQ((*batch)[k].shape, one->shape) << "pair " << k;
      const auto got = (*batch)[k].tensors.list();
      const auto want = one->tensors.list();
      for (size_t i = 0; i < got.size(); ++i) {
        const double d =
            max_abs_difference(testing::download_f32(rt(), *got[i]), testing::download_f32(rt(), *want[i]));
        EXPECT_LE(d, 1e-6) << "pair " << k << " (" << pairs[k].first << ", " << pairs[k].second << ") "
                           << Mast3rOutputs::kNames[i];
        worst = std::max(worst, d);
      }
      EXPECT_GT((*batch)[k].gpu_ms, 0.0);
    }
    return worst;
  }
};

TEST_F(Mast3rBatchTest, ConsecutiveSequenceEqualsPairByPairAndEncodesEachImageOnce) {
  // Default grouping (4 images → one chunk; 3 pairs < pair_batch → pair by pair) and a smaller one
  // (chunks of 3 and 1; one batched step of 2 pairs, then 1 pair alone).
  const Mast3rBatchOptions groupings[] = {{}, {3, 2}};
  for (Precision p : {Precision::kF32, Precision::kF16Heads}) {
    auto engine = load("tiny_same", p);
    ASSERT_NE(engine, nullptr);
    std::vector<Image> images;
    for (uint32_t i = 0; i < 4; ++i) images.push_back(random_image(48, 64, 10 + i));
    std::vector<ImageU8View> views;
    for (const Image& img : images) views.push_back(img.view());
    const auto pairs = consecutive_pairs(views.size());
    ASSERT_EQ(pairs.size(), 3u);

    for (const Mast3rBatchOptions& grouping : groupings) {
      engine->set_batch_options(grouping);
      const uint64_t before = engine->images_encoded();
      auto batch = engine->infer_batch(views, pairs);
      ASSERT_TRUE(batch.is_ok()) << batch.status().to_string();
      EXPECT_EQ(engine->images_encoded() - before, 4u) << "each image encoded once";
      for (const Mast3rResult& r : *batch) EXPECT_EQ(r.shape.batch, 1) << "a pair's result is batch 1";
      const double worst = batch_vs_pairwise(*engine, views, pairs);
      RecordProperty(
          std::string("max_abs_difference_") + precision_name(p) + "_pair_batch_" + std::to_string(grouping.pair_batch),
          std::to_string(worst));
    }
  }
}

// DUNE-MASt3R through the same pipelined batches: its encoder graphs (batched images, chunks) give
// each pair what infer() gives it alone, with every image encoded once.
TEST_F(Mast3rBatchTest, DuneSequenceEqualsPairByPairAndEncodesEachImageOnce) {
  auto engine = load("dune_same", Precision::kF32);
  ASSERT_NE(engine, nullptr);
  engine->set_batch_options({3, 2});
  std::vector<Image> images;
  for (uint32_t i = 0; i < 5; ++i) images.push_back(random_image(42, 56, 30 + i));
  std::vector<ImageU8View> views;
  for (const Image& img : images) views.push_back(img.view());
  const auto pairs = consecutive_pairs(views.size());
  const uint64_t before = engine->images_encoded();
  auto batch = engine->infer_batch(views, pairs);
  ASSERT_TRUE(batch.is_ok()) << batch.status().to_string();
  EXPECT_EQ(engine->images_encoded() - before, 5u) << "each image encoded once";
  RecordProperty("max_abs_difference_fp32", std::to_string(batch_vs_pairwise(*engine, views, pairs)));
}

TEST_F(Mast3rBatchTest, MixedSizesRepeatedImagesAndSwappedPairsEqualPairByPair) {
  auto engine = load("tiny_mixed", Precision::kF32);
  ASSERT_NE(engine, nullptr);
  const Image landscape_a = random_image(32, 80, 1), portrait_b = random_image(48, 32, 2),
              landscape_c = random_image(32, 80, 3), portrait_d = random_image(48, 32, 4);
  // Image 4 repeats image 0 (the same source): it must be encoded once with it.
  const std::vector<ImageU8View> views = {landscape_a.view(), portrait_b.view(), landscape_c.view(), portrait_d.view(),
                                          landscape_a.view()};
  const std::vector<ImagePair> pairs = {{0, 1}, {1, 0}, {2, 3}, {4, 2}, {1, 3}, {0, 0}};
  const uint64_t before = engine->images_encoded();
  ASSERT_TRUE(engine->infer_batch(views, pairs).is_ok());
  EXPECT_EQ(engine->images_encoded() - before, 4u);
  batch_vs_pairwise(*engine, views, pairs);
}

TEST_F(Mast3rBatchTest, ResultsAreTheCallersOwnAndStageTimesAddUp) {
  auto engine = load("tiny_same", Precision::kF32);
  ASSERT_NE(engine, nullptr);
  std::vector<Image> images;
  for (uint32_t i = 0; i < 3; ++i) images.push_back(random_image(48, 64, 20 + i));
  std::vector<ImageU8View> views;
  for (const Image& img : images) views.push_back(img.view());
  const auto pairs = consecutive_pairs(3);
  auto first = engine->infer_batch(views, pairs);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  const auto kept = testing::download_f32(rt(), (*first)[0].tensors.pts3d[0]);
  std::reverse(views.begin(), views.end());
  ASSERT_TRUE(engine->infer_batch(views, pairs).is_ok());
  EXPECT_EQ(testing::download_f32(rt(), (*first)[0].tensors.pts3d[0]), kept) << "a later call overwrote a result";
  double last_done = 0;
  for (const Mast3rResult& r : *first) {
    double sum = 0;
    for (const auto& [_, ms] : r.stage_ms) sum += ms;
    EXPECT_DOUBLE_EQ(sum, r.gpu_ms);
    EXPECT_GT(r.wall_ms, 0.0);
    last_done = std::max(last_done, r.wall_ms);
    // The call's GPU span (first copy in to last copy out) holds each pair's share of the graphs.
    if (rt().caps().timestamp_period_ns > 0) {
      EXPECT_EQ(r.gpu_span_ms, first->front().gpu_span_ms);
      EXPECT_GE(r.gpu_span_ms, r.gpu_ms);
    }
  }
  if (rt().caps().timestamp_period_ns > 0) {
    EXPECT_LE(first->front().gpu_span_ms, last_done);
  }
}

TEST_F(Mast3rBatchTest, BadInputIsInvalidArgument) {
  auto engine = load("tiny_same", Precision::kF32);
  ASSERT_NE(engine, nullptr);
  const Image a = random_image(48, 64, 1), b = random_image(48, 64, 2);
  const std::vector<ImageU8View> views = {a.view(), b.view()};
  const std::vector<ImagePair> out_of_range = {{0, 2}}, negative = {{-1, 0}}, good = {{0, 1}};
  for (const auto& pairs : {out_of_range, negative}) {
    auto r = engine->infer_batch(views, pairs);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("outside the batch of 2"), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(engine->infer_batch({}, good).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->infer_batch(views, {}).status().code(), StatusCode::kInvalidArgument);
  const std::vector<ImageU8View> no_data = {a.view(), ImageU8View{nullptr, 48, 64, 0}};
  EXPECT_EQ(engine->infer_batch(no_data, good).status().code(), StatusCode::kInvalidArgument);
  const std::vector<ImageU8View> odd = {a.view(), ImageU8View{b.pixels.data(), 40, 64, 0}};
  auto r = engine->infer_batch(odd, good);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("image 1"), std::string::npos) << r.status().message();
  EXPECT_EQ(engine->encode({}).status().code(), StatusCode::kInvalidArgument);
  const Image other = random_image(32, 64, 3);
  const std::vector<ImageU8View> two_sizes = {a.view(), other.view()};
  EXPECT_EQ(engine->encode(two_sizes).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(Mast3rBatchTest, EncodedImagesGiveWhatInferBatchGivesWithoutEncodingAgain) {
  auto engine = load("tiny_mixed", Precision::kF32);
  ASSERT_NE(engine, nullptr);
  engine->set_batch_options({2, 2});  // runs of two images; pairs of one shape two at a time
  const Image a = random_image(32, 80, 11), b = random_image(48, 32, 12), c = random_image(32, 80, 13),
              d = random_image(32, 80, 14);
  const std::vector<ImageU8View> views = {a.view(), b.view(), c.view(), d.view()};
  // Encoded in two calls, joined: image i of the set is views[i].
  auto encoded = engine->encode_images(std::span(views).first(3));
  ASSERT_TRUE(encoded.is_ok()) << encoded.status().to_string();
  auto last = engine->encode_images(std::span(views).subspan(3));
  ASSERT_TRUE(last.is_ok()) << last.status().to_string();
  ASSERT_TRUE(encoded->append(std::move(last).value()).is_ok());
  ASSERT_EQ(encoded->size(), 4u);
  EXPECT_EQ(encoded->image_size(1), (ViewSize{48, 32}));

  const std::vector<ImagePair> pairs = {{0, 2}, {2, 0}, {0, 3}, {3, 2}, {1, 0}, {2, 1}, {1, 1}};
  const uint64_t before = engine->images_encoded();
  auto got = engine->infer_encoded(*encoded, pairs);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(engine->images_encoded(), before) << "infer_encoded ran the encoder";
  auto want = engine->infer_batch(views, pairs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_EQ(got->size(), pairs.size());
  for (size_t k = 0; k < pairs.size(); ++k) {
    EXPECT_EQ((*got)[k].shape, (*want)[k].shape) << "pair " << k;
    const auto g = (*got)[k].tensors.list();
    const auto w = (*want)[k].tensors.list();
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_LE(max_abs_difference(testing::download_f32(rt(), *g[i]), testing::download_f32(rt(), *w[i])), 1e-6)
          << "pair " << k << " " << Mast3rOutputs::kNames[i];
    }
  }

  // Without view 2's points (what a reconstruction asks for): the six other outputs as before, and
  // no pts3d_2 or conf_2.
  auto descriptors = engine->infer_encoded(*encoded, pairs, {.view2_points = false});
  ASSERT_TRUE(descriptors.is_ok()) << descriptors.status().to_string();
  ASSERT_EQ(descriptors->size(), pairs.size());
  for (size_t k = 0; k < pairs.size(); ++k) {
    const Mast3rOutputs& d = (*descriptors)[k].tensors;
    EXPECT_FALSE(d.pts3d[1].defined()) << "pair " << k;
    EXPECT_FALSE(d.conf[1].defined()) << "pair " << k;
    const auto g = d.list();
    const auto w = (*got)[k].tensors.list();
    for (size_t i = 0; i < g.size(); ++i) {
      if (g[i] == &d.pts3d[1] || g[i] == &d.conf[1]) continue;
      EXPECT_EQ(testing::download_f32(rt(), *g[i]), testing::download_f32(rt(), *w[i]))
          << "pair " << k << " " << Mast3rOutputs::kNames[i];
    }
  }

  const std::vector<ImagePair> out_of_range = {{0, 4}};
  auto bad = engine->infer_encoded(*encoded, out_of_range);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("outside the 4 encoded"), std::string::npos) << bad.status().message();
  EXPECT_EQ(engine->infer_encoded(*encoded, {}).status().code(), StatusCode::kInvalidArgument);
  const std::vector<ImagePair> first = {{0, 0}};
  auto none = engine->infer_encoded(EncodedImages{}, first);
  EXPECT_NE(none.status().message().find("outside the 0 encoded"), std::string::npos) << none.status().message();
  // Another engine's encodings: its tokens may have another width.
  auto other = load("tiny_mixed", Precision::kF32);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->infer_encoded(*encoded, pairs).status().code(), StatusCode::kInvalidArgument);
  auto foreign = other->encode_images(std::span(views).first(1));
  ASSERT_TRUE(foreign.is_ok());
  EXPECT_EQ(encoded->append(std::move(foreign).value()).code(), StatusCode::kInvalidArgument);

  // The encoder runs, as the retrieval head reads them: runs of one size (a and c share the first,
  // b has its own, d came in the appended set), each row naming its image, whose tokens are those
  // encode() gives for that image alone.
  std::vector<int> seen(views.size(), 0);
  const std::vector<EncodedImages::Run> runs = encoded->runs();
  EXPECT_EQ(runs.size(), 3u);
  for (const EncodedImages::Run& run : runs) {
    ASSERT_NE(run.tokens, nullptr);
    ASSERT_EQ(run.tokens->shape().at(0), static_cast<int64_t>(run.images.size()));
    const std::vector<float> rows = testing::download_f32(rt(), *run.tokens);
    const size_t per_image = rows.size() / run.images.size();
    for (size_t r = 0; r < run.images.size(); ++r) {
      const size_t i = run.images[r];
      ++seen.at(i);
      auto alone = engine->encode(std::span(&views[i], 1));
      ASSERT_TRUE(alone.is_ok()) << alone.status().to_string();
      const std::vector<float> want = testing::download_f32(rt(), *alone);
      ASSERT_EQ(want.size(), per_image);
      const std::vector<float> row(rows.begin() + static_cast<std::ptrdiff_t>(r * per_image),
                                   rows.begin() + static_cast<std::ptrdiff_t>((r + 1) * per_image));
      EXPECT_LE(max_abs_difference(row, want), 1e-6) << "image " << i;
    }
  }
  EXPECT_EQ(seen, std::vector<int>(views.size(), 1));
}

TEST_F(Mast3rBatchTest, EncodeGivesTheEncoderTokensInTheCallersOwnTensor) {
  for (Precision p : {Precision::kF32, Precision::kF16}) {
    auto engine = load("tiny_same", p);
    ASSERT_NE(engine, nullptr);
    const Image a = random_image(48, 64, 5), b = random_image(48, 64, 6);
    const std::vector<ImageU8View> views = {a.view(), b.view()};
    auto tokens = engine->encode(views);
    ASSERT_TRUE(tokens.is_ok()) << tokens.status().to_string();
    const Mast3rConfig& c = engine->config();
    EXPECT_EQ(tokens->shape(), (Shape{2, (48 / c.patch_size) * (64 / c.patch_size), c.enc_embed_dim}));
    EXPECT_EQ(tokens->dtype(), p == Precision::kF32 ? DType::kF32 : DType::kF16);
    const auto got = testing::download_f32(rt(), *tokens);

    // infer() keeps the tokens it decoded from: they are the tap enc_out_1 / enc_out_2.
    auto pair = engine->infer(std::span(&views[0], 1), std::span(&views[1], 1));
    ASSERT_TRUE(pair.is_ok()) << pair.status().to_string();
    std::vector<float> want = testing::download_f32(rt(), *engine->tap(pair->shape, "enc_out_1"));
    const auto second = testing::download_f32(rt(), *engine->tap(pair->shape, "enc_out_2"));
    want.insert(want.end(), second.begin(), second.end());
    EXPECT_EQ(max_abs_difference(got, want), 0.0);

    // A later call does not reuse the tensor.
    const Image c2 = random_image(48, 64, 7);
    const std::vector<ImageU8View> others = {c2.view(), c2.view()};
    ASSERT_TRUE(engine->encode(others).is_ok());
    EXPECT_EQ(testing::download_f32(rt(), *tokens), got);
  }
}

TEST_F(Mast3rBatchTest, DeviceImageSourceGivesTheSameResultsAsHostBytes) {
  auto engine = load("tiny_mixed", Precision::kF32);
  ASSERT_NE(engine, nullptr);
  const Image a = random_image(32, 80, 8), b = random_image(48, 32, 9);
  auto on_device = Tensor::from_host(rt(), DType::kU8, {48, 32, 3}, b.pixels.data(), b.pixels.size());
  ASSERT_TRUE(on_device.is_ok()) << on_device.status().to_string();
  ImageU8View device_b{nullptr, 48, 32, 0};
  device_b.device = &on_device.value();

  const ImageU8View host_a = a.view(), host_b = b.view();
  auto want = engine->infer(std::span(&host_a, 1), std::span(&host_b, 1));
  auto got = engine->infer(std::span(&host_a, 1), std::span(&device_b, 1));
  ASSERT_TRUE(want.is_ok() && got.is_ok()) << got.status().to_string();
  for (size_t i = 0; i < Mast3rOutputs::kNames.size(); ++i) {
    EXPECT_EQ(testing::download_f32(rt(), *got->tensors.list()[i]),
              testing::download_f32(rt(), *want->tensors.list()[i]))
        << Mast3rOutputs::kNames[i];
  }
  // The model input of view 2 (tap input_2, [1, 3, H, W]) is 2·v/255 − 1 of the device bytes.
  const Tensor* input = engine->tap(got->shape, "input_2");
  ASSERT_NE(input, nullptr);
  const auto normalised = testing::download_f32(rt(), *input);
  ASSERT_EQ(normalised.size(), b.pixels.size());
  double worst = 0;
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t i = 0; i < 48 * 32; ++i) {
      const double want_value = 2.0 * b.pixels[i * 3 + c] / 255.0 - 1.0;
      worst = std::max(worst, std::abs(normalised[c * 48 * 32 + i] - want_value));
    }
  }
  EXPECT_LE(worst, 1e-6);

  const std::vector<ImageU8View> mixed = {host_a, device_b};
  auto batch = engine->infer_batch(mixed, std::vector<ImagePair>{{1, 0}, {0, 1}});
  ASSERT_TRUE(batch.is_ok()) << batch.status().to_string();
  EXPECT_EQ(testing::download_f32(rt(), (*batch)[1].tensors.pts3d[1]),
            testing::download_f32(rt(), want->tensors.pts3d[1]));
  auto tokens = engine->encode(std::span(&device_b, 1));
  auto host_tokens = engine->encode(std::span(&host_b, 1));
  ASSERT_TRUE(tokens.is_ok() && host_tokens.is_ok());
  EXPECT_EQ(testing::download_f32(rt(), *tokens), testing::download_f32(rt(), *host_tokens));

  // Wrong dtype or shape: a clear error, nothing run.
  auto f32 = Tensor::empty(rt(), DType::kF32, {48, 32, 3});
  auto wrong_shape = Tensor::empty(rt(), DType::kU8, {32, 48, 3});
  ASSERT_TRUE(f32.is_ok() && wrong_shape.is_ok());
  for (const Tensor* t : {&f32.value(), &wrong_shape.value()}) {
    ImageU8View bad{nullptr, 48, 32, 0};
    bad.device = t;
    auto r = engine->infer(std::span(&host_a, 1), std::span(&bad, 1));
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("view 2 image 0: device source is"), std::string::npos) << r.status().message();
  }
}

// A call's host images go into staging memory on several threads where they are large (one image
// per thread at a time); strided rows and contiguous images alike arrive packed, nothing else written.
TEST(ImagePacking, EveryImageArrivesPackedOnAnyNumberOfThreads) {
  for (int count : {1, 3, 9}) {
    SCOPED_TRACE(std::to_string(count) + " images");
    std::vector<Image> images;
    std::vector<std::vector<uint8_t>> sources;
    std::vector<ImagePackJob> jobs;
    size_t total = 0;
    for (int i = 0; i < count; ++i) {
      images.push_back(random_image(384 + 16 * i, 512, 60 + i));
      total += images.back().pixels.size();
    }
    std::vector<uint8_t> packed(total + 1, 0xCD);  // one guard byte
    size_t at = 0;
    for (int i = 0; i < count; ++i) {
      const Image& img = images[i];
      const size_t row = static_cast<size_t>(img.width) * 3, stride = i % 2 == 1 ? row + 5 : row;
      std::vector<uint8_t> src(stride * img.height, 0xAB);
      for (int64_t y = 0; y < img.height; ++y) std::copy_n(img.pixels.data() + y * row, row, src.data() + y * stride);
      sources.push_back(std::move(src));
      jobs.push_back({sources.back().data(), img.height, img.width, stride, packed.data() + at});
      at += img.pixels.size();
    }
    pack_images(jobs);
    at = 0;
    for (int i = 0; i < count; ++i) {
      EXPECT_TRUE(std::equal(images[i].pixels.begin(), images[i].pixels.end(), packed.begin() + at)) << "image " << i;
      at += images[i].pixels.size();
    }
    EXPECT_EQ(packed.back(), 0xCD);
  }
}

// The host-side plan, without a GPU.
TEST(Mast3rBatchPlan, SequenceEncodesInChunksOfTwoAndRunsEachPairOnceItsTokensAreReady) {
  const std::vector<ViewSize> sizes(5, ViewSize{384, 512});
  const std::vector<int> source_of = {0, 1, 2, 3, 4};
  const auto pairs = consecutive_pairs(5);
  const BatchPlan plan = plan_batch(sizes, source_of, pairs, 2);
  EXPECT_EQ(plan.images, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(plan.uses, (std::vector<int>{1, 2, 2, 2, 1}));
  EXPECT_EQ(plan.chunks, (std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4}}));
  EXPECT_EQ(plan.row_of[3], (TokenRow{1, 1}));
  EXPECT_EQ(plan.ready_after, (std::vector<int>{0, 1, 1, 2}));
  EXPECT_EQ(plan.order, (std::vector<size_t>{0, 1, 2, 3}));
}

TEST(Mast3rBatchPlan, MixedSizesChunkPerSizeAndRepeatedSourcesAreOneImage) {
  // Images 0 and 2 landscape, 1 portrait, 3 repeats image 1's source.
  const std::vector<ViewSize> sizes = {{384, 512}, {512, 384}, {384, 512}, {512, 384}};
  const std::vector<int> source_of = {0, 1, 2, 1};
  const std::vector<ImagePair> pairs = {{2, 0}, {1, 3}, {3, 2}, {0, 2}};
  const BatchPlan plan = plan_batch(sizes, source_of, pairs, 2);
  EXPECT_EQ(plan.images, (std::vector<int>{2, 0, 1}));  // first-use order
  EXPECT_EQ(plan.uses, (std::vector<int>{3, 2, 3}));
  EXPECT_EQ(plan.chunks, (std::vector<std::vector<int>>{{0, 1}, {2}}));  // the landscape pair first
  EXPECT_EQ(plan.pair_images[1], (std::array<int, 2>{2, 2}));
  EXPECT_EQ(plan.ready_after, (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(plan.order, (std::vector<size_t>{0, 3, 1, 2}));
}

// Two graphs chained through a timeline wait across the two compute queues (the same queue on a
// device with one): y = (a + b) + b, with the copies in and out as the caller's command buffers.
class GraphSubmitTest : public GpuTest {};

TEST_F(GraphSubmitTest, WaitsForAnotherGraphsTimelineAcrossQueues) {
  const auto a = testing::random_floats(1000, 1), b = testing::random_floats(1000, 2);
  const Tensor ta = testing::upload_f32(rt(), DType::kF32, {1000}, a);
  const Tensor tb = testing::upload_f32(rt(), DType::kF32, {1000}, b);
  auto x = Tensor::empty(rt(), DType::kF32, {1000});
  auto y = Tensor::empty(rt(), DType::kF32, {1000});
  ASSERT_TRUE(x.is_ok() && y.is_ok());
  Context& ctx = rt().context();
  if (ctx.has_second_compute_queue()) {
    EXPECT_NE(ctx.second_compute_queue().queue, ctx.compute_queue().queue);
  } else {
    EXPECT_EQ(&ctx.second_compute_queue(), &ctx.compute_queue());
  }
  Graph first(rt()), second(rt());
  ASSERT_TRUE(ops::add(first, ta, tb, *x).is_ok());
  ASSERT_TRUE(ops::add(second, *x, tb, *y).is_ok());
  for (int round = 0; round < 3; ++round) {
    GraphSubmit on_second;
    on_second.queue = &rt().context().second_compute_queue();
    auto v1 = first.submit(on_second);
    ASSERT_TRUE(v1.is_ok()) << v1.status().to_string();
    GraphSubmit after_first;
    after_first.waits = {{first.timeline(), *v1}};
    auto v2 = second.submit(after_first);
    ASSERT_TRUE(v2.is_ok()) << v2.status().to_string();
    EXPECT_EQ(second.last_submitted(), *v2);
    ASSERT_TRUE(second.wait(*v2).is_ok());
  }
  const auto got = testing::download_f32(rt(), *y);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], (a[i] + b[i]) + b[i]) << i;
}

}  // namespace
}  // namespace recon::gpu
