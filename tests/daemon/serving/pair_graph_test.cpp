// PairGraph: each graph of the official demo on small image counts, worked out by hand, and the
// refusals.
#include "daemon/serving/jobs/reconstruct/pair_graph.h"

#include <gtest/gtest.h>

#include <cmath>

namespace recon::daemon {
namespace {

using Pairs = std::vector<ImagePairIndex>;

Pairs graph(const std::string& text, uint32_t images, std::span<const float> similarity = {}) {
  auto spec = parse_pair_graph(text);
  EXPECT_TRUE(spec.is_ok()) << text << ": " << spec.status().to_string();
  if (!spec.is_ok()) return {};
  auto pairs = make_pair_graph(*spec, images, similarity);
  EXPECT_TRUE(pairs.is_ok()) << text << ": " << pairs.status().to_string();
  return pairs.is_ok() ? *pairs : Pairs{};
}

TEST(PairGraph, CompleteHasEveryPairOnce) {
  EXPECT_EQ(graph("complete", 4), (Pairs{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}));
  EXPECT_EQ(graph("complete", 30).size(), 435u);
}

TEST(PairGraph, SlidingWindowWrapsUnlessNoncyclic) {
  EXPECT_EQ(graph("swin-2-noncyclic", 5), (Pairs{{0, 1}, {0, 2}, {1, 2}, {1, 3}, {2, 3}, {2, 4}, {3, 4}}));
  // Cyclic: 3 and 4 reach around to 0 and 1; on 5 images a window of 2 links everything.
  EXPECT_EQ(graph("swin-2", 5), graph("complete", 5));
  EXPECT_EQ(graph("swin-1", 4), (Pairs{{0, 1}, {0, 3}, {1, 2}, {2, 3}}));
  // A window as wide as the sequence never pairs an image with itself.
  EXPECT_EQ(graph("swin-3", 3), (Pairs{{0, 1}, {0, 2}, {1, 2}}));
  EXPECT_EQ(graph("swin", 10).size(), 30u);  // the default window is 3
}

TEST(PairGraph, LogWindowTakesPowersOfTwoOnBothSides) {
  // Offsets 1 and 2: each of 8 images meets i±1 and i±2, 4 neighbours each.
  EXPECT_EQ(graph("logwin-2", 8).size(), 16u);
  // Without wrapping: i→i+1 (7 pairs) and i→i+2 (6 pairs).
  EXPECT_EQ(graph("logwin-2-noncyclic", 8).size(), 13u);
  EXPECT_EQ(graph("logwin-3-noncyclic", 6),
            (Pairs{{0, 1}, {0, 2}, {0, 4}, {1, 2}, {1, 3}, {1, 5}, {2, 3}, {2, 4}, {3, 4}, {3, 5}, {4, 5}}));
}

TEST(PairGraph, OneReferencePairsItWithEveryOtherImage) {
  EXPECT_EQ(graph("oneref-2", 4), (Pairs{{0, 2}, {1, 2}, {2, 3}}));
  auto spec = parse_pair_graph("oneref-4");
  ASSERT_TRUE(spec.is_ok());
  EXPECT_EQ(make_pair_graph(*spec, 4).status().code(), StatusCode::kInvalidArgument);
}

TEST(PairGraph, RetrievalLinksKeyImagesTheirMembersAndNearestNeighbours) {
  // Five images along a line at 0, 1, 2, 3 and 9; similarity falls with distance.
  const float position[] = {0, 1, 2, 3, 9};
  std::vector<float> similarity;
  for (float a : position) {
    for (float b : position) similarity.push_back(1.0f - std::fabs(a - b) / 10.0f);
  }
  // Key images: 0 (the start), then 4, the farthest from it. The others join key 0, their nearest;
  // then each image its one nearest other (K = 2 counts the image itself): 0-1, 1-0 (a tie with 2
  // goes to the lower index), 2-1, 3-2, 4-3.
  EXPECT_EQ(graph("retrieval-2-2", 5, similarity), (Pairs{{0, 1}, {0, 2}, {0, 3}, {0, 4}, {1, 2}, {2, 3}, {3, 4}}));
  // One key image and no neighbours beyond oneself: a star around image 0.
  EXPECT_EQ(graph("retrieval-1-1", 5, similarity), (Pairs{{0, 1}, {0, 2}, {0, 3}, {0, 4}}));

  auto spec = parse_pair_graph("retrieval-6-2");
  ASSERT_TRUE(spec.is_ok());
  EXPECT_EQ(make_pair_graph(*spec, 5, similarity).status().code(), StatusCode::kInvalidArgument);  // 6 keys of 5
  spec = parse_pair_graph("retrieval-2-2");
  ASSERT_TRUE(spec.is_ok());
  EXPECT_EQ(make_pair_graph(*spec, 5).status().code(), StatusCode::kInvalidArgument);              // no similarity
  EXPECT_EQ(make_pair_graph(*spec, 4, similarity).status().code(), StatusCode::kInvalidArgument);  // 25 values for 4
}

TEST(PairGraph, NamesParseBackAndBadOnesAreRefused) {
  for (const char* text :
       {"complete", "swin-5", "swin-2-noncyclic", "logwin-3", "logwin-4-noncyclic", "oneref-0", "retrieval-20-10"}) {
    auto spec = parse_pair_graph(text);
    ASSERT_TRUE(spec.is_ok()) << text << ": " << spec.status().to_string();
    EXPECT_EQ(spec->to_string(), text);
  }
  for (const char* text : {"", "star", "complete-2", "swin-0", "swin-x", "swin-2-3", "logwin-40", "oneref", "oneref-a",
                           "retrieval-3", "retrieval-0-5", "complete-noncyclic"}) {
    EXPECT_EQ(parse_pair_graph(text).status().code(), StatusCode::kInvalidArgument) << text;
  }
  auto spec = parse_pair_graph("complete");
  ASSERT_TRUE(spec.is_ok());
  EXPECT_EQ(make_pair_graph(*spec, 1).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace recon::daemon
