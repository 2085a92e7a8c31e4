// Layout copies checked bit for bit against CPU index arithmetic, for 32-, 16- and 8-bit elements:
// permutations of rank 1–6 (generic and tiled paths), the token ↔ NCHW conversions, slices with
// steps (negative too) and negative bounds, concat of 1–9 inputs along every axis, split, splitting beyond one
// binding, and misuse.
#include "gpu/ops/layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

// Host tensors as raw bytes; element `i` is bytes [i·es, (i+1)·es).
struct Host {
  DType dtype;
  Shape shape;
  std::vector<uint8_t> bytes;
  size_t es() const { return dtype_size(dtype); }
  const uint8_t* at(int64_t i) const { return bytes.data() + i * es(); }
};

class LayoutTest : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (GetParam() == DType::kU8 && !rt().caps().storage_8bit) GTEST_SKIP() << "no 8-bit storage on this device";
  }
  Host random_host(const Shape& shape) {
    Host h{GetParam(), shape, std::vector<uint8_t>(shape_numel(shape) * dtype_size(GetParam()))};
    for (auto& b : h.bytes) b = static_cast<uint8_t>(gen_());
    return h;
  }
  Tensor upload(const Host& h) {
    auto t = Tensor::from_host(rt(), h.dtype, h.shape, h.bytes.data(), h.bytes.size());
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    return std::move(t).value();
  }
  Tensor poisoned_out(const Shape& shape) {
    Tensor t = Tensor::empty(rt(), GetParam(), shape).value();
    std::vector<uint8_t> p(t.bytes(), 0xCD);
    EXPECT_TRUE(t.upload(rt(), p.data(), p.size()).is_ok());
    return t;
  }
  std::vector<uint8_t> download(const Tensor& t) {
    std::vector<uint8_t> v(t.bytes());
    EXPECT_TRUE(t.download(rt(), v.data(), v.size()).is_ok());
    return v;
  }
  // Reference: out element i = in element src(i).
  template <typename F>
  std::vector<uint8_t> gather_ref(const Host& in, int64_t n, F src) {
    std::vector<uint8_t> out(n * in.es());
    for (int64_t i = 0; i < n; ++i) std::memcpy(out.data() + i * in.es(), in.at(src(i)), in.es());
    return out;
  }
  void expect_permute(const Shape& shape, const std::vector<int>& perm) {
    Host in = random_host(shape);
    Shape os(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) os[d] = shape[perm[d]];
    Tensor tin = upload(in), tout = poisoned_out(os);
    Graph g(rt());
    Status s = ops::permute(g, tin, tout, perm);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(g.run().is_ok());
    const auto ist = strides_of(shape), ost = strides_of(os);
    auto want = gather_ref(in, shape_numel(os), [&](int64_t i) {
      int64_t src = 0;
      for (size_t d = 0; d < os.size(); ++d) src += (i / ost[d]) % os[d] * ist[perm[d]];
      return src;
    });
    ASSERT_EQ(download(tout), want) << "permute of " << shape_string(shape);
  }
  std::mt19937 gen_{1234};
};

TEST_P(LayoutTest, RandomPermutationsOfRankOneToSix) {
  std::mt19937 pick(7);
  for (int rank = 1; rank <= 6; ++rank) {
    for (int trial = 0; trial < 4; ++trial) {
      Shape shape(rank);
      for (auto& d : shape) d = 1 + static_cast<int64_t>(pick() % (rank <= 3 ? 13 : 5));
      std::vector<int> perm(rank);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), pick);
      expect_permute(shape, perm);
    }
  }
  expect_permute({3, 4, 5, 6, 2, 3}, {5, 3, 1, 4, 2, 0});  // six independent axes
}

TEST_P(LayoutTest, TransposesTakeTheTiledPath) {
  expect_permute({37, 45}, {1, 0});
  expect_permute({3, 33, 65}, {0, 2, 1});
  expect_permute({65, 3, 33}, {1, 2, 0});       // batch stride ≠ tile: [B=3, C=33, R=65]
  expect_permute({2, 4, 70, 5}, {0, 3, 1, 2});  // NCHW with merged HW → NHWC-like
}

// Patterns whose innermost axis is contiguous whole 16-byte words move a word per invocation
// (layout_strided.comp, WORDS): MASt3R's pixel shuffle of the local-feature map (runs of 16), a
// swap of outer axes over runs of 32, and runs of 24 (whole words but for 8-bit elements).
TEST_P(LayoutTest, ContiguousRunsOfWholeWordsMoveAsWords) {
  expect_permute({2, 3, 4, 5, 2, 16}, {0, 3, 1, 4, 2, 5});
  expect_permute({3, 5, 32}, {1, 0, 2});
  expect_permute({4, 6, 24}, {1, 0, 2});
  expect_permute({3, 2, 5, 48}, {2, 0, 1, 3});
}

TEST_P(LayoutTest, TokensAndFeatureMapsConvertBothWays) {
  const int64_t b = 2, h = 6, w = 7, c = 19;
  Host tokens = random_host({b, h * w, c});
  Tensor tt = upload(tokens), map = poisoned_out({b, c, h, w}), back = poisoned_out({b, h * w, c});
  Graph g(rt());
  ASSERT_TRUE(ops::tokens_to_nchw(g, tt, map).is_ok());
  ASSERT_TRUE(ops::nchw_to_tokens(g, map, back).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  // map[b, ch, y, x] = tokens[b, y·w + x, ch]
  auto want = gather_ref(tokens, b * c * h * w, [&](int64_t i) {
    const int64_t x = i % w, y = i / w % h, ch = i / (w * h) % c, bb = i / (w * h * c);
    return (bb * h * w + y * w + x) * c + ch;
  });
  EXPECT_EQ(download(map), want);
  EXPECT_EQ(download(back), tokens.bytes);
}

// Python's slice of an axis of `dim` elements (CPython's PySlice_AdjustIndices, then counted
// by walking it): the first index and the length.
std::pair<int64_t, int64_t> python_slice(int64_t dim, const ops::SliceAxis& a) {
  const bool up = a.step > 0;
  auto bound = [&](int64_t v) {
    return std::clamp(v < 0 ? v + dim : v, up ? int64_t{0} : int64_t{-1}, up ? dim : dim - 1);
  };
  const int64_t start = bound(a.start), stop = bound(a.stop);
  int64_t len = 0;
  for (int64_t i = start; up ? i < stop : i > stop; i += a.step) ++len;
  return {start, len};
}

TEST_P(LayoutTest, SlicesWithStepsAndNegativeBounds) {
  struct Case {
    std::vector<ops::SliceAxis> axes;
    Shape shape{7, 9, 11};
  };
  const Case cases[] = {
      {{{1, 6, 2}, {0, INT64_MAX, 1}, {-5, -1, 3}}},
      {{{-100, 100, 3}}},
      {{{0, 7, 1}, {8, 2, 1}}},  // empty along axis 1
      {{{6, 7, 1}, {3, 4, 1}, {10, 11, 1}}},
      {{{0, INT64_MAX, 1}, {0, INT64_MAX, 4}, {2, 9, 2}}},
      {{{INT64_MAX, INT64_MIN, -1}, {INT64_MAX, INT64_MIN, -1}, {INT64_MAX, INT64_MIN, -1}}},  // one axis, stride −1
      {{{INT64_MAX, INT64_MIN, -1}, {}, {INT64_MAX, INT64_MIN, -1}}},
      {{{5, 0, -2}, {-1, -7, -3}, {1, 9, 4}}},
      {{{100, -100, -3}, {2, 5, -1}}},                        // empty along axis 1
      {{{INT64_MAX, INT64_MIN, -1}, {1, 5, 2}}, {6, 5, 48}},  // rows of whole words in reverse (WORDS)
  };
  for (const Case& c : cases) {
    const Shape& shape = c.shape;
    Host in = random_host(shape);
    Tensor tin = upload(in);
    Shape os = shape;
    std::vector<int64_t> start(3, 0), step(3, 1);
    for (size_t d = 0; d < c.axes.size(); ++d) {
      std::tie(start[d], os[d]) = python_slice(shape[d], c.axes[d]);
      step[d] = c.axes[d].step;
    }
    Tensor tout = poisoned_out(os);
    Graph g(rt());
    Status s = ops::slice(g, tin, tout, c.axes);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    if (shape_numel(os) == 0) {
      EXPECT_EQ(g.dispatch_count(), 0u);
      continue;
    }
    ASSERT_TRUE(g.run().is_ok());
    const auto ist = strides_of(shape), ost = strides_of(os);
    auto want = gather_ref(in, shape_numel(os), [&](int64_t i) {
      int64_t src = 0;
      for (int d = 0; d < 3; ++d) src += (start[d] + (i / ost[d]) % os[d] * step[d]) * ist[d];
      return src;
    });
    ASSERT_EQ(download(tout), want) << shape_string(os);
  }
}

TEST_P(LayoutTest, ConcatAndSplitAlongEveryAxis) {
  std::mt19937 pick(3);
  for (int axis = 0; axis < 3; ++axis) {
    for (int count : {1, 2, 3, 8, 9}) {
      Shape base{3, 5, 7};
      std::vector<Host> ins;
      std::vector<Tensor> tins;
      int64_t total = 0;
      for (int i = 0; i < count; ++i) {
        Shape s = base;
        s[axis] = static_cast<int64_t>(pick() % 4) + (i == 1 ? 0 : 1);  // input 1 may be empty along axis
        total += s[axis];
        ins.push_back(random_host(s));
        tins.push_back(upload(ins.back()));
      }
      Shape os = base;
      os[axis] = total;
      Tensor tout = poisoned_out(os);
      std::vector<Arg> args(tins.begin(), tins.end());
      Graph g(rt());
      Status s = ops::concat(g, args, axis - 3, tout);  // negative axis form
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      ASSERT_TRUE(g.run().is_ok());
      // Reference concat, then split back and compare with the inputs.
      int64_t outer = 1, inner = 1;
      for (int d = 0; d < axis; ++d) outer *= os[d];
      for (int d = axis + 1; d < 3; ++d) inner *= os[d];
      std::vector<uint8_t> want;
      for (int64_t o = 0; o < outer; ++o)
        for (const Host& h : ins) {
          const size_t block = h.shape[axis] * inner * h.es();
          want.insert(want.end(), h.bytes.begin() + o * block, h.bytes.begin() + (o + 1) * block);
        }
      ASSERT_EQ(download(tout), want) << count << " inputs along axis " << axis;

      std::vector<Tensor> parts;
      for (const Host& h : ins) parts.push_back(poisoned_out(h.shape));
      std::vector<Arg> part_args(parts.begin(), parts.end());
      Graph g2(rt());
      ASSERT_TRUE(ops::split(g2, tout, axis, part_args).is_ok());
      ASSERT_TRUE(g2.run().is_ok());
      for (size_t i = 0; i < parts.size(); ++i) {
        if (parts[i].numel() == 0) continue;
        ASSERT_EQ(download(parts[i]), ins[i].bytes) << "split part " << i;
      }
    }
  }
}

// Splitting beyond one binding, on small tensors with a lowered limit: permute along the batch
// axis, slices, and concat along axis 0 and a later axis.
TEST_P(LayoutTest, CopiesAreSplitBeyondOneBinding) {
  struct Limit {  // 1280 bytes of f32, or as many elements of a narrower type, plus alignment slack
    explicit Limit(size_t es) { ops::set_max_binding_bytes_for_testing(256 + 320 * es); }
    ~Limit() { ops::set_max_binding_bytes_for_testing(0); }
  } limit(dtype_size(GetParam()));
  expect_permute({9, 5, 23}, {0, 2, 1});       // tiled, per batch chunk
  expect_permute({9, 3, 4, 5}, {0, 3, 1, 2});  // generic, per batch chunk

  const Shape shape{40, 3, 11};
  Host in = random_host(shape);
  Tensor tin = upload(in);
  {
    Tensor tout = poisoned_out({12, 3, 5});
    Graph g(rt());
    ASSERT_TRUE(ops::slice(g, tin, tout, {{3, 39, 3}, {}, {1, 10, 2}}).is_ok());
    EXPECT_GT(g.dispatch_count(), 1u);
    ASSERT_TRUE(g.run().is_ok());
    auto want = gather_ref(in, 12 * 3 * 5, [&](int64_t i) {
      const int64_t z = i % 5, y = i / 5 % 3, x = i / 15;
      return ((3 + 3 * x) * 3 + y) * 11 + 1 + 2 * z;
    });
    EXPECT_EQ(download(tout), want);
  }
  {  // reversed along axes 0 and 2: each chunk's window lies below its first element
    Tensor tout = poisoned_out({13, 3, 5});
    Graph g(rt());
    ASSERT_TRUE(ops::slice(g, tin, tout, {{38, 0, -3}, {}, {9, 0, -2}}).is_ok());
    EXPECT_GT(g.dispatch_count(), 1u);
    ASSERT_TRUE(g.run().is_ok());
    auto want = gather_ref(in, 13 * 3 * 5, [&](int64_t i) {
      const int64_t z = i % 5, y = i / 5 % 3, x = i / 15;
      return ((38 - 3 * x) * 3 + y) * 11 + 9 - 2 * z;
    });
    EXPECT_EQ(download(tout), want);
  }
  for (int axis : {0, 1}) {
    Host a = random_host({40, 3, 11}), b = random_host({axis == 0 ? 17 : 40, axis == 0 ? 3 : 2, 11});
    Tensor ta = upload(a), tb = upload(b);
    Shape os{40, 3, 11};
    os[axis] += b.shape[axis];
    Tensor tout = poisoned_out(os);
    Graph g(rt());
    ASSERT_TRUE(ops::concat(g, {ta, tb}, axis, tout).is_ok());
    EXPECT_GT(g.dispatch_count(), 2u);
    ASSERT_TRUE(g.run().is_ok());
    std::vector<uint8_t> want;
    if (axis == 0) {
      want = a.bytes;
      want.insert(want.end(), b.bytes.begin(), b.bytes.end());
    } else {
      const size_t ra = 3 * 11 * a.es(), rb = 2 * 11 * b.es();
      for (int64_t o = 0; o < 40; ++o) {
        want.insert(want.end(), a.bytes.begin() + o * ra, a.bytes.begin() + (o + 1) * ra);
        want.insert(want.end(), b.bytes.begin() + o * rb, b.bytes.begin() + (o + 1) * rb);
      }
    }
    EXPECT_EQ(download(tout), want) << "concat along " << axis;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LayoutTest, ::testing::Values(DType::kF32, DType::kF16, DType::kI32, DType::kU8),
                         DtypeParamName());

// Row counts for splitting: rows_per_dispatch keeps row_view offsets aligned; rows_per_window
// only needs room for the window's alignment slack.
TEST(LayoutPlanningTest, RowCountsRespectLimitsAndAlignment) {
  const uint64_t limit = ops::max_binding_bytes();  // the device's (128 MiB on lavapipe, 2 GiB on NVIDIA)
  EXPECT_EQ(ops::rows_per_dispatch({400, 800}, 1000).value(), 1000);  // fits whole
  EXPECT_EQ(ops::rows_per_window({400, 800}, 1000).value(), 1000);
  const int64_t total = static_cast<int64_t>(limit / 4004) * 3;                // three bindings' worth
  const int64_t rows = ops::rows_per_dispatch({4 * 1001, 12}, total).value();  // 4004-byte rows
  EXPECT_EQ(rows % 64, 0);                                                     // 256 / gcd(4004, 256) = 64
  EXPECT_LE(static_cast<uint64_t>(rows) * 4004, limit);
  EXPECT_GT(static_cast<uint64_t>(rows + 64) * 4004, limit);
  const int64_t wrows = ops::rows_per_window({4004}, total).value();
  EXPECT_EQ(static_cast<uint64_t>(wrows), (limit - ops::kBindingOffsetAlign) / 4004);
}

class LayoutMisuseTest : public GpuTest {};

TEST_F(LayoutMisuseTest, BadArgumentsAreRefused) {
  auto t = [&](DType d, const Shape& s) { return Tensor::empty(rt(), d, s).value(); };
  const StatusCode bad = StatusCode::kInvalidArgument;
  Graph g(rt());
  const Tensor x = t(DType::kF32, {2, 3, 4});
  EXPECT_EQ(ops::permute(g, x, t(DType::kF32, {4, 3, 2}), {2, 1}).code(), bad);     // wrong count
  EXPECT_EQ(ops::permute(g, x, t(DType::kF32, {4, 3, 2}), {2, 1, 1}).code(), bad);  // not a permutation
  EXPECT_EQ(ops::permute(g, x, t(DType::kF32, {4, 3, 2}), {0, 1, 3}).code(), bad);
  EXPECT_EQ(ops::permute(g, x, t(DType::kF32, {4, 2, 3}), {2, 1, 0}).code(), bad);  // wrong out shape
  EXPECT_EQ(ops::permute(g, x, t(DType::kF16, {4, 3, 2}), {2, 1, 0}).code(), bad);  // dtype
  EXPECT_EQ(ops::transpose(g, x, t(DType::kF32, {4, 3, 2}), 0, 3).code(), bad);
  // Seven axes that stay independent.
  EXPECT_EQ(ops::permute(g, t(DType::kF32, {2, 2, 2, 2, 2, 2, 2}), t(DType::kF32, {2, 2, 2, 2, 2, 2, 2}),
                         {6, 5, 4, 3, 2, 1, 0})
                .code(),
            bad);
  EXPECT_EQ(ops::slice(g, x, t(DType::kF32, {2, 3, 4}), {{0, 2, 0}}).code(), bad);  // step 0
  EXPECT_EQ(ops::slice(g, x, t(DType::kF32, {1, 3, 4}), {{0, 2, 1}}).code(), bad);  // wrong out shape
  EXPECT_EQ(ops::slice(g, x, t(DType::kF32, {2, 3, 4}), {{}, {}, {}, {}}).code(), bad);
  EXPECT_EQ(ops::concat(g, {x, t(DType::kF32, {2, 4, 4})}, 0, t(DType::kF32, {4, 3, 4})).code(), bad);
  EXPECT_EQ(ops::concat(g, {x, x}, 0, t(DType::kF32, {5, 3, 4})).code(), bad);  // sizes do not sum
  EXPECT_EQ(ops::concat(g, {x, t(DType::kF16, {2, 3, 4})}, 0, t(DType::kF32, {4, 3, 4})).code(), bad);
  EXPECT_EQ(ops::concat(g, {x, x}, 3, t(DType::kF32, {4, 3, 4})).code(), bad);
  EXPECT_EQ(ops::concat(g, std::span<const Arg>(), 0, x).code(), bad);
  EXPECT_EQ(ops::split(g, x, 1, {t(DType::kF32, {2, 1, 4}), t(DType::kF32, {2, 1, 4})}).code(), bad);
  EXPECT_EQ(ops::split(g, x, 1, {t(DType::kF32, {2, 1, 4}), t(DType::kF32, {1, 2, 4})}).code(), bad);
  EXPECT_EQ(ops::tokens_to_nchw(g, t(DType::kF32, {1, 12, 5}), t(DType::kF32, {1, 5, 3, 5})).code(), bad);
  EXPECT_EQ(ops::nchw_to_tokens(g, t(DType::kF32, {1, 5, 3, 4}), t(DType::kF32, {1, 12, 4})).code(), bad);
  EXPECT_EQ(g.dispatch_count(), 0u);
  // Views and split planning.
  EXPECT_EQ(ops::rows_per_dispatch({ops::max_binding_bytes() + 1}, 3).status().code(), bad);  // a row over the limit
  EXPECT_EQ(ops::rows_per_window({ops::max_binding_bytes()}, 2).status().code(), bad);        // no room for the slack
  EXPECT_EQ(ops::reshape_view(x, {5, 5}).status().code(), bad);
  EXPECT_EQ(ops::row_view(x, 1, 3).status().code(), bad);
  EXPECT_TRUE(ops::reshape_view(x, {6, 4}).is_ok());
}

}  // namespace
}  // namespace recon::gpu
