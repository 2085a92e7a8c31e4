// The kinds table: which kinds a LoadModel may name, which warm, and that the built-in matcher is
// no loadable model.
#include "daemon/serving/model_kind.h"

#include <gtest/gtest.h>

namespace recon::daemon {
namespace {

TEST(ModelKind, TheTableNamesEveryKindOnce) {
  const ModelKind* mast3r = find_model_kind("mast3r");
  const ModelKind* retrieval = find_model_kind("retrieval");
  const ModelKind* match = find_model_kind("match");
  const ModelKind* onnx = find_model_kind("onnx");
  ASSERT_NE(mast3r, nullptr);
  ASSERT_NE(onnx, nullptr);
  ASSERT_NE(retrieval, nullptr);
  ASSERT_NE(match, nullptr);
  EXPECT_TRUE(mast3r->warms);
  EXPECT_NE(mast3r->load, nullptr);
  EXPECT_FALSE(retrieval->warms);
  EXPECT_NE(retrieval->load, nullptr);
  EXPECT_TRUE(match->built_in);
  EXPECT_EQ(match->load, nullptr);
  EXPECT_NE(onnx->load, nullptr);
  EXPECT_FALSE(onnx->built_in);
  EXPECT_EQ(find_model_kind("tensorrt"), nullptr);
  EXPECT_EQ(find_model_kind(""), nullptr);
  EXPECT_EQ(loadable_model_kinds(), "mast3r, retrieval, onnx");
  EXPECT_TRUE(model_kind_warms("mast3r"));
  EXPECT_FALSE(model_kind_warms("retrieval"));
  EXPECT_FALSE(model_kind_warms("onnx"));
}

}  // namespace
}  // namespace recon::daemon
