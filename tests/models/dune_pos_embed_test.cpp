// dune_pos_embed: the bicubic taps PyTorch's F.interpolate uses on one axis (plain and antialiased,
// with a scale factor or a size) and the table's use as it is on its own square grid. Expected
// weights are F.interpolate(eye, mode="bicubic", align_corners=False) in float64 (torch 1.13),
// the matrix of each case row by row; the DUNE goldens cover the same code inside the encoder.
#include "gpu/models/mast3r/dune_pos_embed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace recon::gpu {
namespace {

struct TapsCase {
  int64_t in, out;
  double scale_factor;  // 0: by size
  bool antialias;
  std::vector<double> matrix;  // [out, in]
};

const TapsCase kCases[] = {
    {4,
     7,
     1.7749999999999999,
     false,
     {1.1000469565059463,
      -0.10004695650594675,
      0,
      0,
      0.67243637384712962,
      0.38605224133932736,
      -0.058488615186456983,
      0,
      0.074564277152700753,
      0.98210125911190216,
      -0.056665536264602245,
      0,
      -0.09871736618880167,
      0.63039633107113224,
      0.55650854891299795,
      -0.088187513795328076,
      0,
      -0.024581442732970249,
      0.99726494505617314,
      0.027316497676797225,
      0,
      -0.072337728513512722,
      0.46190140495821541,
      0.61043632355529742,
      0,
      0,
      -0.085313545127140511,
      1.0853135451271401}},
    {4,
     7,
     0,
     false,
     {1.0992164723032065,
      -0.09921647230320696,
      0,
      0,
      0.65925655976676389,
      0.40224125364431473,
      -0.061497813411079072,
      0,
      0.05721574344023328,
      0.98897594752186591,
      -0.046191690962099408,
      0,
      -0.09375,
      0.59375,
      0.59375,
      -0.09375,
      0,
      -0.046191690962098964,
      0.98897594752186602,
      0.057215743440232947,
      0,
      -0.061497813411079072,
      0.40224125364431484,
      0.65925655976676378,
      0,
      0,
      -0.09921647230320696,
      1.0992164723032076}},
    {4,
     7,
     1.7749999999999999,
     true,
     {1.0803821715567183,
      -0.080382171556718285,
      0,
      0,
      0.71130810355202634,
      0.32499747576449384,
      -0.036305579316520224,
      0,
      0.061153435134821486,
      0.97648031783579969,
      -0.037633752970621236,
      0,
      -0.065811577459200701,
      0.60100049313935588,
      0.52360276018339769,
      -0.058791675863552627,
      0,
      -0.016377833092873811,
      0.9963699831815036,
      0.02000784991137013,
      0,
      -0.044989729409987911,
      0.39736749032850693,
      0.64762223908148098,
      0,
      0,
      -0.064345495580214518,
      1.0643454955802145}},
    {6,
     3,
     0,
     true,
     {0.46443514644351463, 0.46443514644351463, 0.12133891213389121, -0.037656903765690378, -0.012552301255230125, 0,
      -0.034351145038167941, 0.11068702290076336, 0.42366412213740456, 0.42366412213740456, 0.11068702290076336,
      -0.034351145038167941, 0, -0.012552301255230125, -0.037656903765690378, 0.12133891213389121, 0.46443514644351463,
      0.46443514644351463}},
    {6,
     3,
     0.51666666666666672,
     false,
     {0.53627353898828567, 0.5510630307811083, -0.087336569769393968, 0, 0, 0, 0, -0.10770345909838586,
      0.71612126984659841, 0.46435479675069613, -0.07277260749890857, 0, 0, 0, 0, -0.11108954885703737,
      0.79044321271525042, 0.32064633614178695}},
};

TEST(DunePositionTable, BicubicTapsAreTorchInterpolateWeights) {
  for (const TapsCase& c : kCases) {
    const std::vector<ResampleTaps> taps = bicubic_taps(c.in, c.out, c.scale_factor, c.antialias);
    ASSERT_EQ(taps.size(), static_cast<size_t>(c.out));
    for (int64_t o = 0; o < c.out; ++o) {
      std::vector<double> row(static_cast<size_t>(c.in), 0.0);
      for (size_t j = 0; j < taps[o].weights.size(); ++j)
        row[taps[o].first + static_cast<int64_t>(j)] += taps[o].weights[j];
      for (int64_t i = 0; i < c.in; ++i) {
        EXPECT_NEAR(row[i], c.matrix[o * c.in + i], 1e-12)
            << c.in << "->" << c.out << " scale " << c.scale_factor << " aa " << c.antialias << " at " << o << "," << i;
      }
    }
  }
}

TEST(DunePositionTable, OwnSquareGridUsesTheTableAsItIsAndOtherwiseResamples) {
  const DunePositionGrid g{2, 3, 0.1, false};
  std::vector<float> table(5 * 3);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i);
  const std::vector<float> same = dune_patch_positions(table, g, 2, 2, /*square_image=*/true);
  EXPECT_EQ(same, std::vector<float>(table.begin() + 3, table.end()));
  // The same 4 tokens of a non-square image are resampled (offset 0.1: not the identity).
  const std::vector<float> resampled = dune_patch_positions(table, g, 1, 4, /*square_image=*/false);
  ASSERT_EQ(resampled.size(), 12u);
  EXPECT_NE(resampled, same);
}

}  // namespace
}  // namespace recon::gpu
