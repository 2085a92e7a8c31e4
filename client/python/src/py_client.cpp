// PyClient: see py_client.h.
#include "py_client.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>

#include "py_images.h"

namespace recon::python {
namespace {

client::Error invalid(const std::string& message) {
  return client::Error(client::ErrorCode::kInvalidArgument, client::ErrorSource::kClient, message);
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000.0)));
}

py::dict event_dict(const client::JobEvent& e) {
  py::dict out;
  out["stage"] = e.stage;
  out["done"] = e.done;
  out["total"] = e.total;
  out["loss"] = e.loss;
  out["message"] = e.message;
  out["elapsed_s"] = static_cast<double>(e.elapsed.count()) / 1e3;
  return out;
}

}  // namespace

client::InferOptions CallOptions::infer() const {
  client::InferOptions o;
  o.model = model;
  o.resolution = resolution;
  o.outputs = outputs;
  o.ttl = to_ms(ttl_s);
  o.deadline = to_ms(deadline_s);
  return o;
}

PyResult PyFuture::result(std::optional<double> timeout_s) {
  std::lock_guard lock(mutex_);
  if (!pending_.valid()) throw invalid("result() was already taken from this Future");
  std::optional<client::Result> result;
  {
    py::gil_scoped_release unlocked;
    if (timeout_s && !pending_.wait_for(to_ms(*timeout_s))) {
      throw client::Error(client::ErrorCode::kUnavailable, client::ErrorSource::kConnection,
                          "no answer within the Future's timeout (the request stays in flight)");
    }
    result = pending_.get();
  }
  images_ = StagedImages{};
  return PyResult(std::move(*result));
}

bool PyFuture::done() {
  std::lock_guard lock(mutex_);
  return !pending_.valid() || pending_.ready();
}

PyClient::PyClient(std::optional<std::string> socket_dir, const std::string& client_name, double timeout_s,
                   bool session) {
  client::ConnectOptions o = socket_dir ? client::ConnectOptions::in_directory(*socket_dir) : client::ConnectOptions{};
  o.client_name = client_name;
  o.timeout = to_ms(timeout_s);
  py::gil_scoped_release unlocked;
  client_ = std::make_unique<client::Client>(session ? client::Client::connect(o) : client::Client::connect_control(o));
  if (session) images_ = std::make_unique<client::ImagePool>(*client_);
}

client::Client& PyClient::client() {
  if (!client_) throw invalid("the Client is closed");
  return *client_;
}

StagedImages PyClient::stage(const std::vector<py::object>& images) {
  if (!images_) throw invalid("this Client has no session (session=False): it cannot send images");
  std::vector<ImageArray> arrays;
  std::vector<client::HostImage> host;
  for (size_t i = 0; i < images.size(); ++i) {
    arrays.push_back(as_image(images[i], i));
    const auto& a = arrays.back();
    host.push_back(
        client::HostImage{a.data(), static_cast<uint32_t>(a.shape(1)), static_cast<uint32_t>(a.shape(0)), 0});
  }
  return images_->stage(host);
}

PyResult PyClient::infer(py::object image1, py::object image2, const CallOptions& options) {
  auto future = infer_async(std::move(image1), std::move(image2), options);
  return future->result(std::nullopt);
}

std::unique_ptr<PyFuture> PyClient::infer_async(py::object image1, py::object image2, const CallOptions& options) {
  StagedImages staged = stage({std::move(image1), std::move(image2)});
  client::PendingResult pending = client().infer(staged.views()[0], staged.views()[1], options.infer());
  return std::make_unique<PyFuture>(std::move(pending), std::move(staged));
}

py::list PyClient::infer_batch(const py::sequence& images, const std::vector<std::pair<uint32_t, uint32_t>>& pairs,
                               bool symmetric, const CallOptions& options) {
  StagedImages staged = stage(images.cast<std::vector<py::object>>());
  client::BatchOptions batch;
  for (const auto& [first, second] : pairs) batch.pairs.push_back(client::ImagePair{first, second});
  batch.symmetric = symmetric;
  client::PendingBatch pending = client().infer_batch(staged.views(), batch, options.infer());
  std::optional<client::BatchResult> answer;
  {
    py::gil_scoped_release unlocked;
    answer = pending.get();
  }
  py::list out;
  for (size_t k = 0; k < answer->results.size(); ++k) {
    PyResult result(std::move(answer->results[k]));
    result.pair = std::make_pair(answer->pairs[k].first, answer->pairs[k].second);
    out.append(py::cast(std::move(result)));
  }
  return out;
}

PyResult PyClient::match(const PyResult& pair, uint32_t max_matches, uint32_t subsample, float min_confidence) {
  client::MatchOptions o;
  o.max_matches = max_matches;
  o.subsample = subsample;
  o.min_confidence = min_confidence;
  client::PendingResult pending = client().match(pair.result(), o);
  std::optional<client::Result> result;
  {
    py::gil_scoped_release unlocked;
    result = pending.get();
  }
  return PyResult(std::move(*result));
}

py::tuple PyClient::retrieve(const py::sequence& images, uint32_t top_k, const CallOptions& options) {
  StagedImages staged = stage(images.cast<std::vector<py::object>>());
  client::RetrievalOptions o;
  o.model = options.model;
  o.resolution = options.resolution;
  o.top_k = top_k;
  o.ttl = to_ms(options.ttl_s);
  client::PendingRetrieval pending = client().encode_retrieval(staged.views(), o);
  std::optional<client::RetrievalResult> answer;
  {
    py::gil_scoped_release unlocked;
    answer = pending.get();
  }
  py::array_t<int64_t> pairs({static_cast<py::ssize_t>(answer->pairs.size()), py::ssize_t{2}});
  auto p = pairs.mutable_unchecked<2>();
  for (size_t i = 0; i < answer->pairs.size(); ++i) {
    p(i, 0) = answer->pairs[i].first;
    p(i, 1) = answer->pairs[i].second;
  }
  py::array_t<float> scores(static_cast<py::ssize_t>(answer->scores.size()), answer->scores.data());
  return py::make_tuple(PyResult(std::move(answer->outputs)), pairs, scores);
}

PyResult PyClient::infer_model(const std::string& model, const py::dict& inputs,
                               const std::map<std::string, std::string>& parameters, const CallOptions& options) {
  // Every (name, value) in order; a list value is a list input (its name repeated).
  std::vector<std::pair<std::string, py::object>> flat;
  for (const auto& [key, value] : inputs) {
    const std::string name = key.cast<std::string>();
    if (py::isinstance<py::list>(value)) {
      for (py::handle item : value) flat.emplace_back(name, py::reinterpret_borrow<py::object>(item));
    } else {
      flat.emplace_back(name, py::reinterpret_borrow<py::object>(value));
    }
  }
  // A numpy array of float32, float16, int32, int64 or bool (sent as U8, one byte each) is a tensor
  // input (ONNX models), sent inside the request; uint8 arrays and paths are images.
  auto tensor_dtype = [](const py::object& value) -> std::optional<client::DType> {
    if (!py::isinstance<py::array>(value)) return std::nullopt;
    const py::dtype d = py::reinterpret_borrow<py::array>(value).dtype();
    if (d.is(py::dtype::of<float>())) return client::DType::kF32;
    if (d.is(py::dtype("float16"))) return client::DType::kF16;
    if (d.is(py::dtype::of<int32_t>())) return client::DType::kI32;
    if (d.is(py::dtype::of<int64_t>())) return client::DType::kI64;
    if (d.is(py::dtype::of<bool>())) return client::DType::kU8;
    return std::nullopt;
  };
  std::vector<py::object> images;
  for (const auto& [name, value] : flat) {
    if (!py::isinstance<PyResult>(value) && !py::isinstance<py::tuple>(value) && !tensor_dtype(value)) {
      images.push_back(value);
    }
  }
  std::vector<py::array> tensors;  // C-contiguous copies where needed, alive until the request is sent
  tensors.reserve(flat.size());
  StagedImages staged = images.empty() ? StagedImages{} : stage(images);
  std::vector<client::ModelInput> named;
  size_t next_image = 0;
  for (const auto& [name, value] : flat) {
    if (py::isinstance<PyResult>(value)) {
      named.push_back(client::ModelInput::result(name, value.cast<const PyResult&>().result()));
    } else if (py::isinstance<py::tuple>(value)) {
      const auto [source, tensor] = value.cast<std::pair<py::object, std::string>>();
      named.push_back(client::ModelInput::result(name, source.cast<const PyResult&>().result(), tensor));
    } else if (const std::optional<client::DType> dtype = tensor_dtype(value)) {
      tensors.push_back(py::array::ensure(value, py::array::c_style));
      const py::array& a = tensors.back();
      std::vector<uint64_t> shape(a.shape(), a.shape() + a.ndim());
      if (shape.empty()) shape = {1};
      named.push_back(client::ModelInput::inline_tensor(
          name, *dtype, std::move(shape),
          std::span(reinterpret_cast<const std::byte*>(a.data()), static_cast<size_t>(a.nbytes()))));
    } else {
      named.push_back(client::ModelInput::image(name, staged.views()[next_image++]));
    }
  }
  client::PendingResult pending = client().infer(model, named, parameters, options.infer());
  std::optional<client::Result> result;
  {
    py::gil_scoped_release unlocked;
    result = pending.get();
  }
  return PyResult(std::move(*result));
}

PyResult PyClient::reconstruct(const py::sequence& images, const std::map<std::string, std::string>& parameters,
                               py::object progress, const CallOptions& options) {
  StagedImages staged = stage(images.cast<std::vector<py::object>>());
  client::JobOptions o;
  o.job = "reconstruct";
  o.model = options.model;
  o.resolution = options.resolution;
  o.ttl = to_ms(options.ttl_s);
  for (const auto& [name, value] : parameters) o.parameters.emplace_back(name, value);
  // Dropping the Job (an exception, Ctrl-C in the progress callback) cancels it on the daemon.
  client::Job job = client().start_job(staged.views(), o);
  while (true) {
    std::optional<client::JobEvent> event;
    {
      py::gil_scoped_release unlocked;
      event = job.next();
    }
    if (!event) break;
    if (!progress.is_none()) progress(event_dict(*event));
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
  return PyResult(std::move(job.result()));
}

py::dict PyClient::status() {
  client::DaemonStatus s;
  {
    py::gil_scoped_release unlocked;
    s = client().status();
  }
  py::dict out;
  out["state"] = client::daemon_state_name(s.state);
  out["server_version"] = s.server_version;
  out["uptime_s"] = s.uptime.count();
  py::list devices;
  for (const client::DeviceStatus& d : s.devices) {
    py::dict device;
    device["index"] = d.index;
    device["name"] = d.name;
    device["capabilities"] = d.capabilities;
    device["device_local_used_bytes"] = d.device_local_used_bytes;
    device["weight_bytes"] = d.weight_bytes;
    device["result_bytes"] = d.result_bytes;
    device["work_items"] = d.work_items;
    device["error"] = d.error;
    devices.append(device);
  }
  out["devices"] = devices;
  py::list models;
  for (const client::ModelStatus& m : s.models) {
    py::dict model;
    model["name"] = m.name;
    model["kind"] = m.kind;
    model["state"] = client::model_state_name(m.state);
    model["precision"] = client::precision_name(m.precision);
    py::list resolutions;
    for (const client::Resolution& r : m.resolutions) resolutions.append(py::make_tuple(r.height, r.width));
    model["resolutions"] = resolutions;
    model["error"] = m.error;
    model["inputs"] = m.inputs;
    model["outputs"] = m.outputs;
    model["max_batch"] = m.max_batch;
    model["max_queue_delay_us"] = m.max_queue_delay_us;
    model["requests"] = m.requests;
    model["inferences"] = m.inferences;
    model["executions"] = m.executions;
    model["queue_us"] = m.queue_us;
    model["compute_us"] = m.compute_us;
    models.append(model);
  }
  out["models"] = models;
  out["queue"] = py::dict(py::arg("pending") = s.queue.pending, py::arg("in_flight") = s.queue.in_flight,
                          py::arg("capacity") = s.queue.capacity);
  out["pairs_per_s"] = s.throughput.pairs_per_s;
  out["sessions_open"] = s.sessions_open;
  return out;
}

py::dict PyClient::session() {
  const client::SessionInfo& info = client().session();
  py::dict out;
  out["server_version"] = info.server_version;
  out["max_regions"] = info.max_regions;
  out["max_handles"] = info.max_handles;
  out["max_region_bytes"] = info.max_region_bytes;
  out["max_result_bytes"] = info.max_result_bytes;
  return out;
}

void bind_client(py::module_& m) {
  py::class_<PyFuture>(m, "Future", "A request in flight (Client.infer_async).")
      .def("result", &PyFuture::result, py::arg("timeout") = py::none(),
           "Waits (GIL released) for the answer; a timeout in seconds raises recon.Error UNAVAILABLE.")
      .def("done", &PyFuture::done, "True when result() will not wait.");

  // The keyword arguments every inference takes, as reconctl's flags.
  const auto options = [](std::string model, std::optional<std::pair<uint32_t, uint32_t>> resolution,
                          std::vector<std::string> outputs, double ttl, double deadline) {
    CallOptions o;
    o.model = std::move(model);
    if (resolution) o.resolution = client::Resolution{resolution->first, resolution->second};
    o.outputs = std::move(outputs);
    o.ttl_s = ttl;
    o.deadline_s = deadline;
    return o;
  };
  using Size = std::optional<std::pair<uint32_t, uint32_t>>;
  using Names = std::vector<std::string>;
#define RECON_CALL_KWARGS                                                                             \
  py::arg("model") = std::string(), py::arg("resolution") = py::none(), py::arg("outputs") = Names{}, \
  py::arg("ttl") = 0.0, py::arg("deadline") = 0.0

  py::class_<PyClient>(m, "Client", R"(A connection to recond (its session lives as long as this object).

socket_dir: the daemon's socket directory (None: $RECON_SOCKET_DIR, else /run/recon).
timeout: seconds a request waits for its answer. session=False connects for status() only.)")
      .def(py::init<std::optional<std::string>, const std::string&, double, bool>(), py::arg("socket_dir") = py::none(),
           py::arg("client_name") = "python", py::arg("timeout") = 60.0, py::arg("session") = true)
      .def(
          "infer",
          [options](PyClient& self, py::object a, py::object b, std::string model, Size resolution, Names outputs,
                    double ttl, double deadline) {
            return self.infer(std::move(a), std::move(b),
                              options(std::move(model), resolution, std::move(outputs), ttl, deadline));
          },
          py::arg("image1"), py::arg("image2"), RECON_CALL_KWARGS,
          R"(One MASt3R pair: pts3d_1/2 [H,W,3], conf_1/2 [H,W], desc_1/2 [H,W,24], desc_conf_1/2 [H,W].

Images are uint8 arrays [H, W, 3] or paths. resolution=(height, width) fixes the model input
size; outputs keeps only the named tensors; ttl and deadline are in seconds.)")
      .def(
          "infer_async",
          [options](PyClient& self, py::object a, py::object b, std::string model, Size resolution, Names outputs,
                    double ttl, double deadline) {
            return self.infer_async(std::move(a), std::move(b),
                                    options(std::move(model), resolution, std::move(outputs), ttl, deadline));
          },
          py::arg("image1"), py::arg("image2"), RECON_CALL_KWARGS,
          py::keep_alive<0, 1>(),  // a Future keeps its Client (and the image pool it leases from)
          "infer() that returns a Future at once.")
      .def(
          "infer_batch",
          [options](PyClient& self, const py::sequence& images, std::vector<std::pair<uint32_t, uint32_t>> pairs,
                    bool symmetric, std::string model, Size resolution, Names outputs, double ttl, double deadline) {
            return self.infer_batch(images, pairs, symmetric,
                                    options(std::move(model), resolution, std::move(outputs), ttl, deadline));
          },
          py::arg("images"), py::arg("pairs") = std::vector<std::pair<uint32_t, uint32_t>>{},
          py::arg("symmetric") = false, RECON_CALL_KWARGS,
          "Many pairs over one image list in one request (each image encoded once); one Result per pair, "
          "result.pair says which. pairs empty: the consecutive ones.")
      .def("match", &PyClient::match, py::arg("pair"), py::arg("max_matches") = 0, py::arg("subsample") = 0,
           py::arg("min_confidence") = 0.0f,
           "Matches a pair result's descriptors on the daemon's GPU: matches_1/2 int32 [K,2] (x, y), "
           "match_conf [K], pts3d_1/2 [K,3]; result.match_count is K.")
      .def(
          "retrieve",
          [options](PyClient& self, const py::sequence& images, uint32_t top_k, std::string model, Size resolution,
                    double ttl) {
            return self.retrieve(images, top_k, options(std::move(model), resolution, {}, ttl, 0));
          },
          py::arg("images"), py::arg("top_k") = 0, py::arg("model") = std::string(), py::arg("resolution") = py::none(),
          py::arg("ttl") = 0.0,
          "Retrieval embeddings (needs recond --retrieval): (Result with embeddings [N,D], pairs int64 [N*top_k,2], "
          "scores float32 [N*top_k]).")
      .def(
          "infer_model",
          [options](PyClient& self, const std::string& model, const py::dict& inputs,
                    const std::map<std::string, std::string>& parameters, Size resolution, Names outputs, double ttl,
                    double deadline) {
            return self.infer_model(model, inputs, parameters,
                                    options(model, resolution, std::move(outputs), ttl, deadline));
          },
          py::arg("model"), py::arg("inputs"), py::arg("parameters") = std::map<std::string, std::string>{},
          py::arg("resolution") = py::none(), py::arg("outputs") = Names{}, py::arg("ttl") = 0.0,
          py::arg("deadline") = 0.0,
          R"(The generic request: any model by name with named inputs.

inputs maps a name to an image, a list of images (a list input), a Result (read where it lies on
the GPU), (Result, tensor name), or a numpy array of float32, float16, int32, int64 or bool (one
byte each): a tensor (ONNX models), sent inside the request. e.g. infer_model("match", {"pair": r}, {"subsample": "4"}),
infer_model("resnet", {"x": batch})["y"].)")
      .def(
          "reconstruct",
          [options](PyClient& self, const py::sequence& images, py::object progress, std::string model, Size resolution,
                    double ttl, const py::kwargs& parameters) {
            std::map<std::string, std::string> named;
            for (const auto& [key, value] : parameters)
              named[key.cast<std::string>()] = py::str(value).cast<std::string>();
            return self.reconstruct(images, named, std::move(progress),
                                    options(std::move(model), resolution, {}, ttl, 0));
          },
          py::arg("images"), py::arg("progress") = py::none(), py::arg("model") = std::string(),
          py::arg("resolution") = py::none(), py::arg("ttl") = 0.0,
          R"(N images → cameras and one point cloud (docs/RECONSTRUCT.md), as one Result.

Keyword parameters are the job's (pairs="swin-3", subsample=8, niter1=..., ...). progress(event)
is called with each event dict (stage, done, total, loss, message, elapsed_s); an exception in it
or Ctrl-C cancels the job on the daemon.)")
      .def("status", &PyClient::status, "The daemon's state, devices, models, queue and throughput.")
      .def_property_readonly("session", &PyClient::session, "The session's limits and the daemon's version.");
#undef RECON_CALL_KWARGS
}

}  // namespace recon::python
