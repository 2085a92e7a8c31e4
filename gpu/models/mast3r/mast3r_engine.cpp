#include "gpu/models/mast3r/mast3r_engine.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <tuple>

#include "gpu/models/mast3r/image_packing.h"

namespace recon::gpu {

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

size_t row_stride(const ImageU8View& img) {
  return img.stride ? img.stride : static_cast<size_t>(img.width) * 3;
}

// `which` names the image in errors ("image 3", "view 2 image 0").
Status validate_image(const ImageU8View& img, const std::string& name, int64_t patch) {
  const std::string which = name + ": ";
  if (img.height <= 0 || img.width <= 0 || img.height % patch != 0 || img.width % patch != 0) {
    return invalid_argument(which + "size " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                            " is not a positive multiple of the patch size " + std::to_string(patch));
  }
  if (img.device != nullptr) {
    const Shape want{img.height, img.width, 3};
    if (!img.device->defined() || img.device->dtype() != DType::kU8 || img.device->shape() != want) {
      return invalid_argument(which + "device source is " +
                              (img.device->defined()
                                   ? std::string(dtype_name(img.device->dtype())) + shape_string(img.device->shape())
                                   : std::string("undefined")) +
                              ", expected " + dtype_name(DType::kU8) + shape_string(want));
    }
    return Status::ok();
  }
  if (img.data == nullptr) return invalid_argument(which + "no data and no device source");
  if (img.stride != 0 && img.stride < static_cast<size_t>(img.width) * 3) {
    return invalid_argument(which + "stride smaller than width × 3");
  }
  return Status::ok();
}

// Each image checked by validate_image (named "image i"), and its size, in order.
Result<std::vector<ViewSize>> checked_sizes(std::span<const ImageU8View> images, int64_t patch) {
  std::vector<ViewSize> sizes;
  for (size_t i = 0; i < images.size(); ++i) {
    RECON_RETURN_IF_ERROR(validate_image(images[i], "image " + std::to_string(i), patch));
    sizes.push_back({images[i].height, images[i].width});
  }
  return sizes;
}

// Every pair names two of the `count` images; `images` says which set in the error.
Status check_pairs(std::span<const ImagePair> pairs, int32_t count, const std::string& images) {
  for (const ImagePair& p : pairs) {
    if (p.first < 0 || p.first >= count || p.second < 0 || p.second >= count) {
      return invalid_argument("pair (" + std::to_string(p.first) + ", " + std::to_string(p.second) +
                              ") names an image outside " + images);
    }
  }
  return Status::ok();
}

bool same_source(const ImageU8View& a, const ImageU8View& b) {
  return a.device == b.device && a.height == b.height && a.width == b.width &&
         (a.device != nullptr || (a.data == b.data && row_stride(a) == row_stride(b)));
}

// Adds `times` to `sum` label by label (labels in first-seen order), scaled by `scale`.
void accumulate(StageTimes& sum, const StageTimes& times, double scale = 1.0) {
  for (const auto& stage : times) {  // not a structured binding: clang 14 cannot capture one
    auto it = std::find_if(sum.begin(), sum.end(), [&](const auto& s) { return s.first == stage.first; });
    if (it == sum.end()) {
      sum.emplace_back(stage.first, stage.second * scale);
    } else {
      it->second += stage.second * scale;
    }
  }
}

Mast3rResult make_result(PairStep& step, StageTimes stages, double wall_ms) {
  Mast3rResult r;
  r.shape = step.forward->shape();
  r.tensors = std::move(step.outputs);
  accumulate(stages, step.timings);
  r.stage_ms = std::move(stages);
  for (const auto& [_, ms] : r.stage_ms) r.gpu_ms += ms;
  r.wall_ms = wall_ms;
  return r;
}

}  // namespace

bool Mast3rEngine::ShapeLess::operator()(const ForwardShape& a, const ForwardShape& b) const {
  return std::tie(a.batch, a.view1.height, a.view1.width, a.view2.height, a.view2.width, a.view2_points) <
         std::tie(b.batch, b.view1.height, b.view1.width, b.view2.height, b.view2.width, b.view2_points);
}

Result<std::unique_ptr<Mast3rEngine>> Mast3rEngine::load(Runtime& rt, const std::string& path, Precision precision) {
  std::unique_ptr<Mast3rEngine> e(new Mast3rEngine(rt));
  RECON_ASSIGN_OR_RETURN(e->weights_, Mast3rWeights::load(rt, path, precision));
  return e;
}

Result<Mast3rForward*> Mast3rEngine::forward_for(const ForwardShape& shape) {
  auto it = forwards_.find(shape);
  if (it != forwards_.end()) return it->second.get();
  RECON_ASSIGN_OR_RETURN(auto f, Mast3rForward::build(rt_, *weights_, shape));
  Mast3rForward* raw = f.get();
  forwards_.emplace(shape, std::move(f));
  return raw;
}

Result<Mast3rEncoder*> Mast3rEngine::encoder_for(int64_t batch, ViewSize size) {
  const auto key = std::make_pair(batch, size);
  auto it = encoders_.find(key);
  if (it != encoders_.end()) return it->second.get();
  RECON_ASSIGN_OR_RETURN(auto e, Mast3rEncoder::build(rt_, *weights_, batch, size));
  Mast3rEncoder* raw = e.get();
  encoders_.emplace(key, std::move(e));
  return raw;
}

const Tensor* Mast3rEngine::tap(const ForwardShape& shape, const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = forwards_.find(shape);
  if (it == forwards_.end()) return nullptr;
  if (const Tensor* t = it->second->tap(name)) return t;
  auto inputs = input_taps_.find(shape);
  if (inputs == input_taps_.end()) return nullptr;
  if (name == "input_1") return &inputs->second[0];
  if (name == "input_2") return &inputs->second[1];
  return nullptr;
}

uint64_t Mast3rEngine::images_encoded() const {
  std::lock_guard lock(mutex_);
  return images_encoded_;
}

Result<double> Mast3rEngine::run(std::span<const ImageSource> images, std::vector<EncodeStep>& encodes,
                                 std::vector<PairStep>& pairs) {
  Mast3rBatchRunner runner(rt_);
  RECON_RETURN_IF_ERROR(runner.run(images, encodes, pairs));
  for (const EncodeStep& e : encodes) images_encoded_ += e.images.size();
  return runner.gpu_span_ms();
}

Status Mast3rEngine::warmup(const ForwardShape& shape) {
  if (shape.batch < 1 || shape.batch > 64) return invalid_argument("batch must be 1..64");
  // Mid-grey images: any content works, this only builds pipelines and records the graphs.
  std::array<std::vector<uint8_t>, 2> pixels;
  std::array<std::vector<ImageU8View>, 2> views;
  const ViewSize sizes[2] = {shape.view1, shape.view2};
  for (int v = 0; v < 2; ++v) {
    if (sizes[v].height <= 0 || sizes[v].width <= 0) return invalid_argument("warm-up size must be positive");
    pixels[v].assign(static_cast<size_t>(sizes[v].height * sizes[v].width * 3), 128);
    views[v].assign(shape.batch, ImageU8View{pixels[v].data(), sizes[v].height, sizes[v].width, 0});
  }
  RECON_RETURN_IF_ERROR(infer(views[0], views[1]).status());
  if (shape.batch != 1 || !(shape.view1 == shape.view2)) return Status::ok();
  std::lock_guard lock(mutex_);
  for (int64_t b = 1; b <= batch_options_.encode_chunk; ++b)
    RECON_RETURN_IF_ERROR(encoder_for(b, shape.view1).status());
  RECON_RETURN_IF_ERROR(forward_for(ForwardShape{batch_options_.pair_batch, shape.view1, shape.view1}).status());
  return forward_for(ForwardShape{batch_options_.pair_batch, shape.view1, shape.view1, /*view2_points=*/false})
      .status();
}

Result<std::vector<ImageSource>> Mast3rEngine::place_images(std::span<const ImageU8View> images, PoolBuffer& staging) {
  std::vector<ImageSource> sources(images.size());
  size_t host_bytes = 0;
  for (const ImageU8View& img : images) {
    if (img.device == nullptr) host_bytes += static_cast<size_t>(img.height * img.width * 3);
  }
  if (host_bytes > 0) {
    // Pack the host images contiguously ([H, W, 3] each) into mapped staging memory.
    RECON_ASSIGN_OR_RETURN(staging, rt_.pool(MemoryRole::kStaging).acquire(host_bytes));
    auto* packed = static_cast<uint8_t*>(staging.mapped());
    std::vector<ImagePackJob> jobs;
    size_t offset = 0;
    for (size_t i = 0; i < images.size(); ++i) {
      const ImageU8View& img = images[i];
      if (img.device != nullptr) continue;
      sources[i] = {staging.buffer(), staging.offset() + offset};
      jobs.push_back({img.data, img.height, img.width, row_stride(img), packed + offset});
      offset += static_cast<size_t>(img.height * img.width * 3);
    }
    pack_images(jobs);
  }
  for (size_t i = 0; i < images.size(); ++i) {
    if (images[i].device != nullptr) sources[i] = {images[i].device->buffer(), images[i].device->offset()};
  }
  return sources;
}

Result<Mast3rResult> Mast3rEngine::infer(std::span<const ImageU8View> view1, std::span<const ImageU8View> view2) {
  if (view1.empty() || view1.size() != view2.size()) {
    return invalid_argument("infer needs the same non-zero number of view-1 and view-2 images");
  }
  const int64_t patch = config().patch_size;
  for (int v = 0; v < 2; ++v) {
    const auto views = v == 0 ? view1 : view2;
    for (size_t i = 0; i < views.size(); ++i) {
      RECON_RETURN_IF_ERROR(
          validate_image(views[i], "view " + std::to_string(v + 1) + " image " + std::to_string(i), patch));
      if (views[i].height != views[0].height || views[i].width != views[0].width) {
        return invalid_argument("images of one view must share a size in a batch");
      }
    }
  }
  std::lock_guard lock(mutex_);
  return infer_locked(view1, view2);
}

Result<Mast3rResult> Mast3rEngine::infer_locked(std::span<const ImageU8View> view1,
                                                std::span<const ImageU8View> view2) {
  const auto start = std::chrono::steady_clock::now();
  const auto B = static_cast<int64_t>(view1.size());
  const ViewSize s1{view1[0].height, view1[0].width}, s2{view2[0].height, view2[0].width};
  const ForwardShape shape{B, s1, s2};
  RECON_ASSIGN_OR_RETURN(Mast3rForward * f, forward_for(shape));

  // Images 0..B-1 are view 1, B..2B-1 view 2. Views of one size are encoded as one batch of 2B, as
  // the reference does.
  std::vector<ImageU8View> images(view1.begin(), view1.end());
  images.insert(images.end(), view2.begin(), view2.end());
  PoolBuffer staging;
  RECON_ASSIGN_OR_RETURN(auto sources, place_images(images, staging));
  const bool together = s1 == s2;
  std::vector<ViewSize> sizes(static_cast<size_t>(B), s1);
  sizes.insert(sizes.end(), static_cast<size_t>(B), s2);
  std::vector<std::vector<int>> chunks(together ? 1 : 2);
  for (size_t s = 0; s < chunks.size(); ++s) {
    chunks[s].resize(together ? 2 * B : B);
    std::iota(chunks[s].begin(), chunks[s].end(), static_cast<int>(s * B));
  }
  RECON_ASSIGN_OR_RETURN(std::vector<EncodeStep> encodes, encode_steps(chunks, sizes));
  std::vector<PairStep> pairs(1);
  pairs[0].forward = f;
  pairs[0].ready_after = static_cast<int>(encodes.size()) - 1;
  for (int64_t b = 0; b < B; ++b) {
    pairs[0].rows.push_back({TokenRow{0, b}, together ? TokenRow{0, B + b} : TokenRow{1, b}});
  }
  RECON_ASSIGN_OR_RETURN(const double span_ms, run(sources, encodes, pairs));
  std::array<Tensor, 2> inputs;
  for (int v = 0; v < 2; ++v) {
    const Mast3rEncoder& e = *encodes[together ? 0 : v].encoder;
    const int64_t first = together ? v * B : 0;
    RECON_ASSIGN_OR_RETURN(inputs[v], e.tap("input")->slice_rows(first, first + B));
  }
  input_taps_[shape] = inputs;

  StageTimes stages;
  for (const EncodeStep& e : encodes) accumulate(stages, e.timings);
  Mast3rResult r = make_result(pairs[0], std::move(stages), ms_since(start));
  r.gpu_span_ms = span_ms;
  return r;
}

Result<std::vector<Mast3rResult>> Mast3rEngine::infer_batch(std::span<const ImageU8View> images,
                                                            std::span<const ImagePair> pairs) {
  if (images.empty() || pairs.empty()) return invalid_argument("infer_batch needs at least one image and one pair");
  RECON_RETURN_IF_ERROR(
      check_pairs(pairs, static_cast<int32_t>(images.size()), "the batch of " + std::to_string(images.size())));
  RECON_ASSIGN_OR_RETURN(const std::vector<ViewSize> sizes, checked_sizes(images, config().patch_size));
  std::vector<int> source_of;
  for (size_t i = 0; i < images.size(); ++i) {
    size_t j = 0;
    while (!same_source(images[j], images[i])) ++j;
    source_of.push_back(static_cast<int>(j));
  }
  std::lock_guard lock(mutex_);
  const BatchPlan plan = plan_batch(sizes, source_of, pairs, static_cast<size_t>(batch_options_.encode_chunk));

  std::vector<ImageU8View> distinct;
  std::vector<ViewSize> distinct_sizes;
  for (int i : plan.images) {
    distinct.push_back(images[i]);
    distinct_sizes.push_back(sizes[i]);
  }
  PoolBuffer staging;
  RECON_ASSIGN_OR_RETURN(auto sources, place_images(distinct, staging));
  RECON_ASSIGN_OR_RETURN(std::vector<EncodeStep> encodes, encode_steps(plan.chunks, distinct_sizes));
  std::vector<PlannedPair> planned(pairs.size());
  for (size_t k = 0; k < pairs.size(); ++k) {
    const auto [a, b] = plan.pair_images[k];
    planned[k] = {
        ForwardShape{1, distinct_sizes[a], distinct_sizes[b]}, {plan.row_of[a], plan.row_of[b]}, plan.ready_after[k]};
  }
  RECON_ASSIGN_OR_RETURN(PairSteps steps, pair_steps(planned, plan.order));
  RECON_ASSIGN_OR_RETURN(const double span_ms, run(sources, encodes, steps.steps));
  // Each image's encoder time, split evenly over the rows of its run and the pair views that read it.
  return pair_results(steps, planned, span_ms, [&](size_t k, StageTimes& stage_ms) {
    for (int d : plan.pair_images[k]) {
      const EncodeStep& e = encodes[plan.row_of[d].step];
      accumulate(stage_ms, e.timings, 1.0 / (static_cast<double>(e.images.size()) * plan.uses[d]));
    }
  });
}

Result<std::vector<EncodeStep>> Mast3rEngine::encode_steps(std::span<const std::vector<int>> chunks,
                                                           std::span<const ViewSize> sizes) {
  std::vector<EncodeStep> encodes(chunks.size());
  for (size_t s = 0; s < chunks.size(); ++s) {
    RECON_ASSIGN_OR_RETURN(encodes[s].encoder,
                           encoder_for(static_cast<int64_t>(chunks[s].size()), sizes[chunks[s].front()]));
    encodes[s].images = chunks[s];
    RECON_ASSIGN_OR_RETURN(encodes[s].tokens,
                           Tensor::empty(rt_, weights_->trunk_dtype(), encodes[s].encoder->output().shape()));
  }
  return encodes;
}

Result<Mast3rEngine::PairSteps> Mast3rEngine::pair_steps(std::span<const PlannedPair> planned,
                                                         std::span<const size_t> order) {
  const auto pair_batch = static_cast<size_t>(batch_options_.pair_batch);
  PairSteps out;
  for (size_t i = 0; i < order.size();) {
    const ForwardShape& one = planned[order[i]].shape;
    size_t j = i + 1;
    while (j < order.size() && j - i < pair_batch && planned[order[j]].shape == one) ++j;
    const size_t group = j - i == pair_batch ? j - i : 1;
    ForwardShape shape = one;
    shape.batch = static_cast<int64_t>(group);
    PairStep& step = out.steps.emplace_back();
    RECON_ASSIGN_OR_RETURN(step.forward, forward_for(shape));
    std::vector<size_t>& rows = out.members.emplace_back();
    for (size_t r = i; r < i + group; ++r) {
      const size_t k = order[r];
      step.rows.push_back(planned[k].rows);
      step.ready_after = std::max(step.ready_after, planned[k].ready_after);
      rows.push_back(k);
    }
    i += group;
  }
  return out;
}

Result<std::vector<Mast3rResult>> Mast3rEngine::pair_results(
    const PairSteps& steps, std::span<const PlannedPair> planned, double span_ms,
    const std::function<void(size_t k, StageTimes& stage_ms)>& encoder_share) {
  std::vector<Mast3rResult> results(planned.size());
  for (size_t s = 0; s < steps.steps.size(); ++s) {
    const PairStep& step = steps.steps[s];
    const auto batch = static_cast<int64_t>(steps.members[s].size());
    for (int64_t row = 0; row < batch; ++row) {
      const size_t k = steps.members[s][row];
      Mast3rResult& r = results[k];
      r.shape = planned[k].shape;
      const auto sources = step.outputs.list();
      const auto targets = r.tensors.list();
      for (size_t t = 0; t < sources.size(); ++t) {
        if (!sources[t]->defined()) continue;  // view 2's points where the shape has none
        RECON_ASSIGN_OR_RETURN(*targets[t], sources[t]->slice_rows(row, row + 1));
      }
      encoder_share(k, r.stage_ms);
      // The step's own time, split evenly over its rows.
      accumulate(r.stage_ms, step.timings, 1.0 / static_cast<double>(batch));
      for (const auto& [_, ms] : r.stage_ms) r.gpu_ms += ms;
      r.wall_ms = step.done_ms;
      r.gpu_span_ms = span_ms;
    }
  }
  return results;
}

Result<EncodedImages> Mast3rEngine::encode_images(std::span<const ImageU8View> images) {
  if (images.empty()) return invalid_argument("encode_images needs at least one image");
  RECON_ASSIGN_OR_RETURN(std::vector<ViewSize> sizes, checked_sizes(images, config().patch_size));
  std::lock_guard lock(mutex_);
  const std::vector<std::vector<int>> chunks = encoder_chunks(sizes, static_cast<size_t>(batch_options_.encode_chunk));
  PoolBuffer staging;
  RECON_ASSIGN_OR_RETURN(auto sources, place_images(images, staging));
  RECON_ASSIGN_OR_RETURN(std::vector<EncodeStep> encodes, encode_steps(chunks, sizes));
  std::vector<PairStep> none;
  RECON_RETURN_IF_ERROR(run(sources, encodes, none).status());

  EncodedImages out;
  out.engine_ = this;
  out.sizes_ = std::move(sizes);
  out.row_of_.resize(images.size());
  for (size_t s = 0; s < encodes.size(); ++s) {
    for (size_t r = 0; r < encodes[s].images.size(); ++r) {
      out.row_of_[encodes[s].images[r]] = {static_cast<int>(s), static_cast<int64_t>(r)};
    }
    EncodeStep& done = out.runs_.emplace_back();
    done.tokens = std::move(encodes[s].tokens);
    done.timings = std::move(encodes[s].timings);
  }
  return out;
}

Result<std::vector<Mast3rResult>> Mast3rEngine::infer_encoded(const EncodedImages& encoded,
                                                              std::span<const ImagePair> pairs,
                                                              const EncodedPairOptions& options) {
  if (pairs.empty()) return invalid_argument("infer_encoded needs at least one pair");
  if (encoded.size() > 0 && encoded.engine_ != this) {
    return invalid_argument("infer_encoded reads images another engine encoded");
  }
  RECON_RETURN_IF_ERROR(
      check_pairs(pairs, static_cast<int32_t>(encoded.size()), "the " + std::to_string(encoded.size()) + " encoded"));
  const int ready = static_cast<int>(encoded.runs_.size()) - 1;  // every run is done: any order
  std::vector<PlannedPair> planned;
  for (const ImagePair& p : pairs) {
    planned.push_back({ForwardShape{1, encoded.sizes_[p.first], encoded.sizes_[p.second], options.view2_points},
                       {encoded.row_of_[p.first], encoded.row_of_[p.second]},
                       ready});
  }
  std::vector<size_t> order(pairs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::lock_guard lock(mutex_);
  RECON_ASSIGN_OR_RETURN(PairSteps steps, pair_steps(planned, order));
  std::vector<EncodeStep> done = encoded.runs_;  // tensor handles: nothing runs, the pair steps read them
  RECON_ASSIGN_OR_RETURN(const double span_ms, run({}, done, steps.steps));
  return pair_results(steps, planned, span_ms, [](size_t, StageTimes&) {});
}

Status EncodedImages::append(EncodedImages other) {
  if (engine_ != nullptr && other.engine_ != engine_)
    return invalid_argument("appending images another engine encoded");
  engine_ = other.engine_;
  const int offset = static_cast<int>(runs_.size());
  for (TokenRow& row : other.row_of_) row.step += offset;
  sizes_.insert(sizes_.end(), other.sizes_.begin(), other.sizes_.end());
  row_of_.insert(row_of_.end(), other.row_of_.begin(), other.row_of_.end());
  for (EncodeStep& run : other.runs_) runs_.push_back(std::move(run));
  return Status::ok();
}

std::vector<EncodedImages::Run> EncodedImages::runs() const {
  std::vector<Run> out(runs_.size());
  for (size_t s = 0; s < runs_.size(); ++s) {
    out[s].tokens = &runs_[s].tokens;
    out[s].images.resize(static_cast<size_t>(runs_[s].tokens.shape().at(0)));
  }
  for (size_t i = 0; i < row_of_.size(); ++i) out[row_of_[i].step].images[row_of_[i].row] = i;
  return out;
}

void Mast3rEngine::set_batch_options(const Mast3rBatchOptions& options) {
  std::lock_guard lock(mutex_);
  batch_options_.encode_chunk = std::clamp<int64_t>(options.encode_chunk, 1, 64);
  batch_options_.pair_batch = std::clamp<int64_t>(options.pair_batch, 1, 64);
}

Mast3rBatchOptions Mast3rEngine::batch_options() const {
  std::lock_guard lock(mutex_);
  return batch_options_;
}

Result<Tensor> Mast3rEngine::encode(std::span<const ImageU8View> images) {
  if (images.empty()) return invalid_argument("encode needs at least one image");
  RECON_ASSIGN_OR_RETURN(const std::vector<ViewSize> sizes, checked_sizes(images, config().patch_size));
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!(sizes[i] == sizes[0])) {
      return invalid_argument("encode needs images of one size; image " + std::to_string(i) + " differs from image 0");
    }
  }
  std::lock_guard lock(mutex_);
  PoolBuffer staging;
  RECON_ASSIGN_OR_RETURN(auto sources, place_images(images, staging));
  std::vector<int> all(images.size());
  std::iota(all.begin(), all.end(), 0);
  RECON_ASSIGN_OR_RETURN(std::vector<EncodeStep> encodes, encode_steps(std::span(&all, 1), sizes));
  std::vector<PairStep> none;
  RECON_RETURN_IF_ERROR(run(sources, encodes, none).status());
  return encodes[0].tokens;
}

}  // namespace recon::gpu
