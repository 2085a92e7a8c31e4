// The one table of ONNX ops recon runs: a row per op type and opset range, with a check of what the
// op library can do for a node (asked for every node before anything is built) and the builder
// that records it. Adding an op is a builder in onnx_ops_<family>.cpp and one row here.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_model.h"
#include "gpu/models/onnx/onnx_op_context.h"

namespace recon::gpu::onnx {

struct OpRow {
  const char* op_type;
  int64_t since;  // opset versions of the default domain the row covers, inclusive
  int64_t until;
  // "" when the op library can run the node as configured by its attributes, else why not.
  std::string (*check)(const Node& node, int64_t opset);
  Status (*build)(OpContext& ctx);
};

std::span<const OpRow> op_table();
// The row for `node` at `opset`, or nullptr. Nodes of kChannelsLastDomain, which only the compiler's
// own rewrite makes, have rows of their own (any opset).
const OpRow* find_op(const Node& node, int64_t opset);

// Every node the table cannot run (unknown op, opset out of range, unsupported attributes, other
// domains), one line each; empty when the whole graph is supported.
std::vector<std::string> unsupported_nodes(const Model& model);

// Builders, by family (onnx_ops_<family>.cpp); declared here so the table is the only registry.
namespace ops_builders {
std::string check_none(const Node&, int64_t);
// elementwise
Status add(OpContext&);
Status sub(OpContext&);
Status mul(OpContext&);
Status div(OpContext&);
Status mod(OpContext&);
Status bit_shift(OpContext&);
Status sum(OpContext&);
Status max(OpContext&);
Status min(OpContext&);
Status mean(OpContext&);
Status neg(OpContext&);
Status erf(OpContext&);
Status sqrt(OpContext&);
Status reciprocal(OpContext&);
Status abs(OpContext&);
Status log(OpContext&);
Status floor(OpContext&);
Status ceil(OpContext&);
Status sin(OpContext&);
Status cos(OpContext&);
Status sign(OpContext&);
Status round(OpContext&);
Status softplus(OpContext&);
Status softsign(OpContext&);
Status hard_swish(OpContext&);
Status leaky_relu(OpContext&);
Status elu(OpContext&);
Status selu(OpContext&);
Status thresholded_relu(OpContext&);
Status tan(OpContext&);
Status asin(OpContext&);
Status acos(OpContext&);
Status atan(OpContext&);
Status sinh(OpContext&);
Status cosh(OpContext&);
Status asinh(OpContext&);
Status acosh(OpContext&);
Status atanh(OpContext&);
Status celu(OpContext&);
Status shrink(OpContext&);
Status hard_sigmoid(OpContext&);
Status clip(OpContext&);
Status pow(OpContext&);
Status equal(OpContext&);
Status less(OpContext&);
Status greater(OpContext&);
Status less_or_equal(OpContext&);
Status greater_or_equal(OpContext&);
Status logical_and(OpContext&);
Status logical_or(OpContext&);
Status logical_xor(OpContext&);
Status logical_not(OpContext&);
Status where(OpContext&);
Status is_nan(OpContext&);
Status is_inf(OpContext&);
Status relu(OpContext&);
Status sigmoid(OpContext&);
Status tanh(OpContext&);
Status exp(OpContext&);
Status prelu(OpContext&);
Status identity(OpContext&);
Status dropout(OpContext&);
Status cast(OpContext&);
Status cast_like(OpContext&);
// convolution, pooling, normalisation, matrix products
std::string check_conv(const Node&, int64_t);
Status conv(OpContext&);
std::string check_conv_transpose(const Node&, int64_t);
Status conv_transpose(OpContext&);
std::string check_max_pool(const Node&, int64_t);
std::string check_average_pool(const Node&, int64_t);
Status max_pool(OpContext&);
Status average_pool(OpContext&);
Status global_average_pool(OpContext&);
Status global_max_pool(OpContext&);
// the channels-last forms (onnx_channels_last.h): rows of the internal domain's table
Status conv_channels_last(OpContext&);
Status max_pool_channels_last(OpContext&);
Status average_pool_channels_last(OpContext&);
Status global_average_pool_channels_last(OpContext&);
Status global_max_pool_channels_last(OpContext&);
std::string check_batch_norm(const Node&, int64_t);
Status batch_norm(OpContext&);
Status layer_norm(OpContext&);
Status instance_norm(OpContext&);
Status det(OpContext&);
Status lrn(OpContext&);
Status gemm(OpContext&);
Status matmul(OpContext&);
Status softmax(OpContext&);
Status log_softmax(OpContext&);
// LogSoftmax of x along `axis` into out (x's shape): not a row of the table, the losses build on it.
Status log_softmax_along_axis(OpContext&, const Arg& x, const Arg& out, int64_t axis);
// quantization
Status quantize_linear(OpContext&);
Status dequantize_linear(OpContext&);
Status dynamic_quantize_linear(OpContext&);
Status matmul_integer(OpContext&);
Status conv_integer(OpContext&);
Status qlinear_matmul(OpContext&);
Status qlinear_conv(OpContext&);
// A device tensor for a builder's result of the given shape (an output, or scratch).
using MakeOutput = std::function<Result<Arg>(const Shape&)>;
// Conv of x and w (and bias) as the node's attributes say, and MatMul of a and b as NumPy's rules
// say, each into the tensor `make` gives for the result's shape: not rows of the table, the integer
// and quantized forms build on them.
Status conv_of(OpContext&, Arg x, Arg w, const std::optional<Arg>& bias, const MakeOutput& make);
Status matmul_of(OpContext&, const Arg& a, const Arg& b, const gpu::ops::MatmulOptions& opt, const MakeOutput& make);
// losses
std::string check_loss(const Node&, int64_t);
Status negative_log_likelihood_loss(OpContext&);
Status softmax_cross_entropy_loss(OpContext&);
// recurrent layers (RNN, GRU, LSTM; one builder, the node's op type picks the cell)
std::string check_recurrent(const Node&, int64_t);
Status recurrent(OpContext&);
// reductions
Status reduce_sum(OpContext&);
Status reduce_mean(OpContext&);
Status reduce_max(OpContext&);
Status reduce_min(OpContext&);
Status reduce_prod(OpContext&);
Status hardmax(OpContext&);
Status one_hot(OpContext&);
Status reduce_l1(OpContext&);
Status reduce_l2(OpContext&);
Status reduce_sum_square(OpContext&);
Status reduce_log_sum(OpContext&);
Status reduce_log_sum_exp(OpContext&);
Status mean_variance_normalization(OpContext&);
Status argmax(OpContext&);
Status argmin(OpContext&);
Status top_k(OpContext&);
Status cumsum(OpContext&);
// resampling
std::string check_resize(const Node&, int64_t);
std::string check_grid_sample(const Node&, int64_t);
std::string check_einsum(const Node&, int64_t);
Status einsum(OpContext&);
Status grid_sample(OpContext&);
std::string check_roi_align(const Node&, int64_t);
Status roi_align(OpContext&);
Status resize(OpContext&);
Status upsample(OpContext&);
// shapes and layout
Status constant(OpContext&);
Status constant_of_shape(OpContext&);
Status shape(OpContext&);
Status size(OpContext&);
Status eye_like(OpContext&);
Status reshape(OpContext&);
Status flatten(OpContext&);
Status squeeze(OpContext&);
Status unsqueeze(OpContext&);
Status transpose(OpContext&);
Status depth_to_space(OpContext&);
Status trilu(OpContext&);
Status gather_elements(OpContext&);
Status space_to_depth(OpContext&);
Status concat(OpContext&);
Status split(OpContext&);
Status slice(OpContext&);
Status gather(OpContext&);
Status expand(OpContext&);
Status reverse_sequence(OpContext&);
Status tile(OpContext&);
std::string check_pad(const Node&, int64_t);
Status pad(OpContext&);
Status range(OpContext&);
Status hann_window(OpContext&);
Status hamming_window(OpContext&);
Status blackman_window(OpContext&);
// indexed reads and writes
std::string check_scatter(const Node&, int64_t);
Status scatter_elements(OpContext&);
Status scatter_nd(OpContext&);
Status max_unpool(OpContext&);
Status gather_nd(OpContext&);
}  // namespace ops_builders

}  // namespace recon::gpu::onnx
