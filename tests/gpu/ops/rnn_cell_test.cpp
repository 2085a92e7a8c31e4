// One recurrent step against a double transcription of ONNX's cell equations: an LSTM step with
// peepholes read at offsets and strides (padded gate rows, state blocks, Y rows), a row whose
// sequence has ended keeping its state and writing 0; GRU's two passes around the GEMM of r ⊙ H;
// RNN with Relu; f32 and f16 storage; refusals.
#include "gpu/ops/rnn_cell.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
using ops::RnnActivation;
using ops::RnnCell;

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

// The values as the device stores them.
std::vector<float> stored(DType d, std::vector<float> v) {
  return d == DType::kF16 ? from_f16(to_f16(v)) : v;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, DType d, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double tol = d == DType::kF32 ? 2e-6 : 1e-3;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) continue;  // not written
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << " element " << i;
  }
}

class RnnCellTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(RnnCellTest, AnLstmStepWithPeepholesAndAnEndedRowMatchesTheEquations) {
  const DType d = GetParam();
  const int64_t n = 3, h = 5, pad = 3, row = 4 * h + pad;
  ops::RnnStep s{.cell = RnnCell::kLstm,
                 .batch = n,
                 .size = h,
                 .gx_offset = 7,
                 .gx_stride = row,
                 .prev = 2,
                 .cur = 2 + n * h,
                 .step = 1,
                 .y_offset = 1,
                 .y_stride = 8,
                 .peephole_offset = 3 * h};
  const auto gx = stored(d, random_floats(static_cast<size_t>(7 + n * row), 1, -2.0f, 2.0f));
  const auto gr = stored(d, random_floats(static_cast<size_t>(n * 4 * h), 2, -2.0f, 2.0f));
  const auto state = stored(d, random_floats(static_cast<size_t>(2 * n * h + 4), 3));
  const auto cell = stored(d, random_floats(static_cast<size_t>(2 * n * h + 4), 4));
  const auto peep = stored(d, random_floats(static_cast<size_t>(6 * h), 5));
  const std::vector<int32_t> lengths{5, 1, 2};  // row 1 ended before step 1
  Tensor tgx = upload_f32(rt(), d, {static_cast<int64_t>(gx.size())}, gx);
  Tensor tgr = upload_f32(rt(), d, {n, 4 * h}, gr);
  Tensor th = upload_f32(rt(), d, {static_cast<int64_t>(state.size())}, state);
  Tensor tc = upload_f32(rt(), d, {static_cast<int64_t>(cell.size())}, cell);
  Tensor tp = upload_f32(rt(), d, {2, 3 * h}, peep);
  Tensor tl = Tensor::from_host(rt(), DType::kI32, {n}, lengths.data(), lengths.size() * 4).value();
  Tensor ty = poisoned(rt(), d, {n * 8});
  Graph g(rt());
  const Status st = ops::rnn_cell(g, s, tgx, tgr, th, tc, Arg(tp), Arg(tl), Arg(ty));
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_TRUE(g.run().is_ok());

  std::vector<double> want_h(state.begin(), state.end()), want_c(cell.begin(), cell.end());
  std::vector<double> want_y(static_cast<size_t>(n * 8), NAN);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < h; ++j) {
      const auto pre = [&](int64_t k) {
        return double(gx[static_cast<size_t>(s.gx_offset + r * row + k * h + j)]) +
               gr[static_cast<size_t>(r * 4 * h + k * h + j)];
      };
      const auto p = [&](int64_t k) { return double(peep[static_cast<size_t>(s.peephole_offset + k * h + j)]); };
      const size_t prev = static_cast<size_t>(s.prev + r * h + j), cur = static_cast<size_t>(s.cur + r * h + j);
      const double cp = cell[prev], hp = state[prev];
      const double ig = sigmoid(pre(0) + p(0) * cp), fg = sigmoid(pre(2) + p(2) * cp), cg = std::tanh(pre(3));
      const double c = fg * cp + ig * cg;
      const double hn = sigmoid(pre(1) + p(1) * c) * std::tanh(c);
      const bool live = s.step < lengths[static_cast<size_t>(r)];
      want_c[cur] = live ? c : cp;
      want_h[cur] = live ? hn : hp;
      want_y[static_cast<size_t>(s.y_offset + r * s.y_stride + j)] = live ? hn : 0.0;
    }
  }
  expect_close(download_f32(rt(), th), want_h, d, "hidden");
  expect_close(download_f32(rt(), tc), want_c, d, "cell");
  expect_close(download_f32(rt(), ty), want_y, d, "y");
}

// GRU without linear_before_reset: the first pass leaves z in gr's z columns and r ⊙ H in the
// cell buffer; the second (after the caller's GEMM filled gr's h columns) mixes; then an RNN step
// with Relu and no Y.
TEST_P(RnnCellTest, GruPassesAndAReluRnnStepMatchTheEquations) {
  const DType d = GetParam();
  const int64_t n = 2, h = 4;
  ops::RnnStep s{.cell = RnnCell::kGruReset,
                 .batch = n,
                 .size = h,
                 .gx_offset = 0,
                 .gx_stride = 3 * h,
                 .prev = 0,
                 .cur = n * h,
                 .y_offset = 0,
                 .y_stride = h};
  s.activations = {RnnActivation::kSigmoid, RnnActivation::kRelu, RnnActivation::kTanh};
  const auto gx = stored(d, random_floats(static_cast<size_t>(n * 3 * h), 6, -2.0f, 2.0f));
  const auto gr = stored(d, random_floats(static_cast<size_t>(n * 3 * h), 7, -2.0f, 2.0f));
  const auto state = stored(d, random_floats(static_cast<size_t>(2 * n * h), 8));
  Tensor tgx = upload_f32(rt(), d, {n, 3 * h}, gx);
  Tensor tgr = upload_f32(rt(), d, {n, 3 * h}, gr);
  Tensor th = upload_f32(rt(), d, {2 * n * h}, state);
  Tensor tc = poisoned(rt(), d, {2 * n * h});
  Tensor ty = poisoned(rt(), d, {n, h});
  Graph g(rt());
  ASSERT_TRUE(ops::rnn_cell(g, s, tgx, tgr, th, tc, std::nullopt, std::nullopt, Arg(ty)).is_ok());
  s.cell = RnnCell::kGruHidden;
  ASSERT_TRUE(ops::rnn_cell(g, s, tgx, tgr, th, tc, std::nullopt, std::nullopt, Arg(ty)).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  std::vector<double> want_y(static_cast<size_t>(n * h)), want_rh(static_cast<size_t>(2 * n * h), NAN);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < h; ++j) {
      const auto at = [&](int64_t k) { return static_cast<size_t>(r * 3 * h + k * h + j); };
      const double hp = state[static_cast<size_t>(r * h + j)];
      const double z = d == DType::kF16 ? stored(d, {float(sigmoid(double(gx[at(0)]) + gr[at(0)]))})[0]
                                        : sigmoid(double(gx[at(0)]) + gr[at(0)]);
      const double rg = sigmoid(double(gx[at(1)]) + gr[at(1)]);
      want_rh[static_cast<size_t>(n * h + r * h + j)] = rg * hp;
      want_y[static_cast<size_t>(r * h + j)] = (1 - z) * std::max(0.0, double(gx[at(2)]) + gr[at(2)]) + z * hp;
    }
  }
  expect_close(download_f32(rt(), tc), want_rh, d, "r ⊙ H");
  expect_close(download_f32(rt(), ty), want_y, d, "y");

  ops::RnnStep rnn{.cell = RnnCell::kRnn, .batch = n, .size = h, .gx_stride = h, .prev = 0, .cur = n * h};
  rnn.activations[0] = RnnActivation::kRelu;
  Tensor rgx = upload_f32(rt(), d, {n, h}, stored(d, random_floats(static_cast<size_t>(n * h), 9)));
  Tensor rgr = upload_f32(rt(), d, {n, h}, stored(d, random_floats(static_cast<size_t>(n * h), 10)));
  Graph g2(rt());
  ASSERT_TRUE(ops::rnn_cell(g2, rnn, rgx, rgr, th, th, std::nullopt, std::nullopt, std::nullopt).is_ok());
  ASSERT_TRUE(g2.run().is_ok());
  const auto a = download_f32(rt(), rgx), b = download_f32(rt(), rgr), got = download_f32(rt(), th);
  for (int64_t i = 0; i < n * h; ++i) {
    EXPECT_NEAR(got[static_cast<size_t>(n * h + i)],
                std::max(0.0, double(a[static_cast<size_t>(i)]) + b[static_cast<size_t>(i)]),
                d == DType::kF32 ? 1e-6 : 2e-3);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, RnnCellTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class RnnCellMiscTest : public GpuTest {};

TEST_F(RnnCellMiscTest, MismatchedOrMisplacedOperandsAreRefused) {
  Tensor f32 = Tensor::empty(rt(), DType::kF32, {2, 4}).value();
  Tensor f16 = Tensor::empty(rt(), DType::kF16, {2, 4}).value();
  Tensor state = Tensor::empty(rt(), DType::kF32, {16}).value();
  Tensor lengths = Tensor::empty(rt(), DType::kF32, {2}).value();
  const ops::RnnStep s{.batch = 2, .size = 4, .gx_stride = 4, .prev = 0, .cur = 8};
  Graph g(rt());
  EXPECT_TRUE(ops::rnn_cell(g, s, f32, f32, state, state, std::nullopt, std::nullopt, std::nullopt).is_ok());
  EXPECT_FALSE(ops::rnn_cell(g, s, f32, f16, state, state, std::nullopt, std::nullopt, std::nullopt).is_ok());
  EXPECT_FALSE(ops::rnn_cell(g, s, f32, f32, state, state, std::nullopt, Arg(lengths), std::nullopt).is_ok());
  ops::RnnStep outside = s;
  outside.cur = 9;  // the block would end past the state
  EXPECT_FALSE(ops::rnn_cell(g, outside, f32, f32, state, state, std::nullopt, std::nullopt, std::nullopt).is_ok());
  ops::RnnStep gru = s;
  gru.cell = RnnCell::kGru;  // gr must hold 3 gates
  EXPECT_FALSE(ops::rnn_cell(g, gru, f32, f32, state, state, std::nullopt, std::nullopt, std::nullopt).is_ok());
}

}  // namespace
}  // namespace recon::gpu
