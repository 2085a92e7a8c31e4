// recon.Engine: see py_engine.h.
#include "py_engine.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/models/mast3r/mast3r_engine.h"
#include "gpu/models/match/fast_matcher_cache.h"
#include "gpu/models/retrieval/retrieval.h"
#include "gpu/runtime.h"
#include "py_images.h"
#include "tools/io/official_resize.h"

namespace recon::python {
namespace {

// A failed engine call as recon.Error (code, message, source "engine").
[[noreturn]] void raise(const Status& status) {
  py::object type = py::module_::import("recon").attr("Error");
  py::object error = type(status_code_name(status.code()), status.message(), "engine");
  PyErr_SetObject(type.ptr(), error.ptr());
  throw py::error_already_set();
}

template <class T>
T value_or_raise(Result<T> result) {
  if (!result.is_ok()) raise(result.status());
  return std::move(result).value();
}

// The runtime and the engine, shared by the Engine and every result it made (their tensors live in
// the runtime's pools, so it must outlive them).
struct EngineCore {
  std::unique_ptr<gpu::Runtime> runtime;
  std::unique_ptr<gpu::Mast3rEngine> engine;
  std::mutex match_mutex;  // guards matchers (and the matchers' runs)
  std::unique_ptr<gpu::FastMatcherCache> matchers;
  std::mutex retrieval_mutex;                      // guards the retrieval head's runs
  std::unique_ptr<gpu::RetrievalModel> retrieval;  // null without one
};

// A device tensor (f32, f16 or i32), whole, as a numpy array (the copy happens without the GIL).
py::array to_numpy(gpu::Runtime& rt, const gpu::Tensor& t, size_t drop_leading = 0) {
  std::vector<py::ssize_t> shape(t.shape().begin() + static_cast<std::ptrdiff_t>(drop_leading), t.shape().end());
  py::dtype dtype = t.dtype() == gpu::DType::kF16   ? py::dtype("float16")
                    : t.dtype() == gpu::DType::kI32 ? py::dtype::of<int32_t>()
                                                    : py::dtype::of<float>();
  py::array out(dtype, shape);
  Status copied;
  {
    py::gil_scoped_release unlocked;
    copied = t.download(rt, out.mutable_data(), t.bytes());
  }
  if (!copied.is_ok()) raise(copied);
  return out;
}

// `rows` of `values` (`width` per row) as a numpy array [rows] or [rows, width].
template <typename T>
py::array_t<T> rows_of(const std::vector<T>& values, const std::vector<size_t>& rows, size_t width) {
  std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(rows.size())};
  if (width > 1) shape.push_back(static_cast<py::ssize_t>(width));
  py::array_t<T> out(shape);
  T* to = out.mutable_data();
  for (size_t r : rows) to = std::copy(values.begin() + r * width, values.begin() + (r + 1) * width, to);
  return out;
}

// One pair's outputs, on the GPU until read.
class PyEngineResult {
 public:
  PyEngineResult(std::shared_ptr<EngineCore> core, gpu::Mast3rResult result, std::array<io::PreparedImage, 2> views)
      : core_(std::move(core)), result_(std::move(result)), views_(std::move(views)) {}

  // The tensor without the batch dimension, copied to host memory on first access.
  py::array tensor(const std::string& name) {
    if (auto cached = copies_.find(name); cached != copies_.end()) return cached->second;
    py::array out = to_numpy(*core_->runtime, find(name), 1);
    out.attr("setflags")(py::arg("write") = false);
    copies_.emplace(name, out);
    return out;
  }
  py::list names() const {
    py::list out;
    for (const char* n : gpu::Mast3rOutputs::kNames) out.append(n);
    return out;
  }
  bool contains(const std::string& name) const {
    for (const char* n : gpu::Mast3rOutputs::kNames) {
      if (name == n) return true;
    }
    return false;
  }
  // Per view: the image as the model saw it (prepared), and how it came from the original.
  py::list views() const {
    py::list out;
    for (const io::PreparedImage& v : views_) {
      py::dict d;
      d["width"] = v.image.width;
      d["height"] = v.image.height;
      d["original_width"] = v.original_width;
      d["original_height"] = v.original_height;
      d["resized_width"] = v.resized_width;
      d["resized_height"] = v.resized_height;
      d["crop_x"] = v.crop_x;
      d["crop_y"] = v.crop_y;
      out.append(d);
    }
    return out;
  }
  const gpu::Mast3rOutputs& outputs() const { return result_.tensors; }

  py::dict timings() const {
    py::dict out;
    out["gpu_ms"] = result_.gpu_ms;
    out["wall_ms"] = result_.wall_ms;
    py::dict stages;
    for (const auto& [stage, ms] : result_.stage_ms) stages[py::str(stage)] = ms;
    out["stages_ms"] = stages;
    return out;
  }

 private:
  const gpu::Tensor& find(const std::string& name) const {
    const auto list = result_.tensors.list();
    for (size_t i = 0; i < list.size(); ++i) {
      if (name == gpu::Mast3rOutputs::kNames[i]) return *list[i];
    }
    std::string known;
    for (const char* n : gpu::Mast3rOutputs::kNames) known += (known.empty() ? "" : ", ") + std::string(n);
    throw py::key_error("no output '" + name + "' (outputs: " + known + ")");
  }

  std::shared_ptr<EngineCore> core_;
  gpu::Mast3rResult result_;
  std::array<io::PreparedImage, 2> views_;
  std::map<std::string, py::array> copies_;
};

// The official loader's preparation for the engine's model: long side to `size`, its crop.
io::PreparedImage prepare(py::object image, size_t index, int size, const CropRule& crop) {
  const ImageArray array = as_image(std::move(image), index);
  io::Image rgb;
  rgb.height = static_cast<int>(array.shape(0));
  rgb.width = static_cast<int>(array.shape(1));
  rgb.pixels.assign(array.data(), array.data() + array.size());
  py::gil_scoped_release unlocked;
  auto prepared = io::prepare_official(rgb, size, crop);
  if (!prepared.is_ok()) {
    py::gil_scoped_acquire locked;
    raise(prepared.status().with_context("image " + std::to_string(index)));
  }
  return std::move(prepared).value();
}

gpu::ImageU8View view_of(const io::PreparedImage& p) {
  return gpu::ImageU8View{p.image.pixels.data(), p.image.height, p.image.width, 0};
}

class PyEngine {
 public:
  PyEngine(const std::string& model, const std::string& precision, const std::string& device,
           const std::string& retrieval) {
    const gpu::Precision p = value_or_raise(gpu::parse_precision(precision));
    gpu::RuntimeOptions options;
    options.context.device = device;
    options.context.application_name = "recon-python";
    core_ = std::make_shared<EngineCore>();
    EngineCore& core = *core_;
    const Status loaded = [&]() -> Status {
      py::gil_scoped_release unlocked;
      RECON_ASSIGN_OR_RETURN(core.runtime, gpu::Runtime::create(options));
      RECON_ASSIGN_OR_RETURN(core.engine, gpu::Mast3rEngine::load(*core.runtime, model, p));
      if (retrieval.empty()) return Status::ok();
      auto head = gpu::RetrievalModel::load(*core.runtime, retrieval);
      if (!head.is_ok()) return head.status().with_context("the retrieval head");
      core.retrieval = std::move(head).value();
      return Status::ok();
    }();
    if (!loaded.is_ok()) raise(loaded);
    precision_ = gpu::precision_name(p);
  }

  // The model's own preparation: its long side unless `size` says otherwise (512 for MASt3R, 448 for
  // the released DUNE-MASt3R), its patch size and square rule (Mast3rConfig::image_crop).
  int long_side(std::optional<int> size) const {
    return size.value_or(static_cast<int>(core_->engine->config().image_long_side()));
  }
  CropRule crop() const { return core_->engine->config().image_crop(); }

  void warmup(int64_t width, int64_t height) {
    Status warmed;
    {
      py::gil_scoped_release unlocked;
      gpu::ForwardShape shape;
      shape.view1 = shape.view2 = gpu::ViewSize{height, width};
      warmed = core_->engine->warmup(shape);
    }
    if (!warmed.is_ok()) raise(warmed);
  }

  PyEngineResult infer(py::object a, py::object b, std::optional<int> size) {
    std::array<io::PreparedImage, 2> views{prepare(std::move(a), 0, long_side(size), crop()),
                                           prepare(std::move(b), 1, long_side(size), crop())};
    const gpu::ImageU8View v1 = view_of(views[0]), v2 = view_of(views[1]);
    Result<gpu::Mast3rResult> result = unavailable("not run");
    {
      py::gil_scoped_release unlocked;
      result = core_->engine->infer(std::span(&v1, 1), std::span(&v2, 1));
    }
    return PyEngineResult(core_, value_or_raise(std::move(result)), std::move(views));
  }

  std::vector<PyEngineResult> infer_batch(const py::sequence& images, std::optional<py::sequence> pairs,
                                          std::optional<int> size) {
    std::vector<io::PreparedImage> prepared;
    for (size_t i = 0; i < images.size(); ++i) prepared.push_back(prepare(images[i], i, long_side(size), crop()));
    std::vector<gpu::ImagePair> wanted;
    if (pairs) {
      for (const py::handle pair : *pairs) {
        const auto ij = pair.cast<std::pair<int32_t, int32_t>>();
        wanted.push_back(gpu::ImagePair{ij.first, ij.second});
      }
    } else {
      wanted = gpu::consecutive_pairs(prepared.size());
    }
    // Mast3rEngine::infer_batch refuses pairs outside the images before anything below reads them.
    std::vector<gpu::ImageU8View> views;
    for (const io::PreparedImage& p : prepared) views.push_back(view_of(p));
    Result<std::vector<gpu::Mast3rResult>> results = unavailable("not run");
    {
      py::gil_scoped_release unlocked;
      results = core_->engine->infer_batch(views, wanted);
    }
    std::vector<gpu::Mast3rResult> done = value_or_raise(std::move(results));
    std::vector<PyEngineResult> out;
    for (size_t k = 0; k < done.size(); ++k) {
      out.emplace_back(core_, std::move(done[k]),
                       std::array<io::PreparedImage, 2>{prepared[static_cast<size_t>(wanted[k].first)],
                                                        prepared[static_cast<size_t>(wanted[k].second)]});
    }
    return out;
  }

  // The official fast reciprocal matcher on the pair's descriptors, on the GPU; the same tensors as
  // the daemon's Match (matches_1/2 (x, y), match_conf, pts3d_1/2 of the matches).
  py::dict match(const PyEngineResult& pair, int subsample, uint32_t max_matches, float min_confidence) {
    if (!(min_confidence >= 0)) raise(invalid_argument("min_confidence must be a number >= 0"));
    const gpu::Mast3rOutputs& out = pair.outputs();
    gpu::MatchMaps maps;
    maps.pts3d_a = out.pts3d[0];
    maps.pts3d_b = out.pts3d[1];
    maps.conf_a = out.desc_conf[0];
    maps.conf_b = out.desc_conf[1];
    gpu::FastMatchOptions options;
    options.subsample = subsample;
    Result<gpu::HostMatches> host = unavailable("not run");
    {
      py::gil_scoped_release unlocked;
      std::lock_guard lock(core_->match_mutex);
      host = [&]() -> Result<gpu::HostMatches> {
        RECON_ASSIGN_OR_RETURN(const gpu::MatchShape shape, gpu::MatchShape::of(out.desc[0], out.desc[1], maps));
        if (!core_->matchers) core_->matchers = std::make_unique<gpu::FastMatcherCache>(*core_->runtime);
        RECON_ASSIGN_OR_RETURN(gpu::FastMatcher * matcher, core_->matchers->get(shape, options));
        RECON_ASSIGN_OR_RETURN(const gpu::MatchResult matched, matcher->run(out.desc[0], out.desc[1], maps));
        return matched.to_host(*core_->runtime);
      }();
    }
    const gpu::HostMatches matches = value_or_raise(std::move(host));
    const std::vector<size_t> rows = gpu::kept_matches(
        matches, min_confidence, max_matches == 0 ? std::numeric_limits<uint32_t>::max() : max_matches);
    py::dict result;
    result["matches_1"] = rows_of(matches.xy_a, rows, 2);
    result["matches_2"] = rows_of(matches.xy_b, rows, 2);
    result["match_conf"] = rows_of(matches.conf, rows, 1);
    result["pts3d_1"] = rows_of(matches.pts3d_a, rows, 3);
    result["pts3d_2"] = rows_of(matches.pts3d_b, rows, 3);
    return result;
  }

  // The retrieval head on the encoder tokens of `images` (one prepared size), as the daemon's
  // EncodeRetrieval: embeddings, features, attention, token_index, and with top_k the chosen pairs.
  py::dict encode_retrieval(const py::sequence& images, int top_k, std::optional<int> size) {
    if (!core_->retrieval) {
      raise(invalid_argument("this Engine has no retrieval head: recon.Engine(model, retrieval=PATH)"));
    }
    std::vector<io::PreparedImage> prepared;
    for (size_t i = 0; i < images.size(); ++i) prepared.push_back(prepare(images[i], i, long_side(size), crop()));
    std::vector<gpu::ImageU8View> views;  // Mast3rEngine::encode refuses none, or several sizes
    for (const io::PreparedImage& p : prepared) views.push_back(view_of(p));
    Result<gpu::RetrievalOutput> out = unavailable("not run");
    Result<gpu::HostPairCandidates> pairs = unavailable("not run");
    {
      py::gil_scoped_release unlocked;
      std::lock_guard lock(core_->retrieval_mutex);
      auto tokens = core_->engine->encode(views);
      out = tokens.is_ok() ? core_->retrieval->encode(*tokens) : Result<gpu::RetrievalOutput>(tokens.status());
      if (out.is_ok() && top_k > 0) {
        auto candidates = core_->retrieval->top_pairs(out->global, top_k);
        pairs = candidates.is_ok() ? candidates->to_host(*core_->runtime)
                                   : Result<gpu::HostPairCandidates>(candidates.status());
      }
    }
    const gpu::RetrievalOutput encoded = value_or_raise(std::move(out));
    gpu::Runtime& rt = *core_->runtime;
    py::dict result;
    result["embeddings"] = to_numpy(rt, encoded.global);
    result["features"] = to_numpy(rt, encoded.features);
    result["attention"] = to_numpy(rt, encoded.attention);
    result["token_index"] = to_numpy(rt, encoded.token_index);
    if (top_k > 0) {
      const std::vector<gpu::RetrievalPair> ranked = value_or_raise(std::move(pairs)).ranked_pairs();
      py::array_t<int32_t> top({static_cast<py::ssize_t>(ranked.size()), py::ssize_t{2}});
      py::array_t<float> scores(static_cast<py::ssize_t>(ranked.size()));
      int32_t* t = top.mutable_data();
      float* s = scores.mutable_data();
      for (const gpu::RetrievalPair& p : ranked) {
        *t++ = p.a;
        *t++ = p.b;
        *s++ = p.score;
      }
      result["top_pairs"] = top;
      result["top_scores"] = scores;
    }
    return result;
  }

  std::string device() const { return core_->runtime->caps().device_name; }
  const std::string& precision() const { return precision_; }

 private:
  std::shared_ptr<EngineCore> core_;
  std::string precision_;
};

}  // namespace

void bind_engine(py::module_& m) {
  py::class_<PyEngineResult>(m, "EngineResult",
                             "One pair's outputs from recon.Engine, on the GPU until read: result[name] copies the "
                             "tensor to a read-only numpy array (batch dimension dropped) once.")
      .def("__getitem__", &PyEngineResult::tensor, py::arg("name"))
      .def("__getattr__", &PyEngineResult::tensor, py::arg("name"))
      .def("__contains__", &PyEngineResult::contains)
      .def("names", &PyEngineResult::names, "The output names: pts3d_1, pts3d_2, conf_1, conf_2, desc_1, ...")
      .def("views", &PyEngineResult::views,
           "Per view: the prepared size and the resize and crop from the original (the official loader's).")
      .def("timings", &PyEngineResult::timings, "gpu_ms, wall_ms and the GPU time per stage (ms).");

  py::class_<PyEngine>(m, "Engine",
                       "MASt3R in this process on the GPU (no daemon): recon.Engine(model, precision='fp16-heads', "
                       "device='').")
      .def(py::init<const std::string&, const std::string&, const std::string&, const std::string&>(), py::arg("model"),
           py::arg("precision") = "fp16-heads", py::arg("device") = "", py::arg("retrieval") = "",
           "Loads a checkpoint (.safetensors, or a converted official one) on a device ('' = the best; an "
           "index or a name substring). precision: fp32, fp32-split (for MASt3R the same as fp32), fp16 (heads "
           "in fp32) or fp16-heads. retrieval: the "
           "retrieval head's .safetensors (tools/convert-checkpoint --retrieval), for encode_retrieval.")
      .def("warmup", &PyEngine::warmup, py::arg("width") = 512, py::arg("height") = 384,
           "Builds and runs once what infer uses at that model input size (the first call at a size does it "
           "otherwise).")
      .def("infer", &PyEngine::infer, py::arg("image1"), py::arg("image2"), py::arg("size") = py::none(),
           "One pair: images are uint8 arrays [H, W, 3] or paths, prepared as the official loader does (long "
           "side to `size`, by default the model's: 512 for MASt3R, 448 for DUNE-MASt3R; centre crop to "
           "multiples of its patch size, 16 or 14; DUNE keeps squares square).")
      .def("infer_batch", &PyEngine::infer_batch, py::arg("images"), py::arg("pairs") = py::none(),
           py::arg("size") = py::none(),
           "Many pairs over a list of images, each image encoded once: `pairs` as (i, j) indices (default: "
           "consecutive images). One EngineResult per pair, in the order asked.")
      .def("match", &PyEngine::match, py::arg("result"), py::arg("subsample") = 8, py::arg("max_matches") = 0,
           py::arg("min_confidence") = 0.0f,
           "The official fast reciprocal matcher on a pair's descriptors, on the GPU: a dict of numpy "
           "arrays matches_1/matches_2 int32 [K, 2] (x, y), match_conf float32 [K], pts3d_1/pts3d_2 float32 "
           "[K, 3]; max_matches 0 = all, min_confidence on both pixels' descriptor confidence.")
      .def("encode_retrieval", &PyEngine::encode_retrieval, py::arg("images"), py::arg("top_k") = 0,
           py::arg("size") = py::none(),
           "The retrieval head on the images' encoder tokens (images of one prepared size), as the daemon's "
           "EncodeRetrieval: a dict of numpy arrays embeddings [B, D], features [B, K, D], attention [B, K], "
           "token_index [B, K], and with top_k > 0 top_pairs int32 [B * top_k, 2] and top_scores.")
      .def_property_readonly("device", &PyEngine::device)
      .def_property_readonly("precision", &PyEngine::precision);
}

}  // namespace recon::python
