// Kinematic trees: scipy's Ward linkage (documentation example with ties, hand-computed cases), the
// official representative-merge rule, the BFS-rank root heuristic and scipy's BFS edge order.
#include "gpu/reconstruct/kinematic_tree.h"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

namespace recon::gpu {
namespace {

std::vector<double> condensed_euclidean(const std::vector<std::vector<double>>& pts) {
  std::vector<double> d;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    for (std::size_t j = i + 1; j < pts.size(); ++j) {
      double s = 0;
      for (std::size_t k = 0; k < pts[i].size(); ++k) s += (pts[i][k] - pts[j][k]) * (pts[i][k] - pts[j][k]);
      d.push_back(std::sqrt(s));
    }
  }
  return d;
}

void expect_linkage(const std::vector<LinkageRow>& got, const std::vector<LinkageRow>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(got[k].a, want[k].a) << "row " << k;
    EXPECT_EQ(got[k].b, want[k].b) << "row " << k;
    EXPECT_NEAR(got[k].distance, want[k].distance, 1e-8) << "row " << k;
    EXPECT_EQ(got[k].size, want[k].size) << "row " << k;
  }
}

TEST(WardLinkage, MatchesScipysDocumentationExampleWithItsTies) {
  // scipy.cluster.hierarchy.ward's docstring: four corner groups of three points; many equal
  // distances, so the order of the rows and the cluster ids test the nn-chain, the stable sort and
  // the relabelling.
  const std::vector<std::vector<double>> x = {{0, 0}, {0, 1}, {1, 0}, {0, 4}, {0, 3}, {1, 4},
                                              {4, 0}, {3, 0}, {4, 1}, {4, 4}, {3, 4}, {4, 3}};
  auto z = ward_linkage(condensed_euclidean(x), 12);
  ASSERT_TRUE(z.is_ok()) << z.status().to_string();
  expect_linkage(*z, {{0, 1, 1.0, 2},
                      {3, 4, 1.0, 2},
                      {6, 7, 1.0, 2},
                      {9, 10, 1.0, 2},
                      {2, 12, 1.29099445, 3},
                      {5, 13, 1.29099445, 3},
                      {8, 14, 1.29099445, 3},
                      {11, 15, 1.29099445, 3},
                      {16, 17, 5.77350269, 6},
                      {18, 19, 5.77350269, 6},
                      {20, 21, 8.16496581, 12}});
}

TEST(WardLinkage, MatchesHandComputedLineOfPoints) {
  // Points 0, 1, 3, 7 on a line. Ward's distance between clusters A, B is
  // sqrt(2 |A||B| / (|A|+|B|)) |mean A - mean B|.
  auto z = ward_linkage(condensed_euclidean({{0}, {1}, {3}, {7}}), 4);
  ASSERT_TRUE(z.is_ok());
  expect_linkage(*z, {{0, 1, 1.0, 2}, {2, 4, std::sqrt(4.0 / 3.0) * 2.5, 3}, {3, 5, std::sqrt(1.5) * 17.0 / 3.0, 4}});
}

TEST(WardLinkage, UsesLanceWilliamsOnNonEuclideanDistances) {
  // d01 = 0.5, d02 = 2, d12 = 0.7: d(2, {0,1}) = sqrt((2*2^2 + 2*0.7^2 - 0.5^2) / 3).
  auto z = ward_linkage(std::vector<double>{0.5, 2.0, 0.7}, 3);
  ASSERT_TRUE(z.is_ok());
  expect_linkage(*z, {{0, 1, 0.5, 2}, {2, 3, std::sqrt((8.0 + 0.98 - 0.25) / 3.0), 3}});
}

TEST(WardLinkage, RefusesBadInput) {
  EXPECT_FALSE(ward_linkage(std::vector<double>{1.0, 2.0}, 3).is_ok());
  EXPECT_FALSE(ward_linkage(std::vector<double>{1.0, std::nan(""), 1.0}, 3).is_ok());
  EXPECT_TRUE(ward_linkage(std::vector<double>{}, 1).is_ok());
}

TEST(KinematicTree, PathRootIsItsMiddleAndEdgesFollowScipysBfs) {
  // Path 0-1-2-3-4: ranks from 0 are (0..4), from 4 reversed; min is largest at 2. From 2 the BFS
  // visits neighbours above it first (3), then below (1).
  std::vector<double> w(25, 0.0);
  for (int i = 0; i < 4; ++i) w[i * 5 + i + 1] = w[(i + 1) * 5 + i] = 1.0;
  auto tree = spanning_tree_from_weights(w, 5);
  ASSERT_TRUE(tree.is_ok());
  EXPECT_EQ(tree->root, 2);
  EXPECT_EQ(tree->edges, (std::vector<std::pair<int, int>>{{2, 3}, {2, 1}, {3, 4}, {1, 0}}));
  EXPECT_EQ(tree_depth(*tree, 5), 2);
}

TEST(KinematicTree, RootUsesVisitingRanksNotDepths) {
  // The maximum spanning tree of these match counts is the star 0-2, 1-2, 2-3. BFS visiting ranks
  // (not depths) drive the heuristic: min(ranks1, ranks2) = (0, 0, 1, 2), so the root is leaf 3.
  const double n01 = 10, n02 = 50, n03 = 20, n12 = 40, n13 = 5, n23 = 30;
  const std::vector<double> m = {0, n01, n02, n03, n01, 0, n12, n13, n02, n12, 0, n23, n03, n13, n23, 0};
  auto tree = mst_tree(m, 4);
  ASSERT_TRUE(tree.is_ok());
  EXPECT_EQ(tree->root, 3);
  EXPECT_EQ(tree->edges, (std::vector<std::pair<int, int>>{{3, 2}, {2, 0}, {2, 1}}));
}

TEST(KinematicTree, HclustLinksTheRepresentativesOfMergedClusters) {
  // pws = n / (3 * 100): 0.8 for (0,1), 0.7 for (2,3), 0.1 for (1,2), 0 elsewhere. Ward merges
  // {0,1}, then {2,3}, then both. Representatives: 1 (row sum 1.9 > 1.8), 2 (1.8 > 1.7); the last
  // merge links 1 and 2, so the tree is the path 0-1-2-3, rooted at 1.
  const std::vector<double> m = {0, 240, 0, 0, 240, 0, 30, 0, 0, 30, 0, 210, 0, 0, 210, 0};
  const std::vector<std::int64_t> patches(4, 100);
  auto tree = hclust_ward_tree(m, patches, 4);
  ASSERT_TRUE(tree.is_ok()) << tree.status().to_string();
  EXPECT_EQ(tree->root, 1);
  EXPECT_EQ(tree->edges, (std::vector<std::pair<int, int>>{{1, 2}, {1, 0}, {2, 3}}));
}

TEST(KinematicTree, HclustTieGoesToTheSecondCluster) {
  // pws 0.8 for (0,1) and 0.1 for (0,2) and (1,2): rows 0 and 1 both sum to 1.9, so the
  // representative of {0,1} is 1 (the official's `a if sum_a > sum_b else b`), and image 2 links to
  // 1: path 0-1-2 rooted at 1. Had the tie gone to 0, the path would be 1-0-2 rooted at 0.
  const std::vector<double> m = {0, 240, 30, 240, 0, 30, 30, 30, 0};
  const std::vector<std::int64_t> patches(3, 100);
  auto tree = hclust_ward_tree(m, patches, 3);
  ASSERT_TRUE(tree.is_ok());
  EXPECT_EQ(tree->root, 1);
  EXPECT_EQ(tree->edges, (std::vector<std::pair<int, int>>{{1, 2}, {1, 0}}));
}

TEST(KinematicTree, DisconnectedGraphIsRefused) {
  const std::vector<double> m = {0, 1, 0, 1, 0, 0, 0, 0, 0};
  EXPECT_FALSE(mst_tree(m, 3).is_ok());
}

TEST(KinematicTree, NumpySumUsesPairwiseSummation) {
  // Nine values: numpy adds eight lanes, then the ninth; a sequential sum rounds differently here.
  const std::vector<double> v = {1e16, 1.0, -1e16, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  // lanes r = v[0..7]; res = ((1e16 + 1) + (-1e16 + 1)) + ((1 + 1) + (1 + 1)) = 4 (1e16 + 1 rounds to
  // 1e16), then + 1 = 5; sequentially it would be 1e16 + 1 - 1e16 + 1 + ... = 6.
  EXPECT_EQ(numpy_sum(v), 5.0);
}

}  // namespace
}  // namespace recon::gpu
