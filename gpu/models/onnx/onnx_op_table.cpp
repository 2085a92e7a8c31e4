#include "gpu/models/onnx/onnx_op_table.h"

#include <array>
#include <string>

#include "gpu/models/onnx/onnx_channels_last.h"

namespace recon::gpu::onnx {
namespace {

using namespace ops_builders;  // NOLINT(google-build-using-namespace): the table names every builder

constexpr int64_t kMaxOpset = 18;

// Opset ranges start where the op's semantics last changed in a way the builder handles and end at
// the newest opset recon reads. Before opset 7 the arithmetic ops broadcast only where asked
// (`broadcast`, `axis`: the builder aligns B as they say), PRelu's slope is per channel, Gemm
// broadcasts C where asked (a subset of what 7 does), BatchNormalization carries `is_test` and
// `spatial` (checked), and the pools lack attributes whose defaults they had; `consumed_inputs`
// (opsets 1-5) was an optimisation hint.
const std::array kTable = {
    OpRow{"Add", 1, kMaxOpset, check_none, add},
    OpRow{"Sub", 1, kMaxOpset, check_none, sub},
    OpRow{"Mul", 1, kMaxOpset, check_none, mul},
    OpRow{"Div", 1, kMaxOpset, check_none, div},
    OpRow{"Mod", 10, kMaxOpset, check_none, mod},
    OpRow{"BitShift", 11, kMaxOpset, check_none, bit_shift},
    OpRow{"Sum", 6, kMaxOpset, check_none, sum},
    OpRow{"Max", 6, kMaxOpset, check_none, max},
    OpRow{"Min", 6, kMaxOpset, check_none, min},
    OpRow{"Mean", 6, kMaxOpset, check_none, mean},
    OpRow{"Neg", 6, kMaxOpset, check_none, neg},
    OpRow{"Erf", 9, kMaxOpset, check_none, erf},
    OpRow{"Sqrt", 6, kMaxOpset, check_none, sqrt},
    OpRow{"Reciprocal", 6, kMaxOpset, check_none, reciprocal},
    OpRow{"Abs", 6, kMaxOpset, check_none, abs},
    OpRow{"Log", 6, kMaxOpset, check_none, log},
    OpRow{"Floor", 6, kMaxOpset, check_none, floor},
    OpRow{"Ceil", 6, kMaxOpset, check_none, ceil},
    OpRow{"Sin", 7, kMaxOpset, check_none, sin},
    OpRow{"Cos", 7, kMaxOpset, check_none, cos},
    OpRow{"Sign", 9, kMaxOpset, check_none, sign},
    OpRow{"Round", 11, kMaxOpset, check_none, round},
    OpRow{"Softplus", 1, kMaxOpset, check_none, softplus},
    OpRow{"Softsign", 1, kMaxOpset, check_none, softsign},
    OpRow{"HardSwish", 14, kMaxOpset, check_none, hard_swish},
    OpRow{"HardSigmoid", 6, kMaxOpset, check_none, hard_sigmoid},
    OpRow{"LeakyRelu", 6, kMaxOpset, check_none, leaky_relu},
    OpRow{"Elu", 6, kMaxOpset, check_none, elu},
    OpRow{"Selu", 6, kMaxOpset, check_none, selu},
    OpRow{"ThresholdedRelu", 10, kMaxOpset, check_none, thresholded_relu},
    OpRow{"Tan", 7, kMaxOpset, check_none, tan},
    OpRow{"Asin", 7, kMaxOpset, check_none, asin},
    OpRow{"Acos", 7, kMaxOpset, check_none, acos},
    OpRow{"Atan", 7, kMaxOpset, check_none, atan},
    OpRow{"Sinh", 9, kMaxOpset, check_none, sinh},
    OpRow{"Cosh", 9, kMaxOpset, check_none, cosh},
    OpRow{"Asinh", 9, kMaxOpset, check_none, asinh},
    OpRow{"Acosh", 9, kMaxOpset, check_none, acosh},
    OpRow{"Atanh", 9, kMaxOpset, check_none, atanh},
    OpRow{"Celu", 12, kMaxOpset, check_none, celu},
    OpRow{"Shrink", 9, kMaxOpset, check_none, shrink},
    OpRow{"Clip", 6, kMaxOpset, check_none, clip},
    OpRow{"Pow", 1, kMaxOpset, check_none, pow},
    OpRow{"Relu", 6, kMaxOpset, check_none, relu},
    OpRow{"Sigmoid", 6, kMaxOpset, check_none, sigmoid},
    OpRow{"Tanh", 6, kMaxOpset, check_none, tanh},
    OpRow{"Exp", 6, kMaxOpset, check_none, exp},
    OpRow{"PRelu", 6, kMaxOpset, check_none, prelu},
    OpRow{"Identity", 1, kMaxOpset, check_none, identity},
    OpRow{"Dropout", 7, kMaxOpset, check_none, dropout},
    OpRow{"Cast", 6, kMaxOpset, check_none, cast},
    OpRow{"CastLike", 15, kMaxOpset, check_none, cast_like},
    OpRow{"Equal", 7, kMaxOpset, check_none, equal},
    OpRow{"Less", 7, kMaxOpset, check_none, less},
    OpRow{"Greater", 7, kMaxOpset, check_none, greater},
    OpRow{"LessOrEqual", 12, kMaxOpset, check_none, less_or_equal},
    OpRow{"GreaterOrEqual", 12, kMaxOpset, check_none, greater_or_equal},
    OpRow{"And", 7, kMaxOpset, check_none, logical_and},
    OpRow{"Or", 7, kMaxOpset, check_none, logical_or},
    OpRow{"Xor", 7, kMaxOpset, check_none, logical_xor},
    OpRow{"Not", 1, kMaxOpset, check_none, logical_not},
    OpRow{"Where", 9, kMaxOpset, check_none, where},
    OpRow{"IsNaN", 9, kMaxOpset, check_none, is_nan},
    OpRow{"IsInf", 10, kMaxOpset, check_none, is_inf},
    OpRow{"Conv", 1, kMaxOpset, check_conv, conv},
    OpRow{"ConvTranspose", 1, kMaxOpset, check_conv_transpose, conv_transpose},
    OpRow{"MaxPool", 1, kMaxOpset, check_max_pool, max_pool},
    OpRow{"AveragePool", 1, kMaxOpset, check_average_pool, average_pool},
    OpRow{"GlobalAveragePool", 1, kMaxOpset, check_none, global_average_pool},
    OpRow{"GlobalMaxPool", 1, kMaxOpset, check_none, global_max_pool},
    OpRow{"BatchNormalization", 6, kMaxOpset, check_batch_norm, batch_norm},
    OpRow{"LayerNormalization", 17, kMaxOpset, check_none, layer_norm},
    OpRow{"InstanceNormalization", 6, kMaxOpset, check_none, instance_norm},
    OpRow{"LRN", 1, kMaxOpset, check_none, lrn},
    OpRow{"Det", 11, kMaxOpset, check_none, det},
    OpRow{"Gemm", 1, kMaxOpset, check_none, gemm},
    OpRow{"MatMul", 1, kMaxOpset, check_none, matmul},
    OpRow{"Softmax", 1, kMaxOpset, check_none, softmax},
    OpRow{"LogSoftmax", 1, kMaxOpset, check_none, log_softmax},
    OpRow{"NegativeLogLikelihoodLoss", 12, kMaxOpset, check_loss, negative_log_likelihood_loss},
    OpRow{"SoftmaxCrossEntropyLoss", 12, kMaxOpset, check_loss, softmax_cross_entropy_loss},
    OpRow{"RNN", 7, kMaxOpset, check_recurrent, recurrent},
    OpRow{"GRU", 7, kMaxOpset, check_recurrent, recurrent},
    OpRow{"LSTM", 7, kMaxOpset, check_recurrent, recurrent},
    OpRow{"ReduceSum", 1, kMaxOpset, check_none, reduce_sum},
    OpRow{"ReduceMean", 1, kMaxOpset, check_none, reduce_mean},
    OpRow{"ReduceMax", 1, kMaxOpset, check_none, reduce_max},
    OpRow{"ReduceMin", 1, kMaxOpset, check_none, reduce_min},
    OpRow{"ReduceProd", 1, kMaxOpset, check_none, reduce_prod},
    OpRow{"Hardmax", 1, kMaxOpset, check_none, hardmax},
    OpRow{"OneHot", 9, kMaxOpset, check_none, one_hot},
    OpRow{"ReduceL1", 1, kMaxOpset, check_none, reduce_l1},
    OpRow{"ReduceL2", 1, kMaxOpset, check_none, reduce_l2},
    OpRow{"ReduceSumSquare", 1, kMaxOpset, check_none, reduce_sum_square},
    OpRow{"ReduceLogSum", 1, kMaxOpset, check_none, reduce_log_sum},
    OpRow{"ReduceLogSumExp", 1, kMaxOpset, check_none, reduce_log_sum_exp},
    OpRow{"MeanVarianceNormalization", 9, kMaxOpset, check_none, mean_variance_normalization},
    OpRow{"ArgMax", 1, kMaxOpset, check_none, argmax},
    OpRow{"ArgMin", 1, kMaxOpset, check_none, argmin},
    OpRow{"TopK", 1, kMaxOpset, check_none, top_k},
    OpRow{"CumSum", 11, kMaxOpset, check_none, cumsum},
    OpRow{"Resize", 10, kMaxOpset, check_resize, resize},
    OpRow{"GridSample", 16, kMaxOpset, check_grid_sample, grid_sample},
    OpRow{"RoiAlign", 10, kMaxOpset, check_roi_align, roi_align},
    OpRow{"Einsum", 12, kMaxOpset, check_einsum, einsum},
    OpRow{"Upsample", 7, 9, check_none, upsample},
    OpRow{"Constant", 1, kMaxOpset, check_none, constant},
    OpRow{"ConstantOfShape", 9, kMaxOpset, check_none, constant_of_shape},
    OpRow{"Shape", 1, kMaxOpset, check_none, shape},
    OpRow{"Size", 1, kMaxOpset, check_none, size},
    OpRow{"EyeLike", 9, kMaxOpset, check_none, eye_like},
    OpRow{"Reshape", 5, kMaxOpset, check_none, reshape},
    OpRow{"Flatten", 1, kMaxOpset, check_none, flatten},
    OpRow{"Squeeze", 1, kMaxOpset, check_none, squeeze},
    OpRow{"Unsqueeze", 1, kMaxOpset, check_none, unsqueeze},
    OpRow{"Transpose", 1, kMaxOpset, check_none, transpose},
    OpRow{"DepthToSpace", 1, kMaxOpset, check_none, depth_to_space},
    OpRow{"SpaceToDepth", 1, kMaxOpset, check_none, space_to_depth},
    OpRow{"Trilu", 14, kMaxOpset, check_none, trilu},
    OpRow{"GatherElements", 11, kMaxOpset, check_none, gather_elements},
    OpRow{"GatherND", 11, kMaxOpset, check_none, gather_nd},
    OpRow{"ScatterElements", 11, kMaxOpset, check_scatter, scatter_elements},
    OpRow{"Scatter", 9, 10, check_scatter, scatter_elements},
    OpRow{"ScatterND", 11, kMaxOpset, check_scatter, scatter_nd},
    OpRow{"MaxUnpool", 9, kMaxOpset, check_none, max_unpool},
    OpRow{"Concat", 4, kMaxOpset, check_none, concat},
    OpRow{"Split", 2, kMaxOpset, check_none, split},
    OpRow{"Slice", 1, kMaxOpset, check_none, slice},
    OpRow{"Gather", 1, kMaxOpset, check_none, gather},
    OpRow{"Expand", 8, kMaxOpset, check_none, expand},
    OpRow{"ReverseSequence", 10, kMaxOpset, check_none, reverse_sequence},
    OpRow{"Tile", 6, kMaxOpset, check_none, tile},
    OpRow{"Pad", 2, kMaxOpset, check_pad, pad},
    OpRow{"Range", 11, kMaxOpset, check_none, range},
    OpRow{"HannWindow", 17, kMaxOpset, check_none, hann_window},
    OpRow{"HammingWindow", 17, kMaxOpset, check_none, hamming_window},
    OpRow{"BlackmanWindow", 17, kMaxOpset, check_none, blackman_window},
    OpRow{"QuantizeLinear", 10, kMaxOpset, check_none, quantize_linear},
    OpRow{"DequantizeLinear", 10, kMaxOpset, check_none, dequantize_linear},
    OpRow{"DynamicQuantizeLinear", 11, kMaxOpset, check_none, dynamic_quantize_linear},
    OpRow{"MatMulInteger", 10, kMaxOpset, check_none, matmul_integer},
    OpRow{"ConvInteger", 10, kMaxOpset, check_conv, conv_integer},
    OpRow{"QLinearMatMul", 10, kMaxOpset, check_none, qlinear_matmul},
    OpRow{"QLinearConv", 10, kMaxOpset, check_conv, qlinear_conv},
};

// The channels-last forms (onnx_channels_last.h): checked as their ONNX ops before the rewrite.
const std::array kChannelsLastTable = {
    OpRow{"Conv", 1, kMaxOpset, check_none, conv_channels_last},
    OpRow{"MaxPool", 1, kMaxOpset, check_none, max_pool_channels_last},
    OpRow{"AveragePool", 1, kMaxOpset, check_none, average_pool_channels_last},
    OpRow{"GlobalAveragePool", 1, kMaxOpset, check_none, global_average_pool_channels_last},
    OpRow{"GlobalMaxPool", 1, kMaxOpset, check_none, global_max_pool_channels_last},
};

bool default_domain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

}  // namespace

std::span<const OpRow> op_table() {
  return kTable;
}

const OpRow* find_op(const Node& node, int64_t opset) {
  if (node.domain == kChannelsLastDomain) {
    for (const OpRow& row : kChannelsLastTable) {
      if (node.op_type == row.op_type) return &row;
    }
    return nullptr;
  }
  if (!default_domain(node.domain)) return nullptr;
  for (const OpRow& row : kTable) {
    if (node.op_type == row.op_type && opset >= row.since && opset <= row.until) return &row;
  }
  return nullptr;
}

std::vector<std::string> unsupported_nodes(const Model& model) {
  std::vector<std::string> lines;
  const int64_t opset = model.opset();
  for (size_t i = 0; i < model.graph.nodes.size(); ++i) {
    const Node& node = model.graph.nodes[i];
    const std::string where = "node " + std::to_string(i) + ": " + node_label(node, opset);
    if (!default_domain(node.domain)) {
      lines.push_back(where + ": ops of other domains are not supported");
      continue;
    }
    if (opset < 1 || opset > kMaxOpset) {
      lines.push_back(where + ": opset " + std::to_string(opset) + " is outside the 1-" + std::to_string(kMaxOpset) +
                      " recon reads");
      continue;
    }
    const OpRow* row = find_op(node, opset);
    if (row == nullptr) {
      bool known = false;
      for (const OpRow& r : kTable) known = known || node.op_type == r.op_type;
      lines.push_back(where + (known ? ": this opset version of the op is not supported" : ": unsupported op"));
      continue;
    }
    if (std::string why = row->check(node, opset); !why.empty()) lines.push_back(where + ": " + why);
  }
  return lines;
}

}  // namespace recon::gpu::onnx
