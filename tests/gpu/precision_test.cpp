// The precision vocabulary (gpu/precision.h): names, parsing and its errors.
#include "gpu/precision.h"

#include <gtest/gtest.h>

#include <string>

namespace recon::gpu {
namespace {

TEST(Precision, EveryNameParsesBackToItsPrecision) {
  for (Precision p : {Precision::kF32, Precision::kF32Split, Precision::kF16, Precision::kF16Heads}) {
    Result<Precision> parsed = parse_precision(precision_name(p));
    ASSERT_TRUE(parsed.is_ok()) << precision_name(p);
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_EQ(std::string(precision_name(Precision::kF32Split)), "fp32-split");
}

TEST(Precision, AcceptsTheShortFormsInAnyCase) {
  EXPECT_EQ(parse_precision("FP32").value(), Precision::kF32);
  EXPECT_EQ(parse_precision("f16").value(), Precision::kF16);
  EXPECT_EQ(parse_precision("FP16-Heads").value(), Precision::kF16Heads);
}

TEST(Precision, RefusesOthersNamingTheChoices) {
  const Result<Precision> parsed = parse_precision("bf16");
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_EQ(parsed.status().message(), "expected fp32, fp32-split, fp16 or fp16-heads, got 'bf16'");
}

TEST(Precision, Fp32StorageIsFp32AndItsSplit) {
  EXPECT_TRUE(is_fp32(Precision::kF32));
  EXPECT_TRUE(is_fp32(Precision::kF32Split));
  EXPECT_FALSE(is_fp32(Precision::kF16));
  EXPECT_FALSE(is_fp32(Precision::kF16Heads));
}

}  // namespace
}  // namespace recon::gpu
