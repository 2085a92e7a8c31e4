// Kinematic trees: see kinematic_tree.h. Every ordering detail here (the chain's tie preference,
// the stable sorts, the union-find relabelling, the CSR neighbour order of the BFS) is scipy's, because
// the official picks its root and edge order from them and the optimisation depends on both.
#include "gpu/reconstruct/kinematic_tree.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <string>

namespace recon::gpu {

namespace {

std::size_t condensed_index(std::size_t n, std::size_t i, std::size_t j) {
  if (i > j) std::swap(i, j);
  return n * i - i * (i + 1) / 2 + (j - i - 1);
}

double pairwise_sum(const double* a, std::size_t n) {
  if (n < 8) {
    double res = 0.0;
    for (std::size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (std::size_t j = 0; j < 8; ++j) r[j] = a[j];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (std::size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

// Breadth-first order as scipy's breadth_first_order(tree, start, directed=False): for each node
// taken from the queue, first the columns of its CSR row (neighbours above it, ascending), then those
// of the transpose's row (neighbours below it, ascending).
void bfs(const std::vector<std::vector<int>>& above, const std::vector<std::vector<int>>& below, int start,
         std::vector<int>& order, std::vector<int>& parent) {
  const std::size_t n = above.size();
  order.clear();
  parent.assign(n, -1);
  order.push_back(start);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const int p = order[k];
    for (const auto* list : {&above[static_cast<std::size_t>(p)], &below[static_cast<std::size_t>(p)]}) {
      for (const int c : *list) {
        if (c == start || parent[static_cast<std::size_t>(c)] != -1) continue;
        parent[static_cast<std::size_t>(c)] = p;
        order.push_back(c);
      }
    }
  }
}

std::vector<int> bfs_ranks(const std::vector<std::vector<int>>& above, const std::vector<std::vector<int>>& below,
                           int start) {
  std::vector<int> order, parent;
  bfs(above, below, start, order, parent);
  std::vector<int> ranks(above.size(), 0);
  for (std::size_t k = 0; k < order.size(); ++k) ranks[static_cast<std::size_t>(order[k])] = static_cast<int>(k);
  return ranks;
}

int argmax_first(const std::vector<int>& v) {
  return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());  // first of the maxima
}

}  // namespace

double numpy_sum(std::span<const double> values) {
  return 0.0 + pairwise_sum(values.data(), values.size());
}

Result<std::vector<LinkageRow>> ward_linkage(std::span<const double> condensed, int n) {
  if (n < 1) return invalid_argument("ward linkage of " + std::to_string(n) + " observations");
  const auto un = static_cast<std::size_t>(n);
  if (condensed.size() != un * (un - 1) / 2) {
    return invalid_argument("ward linkage: " + std::to_string(condensed.size()) + " distances for " +
                            std::to_string(n) + " observations");
  }
  for (const double d : condensed) {
    if (!std::isfinite(d) || d < 0) return invalid_argument("ward linkage: distance " + std::to_string(d));
  }
  std::vector<double> dist(condensed.begin(), condensed.end());
  std::vector<int> size(un, 1);
  std::vector<int> chain(un, 0);
  std::size_t chain_length = 0;
  std::vector<LinkageRow> z(un - 1);

  // scipy's nn_chain (_hierarchy.pyx), step for step.
  for (std::size_t k = 0; k + 1 < un; ++k) {
    if (chain_length == 0) {
      chain_length = 1;
      for (std::size_t i = 0; i < un; ++i) {
        if (size[i] > 0) {
          chain[0] = static_cast<int>(i);
          break;
        }
      }
    }
    int x = 0, y = 0;
    double current_min = 0;
    for (;;) {
      x = chain[chain_length - 1];
      // The previous chain element wins ties, which keeps the chain from cycling.
      if (chain_length > 1) {
        y = chain[chain_length - 2];
        current_min = dist[condensed_index(un, static_cast<std::size_t>(x), static_cast<std::size_t>(y))];
      } else {
        current_min = std::numeric_limits<double>::infinity();
      }
      for (std::size_t i = 0; i < un; ++i) {
        if (size[i] == 0 || static_cast<int>(i) == x) continue;
        const double d = dist[condensed_index(un, static_cast<std::size_t>(x), i)];
        if (d < current_min) {
          current_min = d;
          y = static_cast<int>(i);
        }
      }
      if (chain_length > 1 && y == chain[chain_length - 2]) break;
      chain[chain_length++] = y;
    }
    chain_length -= 2;
    if (x > y) std::swap(x, y);
    const int nx = size[static_cast<std::size_t>(x)];
    const int ny = size[static_cast<std::size_t>(y)];
    z[k] = LinkageRow{x, y, current_min, nx + ny};
    size[static_cast<std::size_t>(x)] = 0;
    size[static_cast<std::size_t>(y)] = nx + ny;
    // Lance-Williams for Ward: d(i, x u y) from d(i, x), d(i, y), d(x, y).
    for (std::size_t i = 0; i < un; ++i) {
      const int ni = size[i];
      if (ni == 0 || static_cast<int>(i) == y) continue;
      const std::size_t ix = condensed_index(un, i, static_cast<std::size_t>(x));
      const std::size_t iy = condensed_index(un, i, static_cast<std::size_t>(y));
      const double d_xi = dist[ix], d_yi = dist[iy];
      const double t = 1.0 / (nx + ny + ni);
      dist[iy] =
          std::sqrt((ni + nx) * t * d_xi * d_xi + (ni + ny) * t * d_yi * d_yi - ni * t * current_min * current_min);
    }
  }

  std::stable_sort(z.begin(), z.end(),
                   [](const LinkageRow& l, const LinkageRow& r) { return l.distance < r.distance; });

  // scipy's label(): union-find relabelling, new clusters numbered n, n+1, ... in row order.
  std::vector<int> parent(2 * un - 1);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<int> cluster_size(2 * un - 1, 1);
  int next_label = n;
  const auto find = [&](int v) {
    int root = v;
    while (parent[static_cast<std::size_t>(root)] != root) root = parent[static_cast<std::size_t>(root)];
    while (parent[static_cast<std::size_t>(v)] != root) {
      const int up = parent[static_cast<std::size_t>(v)];
      parent[static_cast<std::size_t>(v)] = root;
      v = up;
    }
    return root;
  };
  for (LinkageRow& row : z) {
    const int xr = find(row.a), yr = find(row.b);
    row.a = std::min(xr, yr);
    row.b = std::max(xr, yr);
    parent[static_cast<std::size_t>(xr)] = next_label;
    parent[static_cast<std::size_t>(yr)] = next_label;
    cluster_size[static_cast<std::size_t>(next_label)] =
        cluster_size[static_cast<std::size_t>(xr)] + cluster_size[static_cast<std::size_t>(yr)];
    row.size = cluster_size[static_cast<std::size_t>(next_label)];
    ++next_label;
  }
  return z;
}

Result<KinematicTree> spanning_tree_from_weights(std::span<const double> weights, int n) {
  if (n < 1) return invalid_argument("spanning tree of " + std::to_string(n) + " images");
  const auto un = static_cast<std::size_t>(n);
  if (weights.size() != un * un) return invalid_argument("spanning tree: weights are not n x n");
  if (n == 1) return KinematicTree{0, {}};

  // scipy's minimum_spanning_tree of -weights: Kruskal over the stored entries in CSR (row-major)
  // order, stable-sorted by value. Of the two entries of an edge, (a, b) with a < b comes first, so
  // the tree keeps upper-triangle entries; self loops are dropped.
  struct Entry {
    int row, col;
    double value;
  };
  std::vector<Entry> entries;
  for (std::size_t i = 0; i < un; ++i) {
    for (std::size_t j = 0; j < un; ++j) {
      const double w = weights[i * un + j];
      if (w != 0) entries.push_back(Entry{static_cast<int>(i), static_cast<int>(j), -w});
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& l, const Entry& r) { return l.value < r.value; });
  std::vector<int> component(un);
  std::iota(component.begin(), component.end(), 0);
  const auto head = [&](int v) {
    while (component[static_cast<std::size_t>(v)] != v) v = component[static_cast<std::size_t>(v)];
    return v;
  };
  std::vector<std::pair<int, int>> kept;
  for (const Entry& e : entries) {
    if (kept.size() + 1 == un) break;
    const int r1 = head(e.row), r2 = head(e.col);
    if (r1 == r2) continue;
    component[static_cast<std::size_t>(r2)] = r1;
    kept.emplace_back(e.row, e.col);
  }
  if (kept.size() + 1 != un) {
    return invalid_argument("spanning tree: the graph of " + std::to_string(n) + " images is not connected");
  }
  std::sort(kept.begin(), kept.end());  // CSR order of the tree's entries
  std::vector<std::vector<int>> above(un), below(un);
  for (const auto& [r, c] : kept) {
    above[static_cast<std::size_t>(r)].push_back(c);
    below[static_cast<std::size_t>(c)].push_back(r);
  }

  // The root: a node far from every leaf, from three BFS passes (sparse_ga.py:1036-1040).
  std::vector<int> ranks1 = bfs_ranks(above, below, 0);
  const std::vector<int> ranks2 = bfs_ranks(above, below, argmax_first(ranks1));
  ranks1 = bfs_ranks(above, below, argmax_first(ranks2));
  std::vector<int> lower(un);
  for (std::size_t i = 0; i < un; ++i) lower[i] = std::min(ranks1[i], ranks2[i]);
  KinematicTree tree;
  tree.root = argmax_first(lower);
  std::vector<int> order, parent;
  bfs(above, below, tree.root, order, parent);
  for (std::size_t k = 1; k < order.size(); ++k) {
    tree.edges.emplace_back(parent[static_cast<std::size_t>(order[k])], order[k]);
  }
  return tree;
}

Result<KinematicTree> hclust_ward_tree(std::span<const double> n_matches, std::span<const std::int64_t> patches,
                                       int n) {
  if (n < 1) return invalid_argument("kinematic tree of " + std::to_string(n) + " images");
  const auto un = static_cast<std::size_t>(n);
  if (n_matches.size() != un * un || patches.size() != un) {
    return invalid_argument("kinematic tree: match counts or patch counts do not match " + std::to_string(n) +
                            " images");
  }
  if (n == 1) return KinematicTree{0, {}};
  std::vector<double> pws(un * un, 0.0);
  for (std::size_t i = 0; i < un; ++i) {
    for (std::size_t j = 0; j < un; ++j) {
      if (i == j) {
        pws[i * un + j] = 1.0;
      } else {
        const auto max_corres = static_cast<double>(3 * std::min(patches[i], patches[j]));
        pws[i * un + j] = std::min(n_matches[i * un + j] / max_corres, 1.0);
      }
    }
  }
  std::vector<double> condensed;
  condensed.reserve(un * (un - 1) / 2);
  for (std::size_t i = 0; i < un; ++i) {
    for (std::size_t j = i + 1; j < un; ++j) {
      const double p = pws[i * un + j];
      condensed.push_back(p != 0 ? 1.0 - p : 2.0);
    }
  }
  RECON_ASSIGN_OR_RETURN(const std::vector<LinkageRow> z, ward_linkage(condensed, n));

  std::vector<double> tree(un * un, 0.0);
  for (std::size_t i = 0; i < un; ++i) tree[i * un + i] = 1.0;
  std::vector<int> representative(2 * un - 1);
  std::iota(representative.begin(), representative.end(), 0);
  for (std::size_t k = 0; k < z.size(); ++k) {
    const auto a = static_cast<std::size_t>(representative[static_cast<std::size_t>(z[k].a)]);
    const auto b = static_cast<std::size_t>(representative[static_cast<std::size_t>(z[k].b)]);
    tree[a * un + b] = tree[b * un + a] = 1.0;
    const double sum_a = numpy_sum(std::span<const double>(&pws[a * un], un));
    const double sum_b = numpy_sum(std::span<const double>(&pws[b * un], un));
    const std::size_t best = sum_a > sum_b ? a : b;  // a tie goes to b
    representative[un + k] = static_cast<int>(best);
    for (std::size_t j = 0; j < un; ++j) pws[best * un + j] = std::max(pws[a * un + j], pws[b * un + j]);
  }
  return spanning_tree_from_weights(tree, n);
}

Result<KinematicTree> mst_tree(std::span<const double> n_matches, int n) {
  return spanning_tree_from_weights(n_matches, n);
}

int tree_depth(const KinematicTree& tree, int n) {
  std::vector<int> depth(static_cast<std::size_t>(std::max(n, 0)), 0);
  int deepest = 0;
  for (const auto& [parent, child] : tree.edges) {
    if (parent < 0 || child < 0 || parent >= n || child >= n) continue;
    depth[static_cast<std::size_t>(child)] = depth[static_cast<std::size_t>(parent)] + 1;
    deepest = std::max(deepest, depth[static_cast<std::size_t>(child)]);
  }
  return deepest;
}

}  // namespace recon::gpu
