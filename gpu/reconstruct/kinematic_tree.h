// The kinematic tree of MASt3R-SfM's sparse alignment (sparse_ga.py:146-180, 1022-1047): which image's
// pose is expressed relative to which. 'hclust-ward' clusters the images by match affinity (scipy's
// Ward linkage, reproduced to the tie) and links each merge's representative images; 'mst' takes the
// maximum spanning tree of the match counts. Either way the root is the tree's centre by the official
// BFS-rank heuristic and the edges come in scipy's breadth-first order. Pure combinatorics, no I/O.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "gpu/status.h"

namespace recon::gpu {

struct KinematicTree {
  int root = 0;
  std::vector<std::pair<int, int>> edges;  // (parent, child) in breadth-first order from the root
};

// One row of a scipy linkage matrix Z: clusters a < b merge at `distance` into a cluster of `size`
// images, which gets id n + row.
struct LinkageRow {
  int a = 0, b = 0;
  double distance = 0;
  int size = 0;
};

// scipy.cluster.hierarchy.linkage(condensed, method='ward'): the nearest-neighbour chain with the
// Lance-Williams update, rows stably sorted by distance, relabelled with a union-find. `condensed`
// holds the n(n-1)/2 upper-triangle distances row by row (scipy's squareform), finite and >= 0.
Result<std::vector<LinkageRow>> ward_linkage(std::span<const double> condensed, int n);

// numpy's float64 sum of a 1-D array (pairwise summation, 8 accumulators): the official compares
// such sums, and the last bit decides ties.
double numpy_sum(std::span<const double> values);

// compute_min_spanning_tree (sparse_ga.py:1029-1047) on the dense n x n matrix `weights` (0 = no
// edge): scipy's minimum_spanning_tree of -weights (Kruskal over the non-zero entries in row-major
// order, stable-sorted), root = argmax(min(ranks1, ranks2)) of BFS visiting ranks, then the BFS
// (parent, child) edges. Fails if the graph is not connected.
Result<KinematicTree> spanning_tree_from_weights(std::span<const double> weights, int n);

// The 'hclust-ward' tree: pws = min(n_matches / (3 min(patches_i, patches_j)), 1) with 1 on the
// diagonal, distance 1 - pws (2 where pws = 0), Ward linkage, then each merge links the
// representatives a, b of its two clusters; the new representative is a if sum(pws[a]) > sum(pws[b])
// else b, whose row becomes max(pws[a], pws[b]). `n_matches` is n x n symmetric, `patches[i]` is
// (W_i/s)*(H_i/s).
Result<KinematicTree> hclust_ward_tree(std::span<const double> n_matches, std::span<const std::int64_t> patches, int n);

// The 'mst' tree: the maximum spanning tree of the match counts.
Result<KinematicTree> mst_tree(std::span<const double> n_matches, int n);

// Depth of the deepest node (root = 0).
int tree_depth(const KinematicTree& tree, int n);

}  // namespace recon::gpu
