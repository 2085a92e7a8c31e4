#include "gpu/coopmat_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

// The accumulator layout of NVIDIA's mma.m16n8k16, twice along n: lane l holds rows l/4 and l/4 + 8,
// columns 2·(l%4) + {0, 1} and 8 more; elements ordered (row, col) (g, c) (g, c+1) (g+8, c) (g+8,
// c+1), then the same 8 columns on.
std::vector<float> mma_layout() {
  std::vector<float> v(256);
  for (uint32_t lane = 0; lane < 32; ++lane) {
    const uint32_t g = lane / 4, c = 2 * (lane % 4);
    for (uint32_t i = 0; i < 8; ++i) {
      const uint32_t row = g + 8 * ((i >> 1) & 1), col = c + (i & 1) + 8 * (i >> 2);
      v[lane * 8 + i] = static_cast<float>(row * 16 + col);
    }
  }
  return v;
}

TEST(CoopMatLayout, FindsTheMmaAccumulatorLayout) {
  const CoopMatAccLayout l = analyse_coopmat_acc_layout(mma_layout(), 32, 8);
  ASSERT_TRUE(l.two_rows_per_lane());
  EXPECT_EQ(l.elements, 8u);
  EXPECT_EQ(l.slot_mask, 0xccu);  // elements 2, 3, 6 and 7 lie in row g + 8
  EXPECT_EQ(l.row_lanes, 4u);
}

TEST(CoopMatLayout, FindsRowMajorLanesWithOneRowPairEach) {
  // 16 lanes × 16 elements: lane l holds 8 columns of row l/2 and the same of row l/2 + 8; pairs of
  // lanes share the two rows.
  std::vector<float> v(256);
  for (uint32_t lane = 0; lane < 16; ++lane) {
    for (uint32_t i = 0; i < 16; ++i) {
      const uint32_t row = lane / 2 + 8 * (i / 8), col = 8 * (lane % 2) + i % 8;
      v[lane * 16 + i] = static_cast<float>(row * 16 + col);
    }
  }
  const CoopMatAccLayout l = analyse_coopmat_acc_layout(v, 16, 16);
  ASSERT_TRUE(l.two_rows_per_lane());
  EXPECT_EQ(l.slot_mask, 0xff00u);
  EXPECT_EQ(l.row_lanes, 2u);
}

TEST(CoopMatLayout, RefusesIrregularLayouts) {
  // One row per lane (a plain row-major spread): not two rows.
  std::vector<float> one_row(256);
  for (uint32_t k = 0; k < 256; ++k) one_row[k] = static_cast<float>(k);
  EXPECT_FALSE(analyse_coopmat_acc_layout(one_row, 32, 8).two_rows_per_lane());

  // Two lanes swapped across clusters: lane 0 and lane 4 hold different rows than their partners.
  std::vector<float> swapped = mma_layout();
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 32);
  EXPECT_FALSE(analyse_coopmat_acc_layout(swapped, 32, 8).two_rows_per_lane());

  // A lane whose slot pattern differs from lane 0's.
  std::vector<float> pattern = mma_layout();
  std::swap(pattern[8 + 0], pattern[8 + 2]);
  EXPECT_FALSE(analyse_coopmat_acc_layout(pattern, 32, 8).two_rows_per_lane());

  // A position twice (and one missing), a value that is no position, wrong sizes.
  std::vector<float> dup = mma_layout();
  dup[9] = dup[8];
  EXPECT_FALSE(analyse_coopmat_acc_layout(dup, 32, 8).two_rows_per_lane());
  std::vector<float> junk = mma_layout();
  junk[5] = 300.5f;
  EXPECT_FALSE(analyse_coopmat_acc_layout(junk, 32, 8).two_rows_per_lane());
  EXPECT_FALSE(analyse_coopmat_acc_layout(mma_layout(), 32, 7).two_rows_per_lane());
  EXPECT_FALSE(analyse_coopmat_acc_layout(mma_layout(), 16, 8).two_rows_per_lane());
}

// On a device with NV cooperative matrices the runtime has probed the real layout.
class CoopMatLayoutProbe : public testing::GpuTest {};

TEST_F(CoopMatLayoutProbe, RuntimeRecordsTheProbedLayout) {
  const Capabilities& caps = rt().caps();
  if (!caps.nv_cooperative_matrix) GTEST_SKIP() << "device " << caps.device_name << " has no NV cooperative matrix";
  Result<CoopMatAccLayout> again = probe_coopmat_acc_layout(rt());
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(again->elements, caps.coopmat_acc_layout.elements);
  EXPECT_EQ(again->slot_mask, caps.coopmat_acc_layout.slot_mask);
  EXPECT_EQ(again->row_lanes, caps.coopmat_acc_layout.row_lanes);
  std::printf("[probe] %s: %u elements per lane, second-row mask 0x%x, %u lanes per row\n", caps.device_name.c_str(),
              again->elements, again->slot_mask, again->row_lanes);
}

}  // namespace
}  // namespace recon::gpu
