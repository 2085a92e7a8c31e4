#include "bench/ops/op_cases.h"

#include <algorithm>
#include <cmath>

namespace recon::bench {
namespace {

using gpu::DType;
using Params = std::vector<std::pair<std::string, int64_t>>;

// One shape of one op; `small` keeps the op's structure (head size, kernel, stride) at a size a
// CPU driver runs in milliseconds.
struct ShapeRow {
  OpKind kind;
  const char* op;
  const char* shape;
  Params full, small;
};

// MASt3R at 512×384 (mast3r-spec.md §3–§5, §10): 768 tokens per view; the encoder runs both
// views as one batch (M = 1536), the decoder and heads per view (M = 768).
std::vector<ShapeRow> shape_rows() {
  auto linear = [](const char* shape, int64_t m, int64_t k, int64_t n) {
    return ShapeRow{OpKind::kLinear,
                    "linear",
                    shape,
                    {{"m", m}, {"k", k}, {"n", n}},
                    {{"m", m / 16}, {"k", k / 16}, {"n", n / 16}}};
  };
  auto conv = [](const char* shape, int64_t cin, int64_t cout, int64_t h, int64_t w, int64_t k, int64_t stride,
                 int64_t pad) {
    return ShapeRow{
        OpKind::kConv2d,
        "conv2d",
        shape,
        {{"b", 1}, {"cin", cin}, {"cout", cout}, {"h", h}, {"w", w}, {"k", k}, {"stride", stride}, {"pad", pad}},
        {{"b", 1},
         {"cin", cin / 8},
         {"cout", cout / 8},
         {"h", h / 8},
         {"w", w / 8},
         {"k", k},
         {"stride", stride},
         {"pad", pad}}};
  };
  return {
      linear("enc_qkv", 1536, 1024, 3072),
      linear("enc_proj", 1536, 1024, 1024),
      linear("enc_fc1", 1536, 1024, 4096),
      linear("enc_fc2", 1536, 4096, 1024),
      linear("dec_qkv", 768, 768, 2304),
      linear("dec_proj", 768, 768, 768),
      linear("dec_fc1", 768, 768, 3072),
      linear("dec_fc2", 768, 3072, 768),
      linear("head_fc1", 768, 1792, 7168),
      linear("head_fc2", 768, 7168, 6400),
      {OpKind::kMatmul,
       "matmul",
       "square",
       {{"m", 4096}, {"k", 4096}, {"n", 4096}},
       {{"m", 256}, {"k", 256}, {"n", 256}}},
      // Encoder attention: 2 images × 16 heads of 64, 768 tokens. Cross: the decoder's pattern
      // (queries of one view, keys/values of the other) at the same head count.
      {OpKind::kAttention,
       "attention",
       "self",
       {{"b", 2}, {"h", 16}, {"nq", 768}, {"nk", 768}, {"d", 64}, {"packed", 1}},
       {{"b", 1}, {"h", 2}, {"nq", 64}, {"nk", 64}, {"d", 64}, {"packed", 1}}},
      {OpKind::kAttention,
       "attention",
       "cross",
       {{"b", 2}, {"h", 16}, {"nq", 768}, {"nk", 768}, {"d", 64}, {"packed", 0}},
       {{"b", 1}, {"h", 2}, {"nq", 64}, {"nk", 48}, {"d", 64}, {"packed", 0}}},
      // DPT head, per view (spec §5.1 table).
      conv("dpt_head2_3x3", 128, 128, 384, 512, 3, 1, 1),
      conv("dpt_head0_3x3", 256, 128, 192, 256, 3, 1, 1),
      conv("refinenet1_rcu_3x3", 256, 256, 192, 256, 3, 1, 1),
      conv("layer1_rn_3x3", 96, 256, 96, 128, 3, 1, 1),
      conv("act3_3x3_s2", 768, 768, 24, 32, 3, 2, 1),
      conv("refinenet1_out_1x1", 256, 256, 192, 256, 1, 1, 0),
      {OpKind::kLayerNorm, "layer_norm", "enc", {{"rows", 1536}, {"cols", 1024}}, {{"rows", 96}, {"cols", 64}}},
      {OpKind::kLayerNorm, "layer_norm", "dec", {{"rows", 768}, {"cols", 768}}, {{"rows", 48}, {"cols", 48}}},
      // The `large` cases are not MASt3R shapes: 128 MiB to 576 MiB per operand, so that a GPU's figure
      // shows what the kernel reaches when HBM bandwidth bounds it rather than launch and tail
      // latency (the MASt3R shapes move 1.5 to 24 MiB: a few µs of a few-µs dispatch).
      {OpKind::kLayerNorm, "layer_norm", "large", {{"rows", 65536}, {"cols", 1024}}, {{"rows", 1024}, {"cols", 64}}},
      // What croco's attention softmax sees: 2 images × 16 heads × 768 query rows of 768 scores.
      {OpKind::kSoftmax, "softmax", "attn_scores", {{"rows", 24576}, {"cols", 768}}, {{"rows", 256}, {"cols", 64}}},
      {OpKind::kSoftmax, "softmax", "large", {{"rows", 196608}, {"cols", 768}}, {{"rows", 2048}, {"cols", 64}}},
      {OpKind::kSub, "sub", "enc_tokens", {{"numel", 1536 * 1024}}, {{"numel", 6144}}},
      {OpKind::kSub, "sub", "dpt_map", {{"numel", 256 * 192 * 256}}, {{"numel", 49152}}},
      {OpKind::kSub, "sub", "large", {{"numel", int64_t{64} << 20}}, {{"numel", int64_t{1} << 18}}},
      {OpKind::kCast, "cast", "enc_tokens", {{"numel", 1536 * 1024}}, {{"numel", 6144}}},
      {OpKind::kCast, "cast", "head_fc2_weight", {{"numel", 6400 * 7168}}, {{"numel", 179200}}},
      {OpKind::kCast, "cast", "large", {{"numel", int64_t{64} << 20}}, {{"numel", int64_t{1} << 18}}},
      {OpKind::kTranspose,
       "transpose",
       "enc_tokens_to_nchw",
       {{"b", 2}, {"n", 768}, {"c", 1024}},
       {{"b", 2}, {"n", 48}, {"c", 64}}},
      {OpKind::kTranspose,
       "transpose",
       "head_mlp_out",
       {{"b", 1}, {"n", 768}, {"c", 6400}},
       {{"b", 1}, {"n", 48}, {"c", 400}}},
      {OpKind::kUpsample,
       "upsample",
       "refinenet1",
       {{"b", 1}, {"c", 256}, {"h", 96}, {"w", 128}},
       {{"b", 1}, {"c", 32}, {"h", 12}, {"w", 16}}},
      {OpKind::kUpsample,
       "upsample",
       "dpt_head1",
       {{"b", 1}, {"c", 128}, {"h", 192}, {"w", 256}},
       {{"b", 1}, {"c", 16}, {"h", 24}, {"w", 32}}},
  };
}

int64_t conv_out(int64_t in, int64_t k, int64_t stride, int64_t pad) {
  return (in + 2 * pad - k) / stride + 1;
}

}  // namespace

int64_t OpCase::param(std::string_view key) const {
  for (const auto& [k, v] : params) {
    if (k == key) return v;
  }
  return 0;
}

bool OpCase::compute_bound() const {
  return kind == OpKind::kLinear || kind == OpKind::kMatmul || kind == OpKind::kAttention || kind == OpKind::kConv2d;
}

double OpCase::flops() const {
  auto p = [this](std::string_view k) { return static_cast<double>(param(k)); };
  switch (kind) {
    case OpKind::kLinear:
    case OpKind::kMatmul:
      return 2 * p("m") * p("k") * p("n");
    case OpKind::kAttention:  // q·kᵀ and p·v; the softmax is not counted
      return 4 * p("b") * p("h") * p("nq") * p("nk") * p("d");
    case OpKind::kConv2d: {
      const int64_t k = param("k"), s = param("stride"), pad = param("pad");
      const double pixels = static_cast<double>(conv_out(param("h"), k, s, pad) * conv_out(param("w"), k, s, pad));
      return 2 * p("b") * p("cout") * pixels * p("cin") * p("k") * p("k");
    }
    default:
      return 0;
  }
}

double OpCase::bytes() const {
  const double es = static_cast<double>(gpu::dtype_size(dtype));
  auto p = [this](std::string_view k) { return static_cast<double>(param(k)); };
  switch (kind) {
    case OpKind::kLayerNorm:
      return (2 * p("rows") * p("cols") + 2 * p("cols")) * es;
    case OpKind::kSoftmax:
      return 2 * p("rows") * p("cols") * es;
    case OpKind::kSub:
      return 3 * p("numel") * es;
    case OpKind::kCast:  // 4 bytes read + 2 written, or 2 read + 4 written
      return 6 * p("numel");
    case OpKind::kTranspose:
      return 2 * p("b") * p("n") * p("c") * es;
    case OpKind::kUpsample:  // in, and out at twice the height and width
      return 5 * p("b") * p("c") * p("h") * p("w") * es;
    default:
      return 0;
  }
}

std::string OpCase::dtype_label() const {
  if (kind == OpKind::kCast) return "f32<->f16";
  return gpu::dtype_name(dtype);
}

std::string OpCase::name() const {
  return op + "/" + shape + "/" + dtype_label();
}

std::vector<OpCase> op_cases(bool full_shapes) {
  std::vector<OpCase> out;
  for (const ShapeRow& r : shape_rows()) {
    const Params& params = full_shapes ? r.full : r.small;
    if (r.kind == OpKind::kCast) {
      out.push_back({r.kind, r.op, r.shape, DType::kF32, params});
      continue;
    }
    for (DType d : {DType::kF32, DType::kF16}) out.push_back({r.kind, r.op, r.shape, d, params});
  }
  return out;
}

uint64_t ring_slot_bytes(const OpCase& c) {
  const uint64_t es = gpu::dtype_size(c.dtype);
  auto p = [&c](std::string_view k) { return static_cast<uint64_t>(c.param(k)); };
  switch (c.kind) {
    case OpKind::kLayerNorm:
    case OpKind::kSoftmax:
      return p("rows") * p("cols") * es;
    case OpKind::kSub:
      return p("numel") * es;
    case OpKind::kCast:  // the mean of an f32 and an f16 slot; the ring has as many of each
      return p("numel") * 3;
    case OpKind::kTranspose:
      return p("b") * p("n") * p("c") * es;
    case OpKind::kUpsample:
      return 4 * p("b") * p("c") * p("h") * p("w") * es;
    default:
      return 0;
  }
}

CasePlan plan_case(const OpCase& c, const PlanTargets& targets) {
  constexpr int kMaxRing = 256, kMaxComputeOps = 64, kMaxMemoryOps = 1024;
  CasePlan plan;
  if (c.compute_bound()) {
    const double n = std::ceil(targets.flops_per_replay / std::max(c.flops(), 1.0));
    plan.ops_per_replay = static_cast<int>(std::clamp(n, 1.0, static_cast<double>(kMaxComputeOps)));
    return plan;
  }
  const int min_ring = c.kind == OpKind::kSub ? 3 : 2;                        // kSub reads two earlier slots
  const bool even = c.kind == OpKind::kCast || c.kind == OpKind::kTranspose;  // slots alternate
  const uint64_t slot = std::max<uint64_t>(ring_slot_bytes(c), 1);
  int ring = static_cast<int>(std::clamp<uint64_t>((targets.cold_bytes + slot - 1) / slot, min_ring, kMaxRing));
  if (even && ring % 2 != 0) ++ring;
  plan.ring = ring;
  const double rounds = std::ceil(targets.bytes_per_replay / (ring * std::max(c.bytes(), 1.0)));
  const int max_rounds = std::max(1, kMaxMemoryOps / ring);
  plan.ops_per_replay = ring * static_cast<int>(std::clamp(rounds, 1.0, static_cast<double>(max_rounds)));
  return plan;
}

}  // namespace recon::bench
