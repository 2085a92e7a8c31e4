#include "gpu/models/mast3r/mast3r_forward.h"

#include "gpu/ops/cast.h"

namespace recon::gpu {

std::string ForwardShape::to_string() const {
  return std::to_string(batch) + "x[" + std::to_string(view1.width) + "x" + std::to_string(view1.height) + ", " +
         std::to_string(view2.width) + "x" + std::to_string(view2.height) + (view2_points ? "" : " descriptors") + "]";
}

Mast3rForward::Mast3rForward(Runtime& rt, const Mast3rWeights& w, const ForwardShape& s)
    : rt_(rt), w_(w), shape_(s), graph_(std::make_unique<Graph>(rt)), output_graph_(std::make_unique<Graph>(rt)) {}

Result<std::unique_ptr<Mast3rForward>> Mast3rForward::build(Runtime& rt, const Mast3rWeights& weights,
                                                            const ForwardShape& shape) {
  const int64_t p = weights.config().patch_size;
  for (const ViewSize& v : {shape.view1, shape.view2}) {
    if (v.height <= 0 || v.width <= 0 || v.height % p != 0 || v.width % p != 0) {
      return invalid_argument("view size " + std::to_string(v.width) + "x" + std::to_string(v.height) +
                              " is not a positive multiple of the patch size " + std::to_string(p));
    }
  }
  if (shape.batch < 1 || shape.batch > 64) return invalid_argument("batch must be 1..64");
  std::unique_ptr<Mast3rForward> f(new Mast3rForward(rt, weights, shape));
  Status s = f->build_all();
  if (!s.is_ok()) return s.with_context("building the MASt3R graph for " + shape.to_string());
  return f;
}

Result<Tensor> Mast3rForward::alloc(DType dtype, const Shape& shape, const std::string& tap_name) {
  RECON_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(rt_, dtype, shape));
  activation_bytes_ += t.bytes();
  keep_.push_back(t);
  if (!tap_name.empty()) taps_.emplace_back(tap_name, t);
  return t;
}

Result<Tensor> Mast3rForward::as_dtype(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  RECON_ASSIGN_OR_RETURN(Tensor converted, alloc(dtype, t.shape()));
  RECON_RETURN_IF_ERROR(ops::cast(*graph_, t, converted));
  return converted;
}

const Tensor* Mast3rForward::tap(const std::string& name) const {
  for (const auto& [n, t] : taps_) {
    if (n == name) return &t;
  }
  return nullptr;
}

Status Mast3rForward::build_all() {
  const int64_t p = w_.config().patch_size, B = shape_.batch, C = w_.config().enc_embed_dim;
  const ViewSize sizes[2] = {shape_.view1, shape_.view2};
  for (int v = 0; v < 2; ++v) {
    View& view = views_[v];
    view.h = sizes[v].height / p;
    view.w = sizes[v].width / p;
    view.n = view.h * view.w;
    RECON_ASSIGN_OR_RETURN(view.enc_in, alloc(w_.trunk_dtype(), {B, view.n, C}, v == 0 ? "enc_out_1" : "enc_out_2"));
  }
  graph_->timestamp("decoder");
  RECON_RETURN_IF_ERROR(build_decoder());
  // One stage for both heads: marks are fences to the graph's ordering (gpu/graph_schedule.h),
  // and the two heads share no data, so their dispatches of equal depth run side by side.
  graph_->timestamp("heads");
  RECON_RETURN_IF_ERROR(build_heads(0));
  RECON_RETURN_IF_ERROR(build_heads(1));
  add_output_slots();
  output_graph_->timestamp("postprocess");
  RECON_RETURN_IF_ERROR(build_postprocess(0));
  RECON_RETURN_IF_ERROR(build_postprocess(1));
  return Status::ok();
}

Status Mast3rForward::bind_outputs(const Mast3rOutputs& targets) {
  const auto tensors = targets.list();
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!output_slots_[i]) continue;
    Status s = output_graph_->bind(*output_slots_[i], *tensors[i]);
    if (!s.is_ok()) return s.with_context(std::string("output ") + Mast3rOutputs::kNames[i]);
  }
  return Status::ok();
}

}  // namespace recon::gpu
