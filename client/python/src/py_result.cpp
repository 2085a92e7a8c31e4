// PyResult: see py_result.h.
#include "py_result.h"

#include <pybind11/stl.h>

namespace recon::python {

py::dtype numpy_dtype(client::DType dtype) {
  switch (dtype) {
    case client::DType::kF32:
      return py::dtype("float32");
    case client::DType::kF16:
      return py::dtype("float16");
    case client::DType::kBF16:
      return py::dtype("uint16");
    case client::DType::kU8:
      return py::dtype("uint8");
    case client::DType::kI32:
      return py::dtype("int32");
    case client::DType::kU32:
      return py::dtype("uint32");
    case client::DType::kI64:
      return py::dtype("int64");
  }
  throw client::Error(client::ErrorCode::kInternal, client::ErrorSource::kClient, "unknown dtype");
}

py::array PyResult::tensor(const std::string& name) const {
  client::TensorView view;
  {
    py::gil_scoped_release unlocked;  // a fetch waits for the daemon
    view = result_->tensor(name);
  }
  std::vector<py::ssize_t> shape(view.shape().begin(), view.shape().end());
  // The array's base owns a reference to the Result: the shared memory stays mapped and the
  // handle held until the last array is gone.
  auto* keep = new std::shared_ptr<client::Result>(result_);
  py::capsule base(keep, [](void* p) { delete static_cast<std::shared_ptr<client::Result>*>(p); });
  const void* data = view.bytes().empty() ? nullptr : view.bytes().data();
  py::array array(numpy_dtype(view.dtype()), shape, std::vector<py::ssize_t>{}, data, base);
  // The memory is the client's output region: views are read-only, so no script scribbles on a
  // tensor another view of the same result shows.
  py::detail::array_proxy(array.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return array;
}

void PyResult::fetch(const std::vector<std::string>& names, bool release) const {
  py::gil_scoped_release unlocked;
  result_->fetch(std::span<const std::string>(names), release);
}

py::list PyResult::names() const {
  py::list out;
  for (const client::TensorInfo& t : result_->tensors()) out.append(t.name);
  return out;
}

py::dict PyResult::info() const {
  py::dict out;
  for (const client::TensorInfo& t : result_->tensors()) {
    py::tuple shape(t.shape.size());
    for (size_t i = 0; i < t.shape.size(); ++i) shape[i] = t.shape[i];
    out[py::str(t.name)] = py::make_tuple(shape, numpy_dtype(t.dtype));
  }
  return out;
}

py::dict PyResult::timings() const {
  const client::Timings& t = result_->timings();
  const auto ms = [](std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e6; };
  py::dict out;
  out["queue_ms"] = ms(t.queue);
  out["input_ms"] = ms(t.input);
  out["compute_ms"] = ms(t.compute);
  out["output_ms"] = ms(t.output);
  out["total_ms"] = ms(t.total);
  out["round_trip_ms"] = ms(result_->round_trip());
  out["batch_size"] = t.batch_size;
  return out;
}

std::string PyResult::repr() const {
  std::string out = "<recon.Result model='" + result_->model() + "' tensors=[";
  bool first = true;
  for (const client::TensorInfo& t : result_->tensors()) {
    out += (first ? "" : ", ") + t.name;
    first = false;
  }
  return out + "]" + (result_->released() ? " released" : "") + ">";
}

void bind_result(py::module_& m) {
  py::class_<PyResult>(m, "Result", R"(A result on the daemon: tensors that stay in GPU memory until read.

result["pts3d_1"] (or result.pts3d_1) fetches the tensor on first access and returns a
read-only numpy array that views the shared memory it was copied into: no further copy. The
array keeps the result alive; the daemon's handle is released when the Result and every array
of it are gone (or at once with release()).)")
      .def("__getitem__", &PyResult::tensor, py::arg("name"),
           "The tensor as a read-only numpy array (fetched on first use).")
      .def("__getattr__",
           [](const PyResult& self, const std::string& name) {
             if (!self.contains(name)) throw py::attribute_error("recon.Result has no tensor '" + name + "'");
             return self.tensor(name);
           })
      .def("__contains__", &PyResult::contains)
      .def("__len__", [](const PyResult& self) { return py::len(self.names()); })
      .def("__iter__", [](const PyResult& self) { return py::iter(self.names()); })
      .def("__repr__", &PyResult::repr)
      .def("keys", &PyResult::names, "The tensor names (known without fetching).")
      .def("fetch", &PyResult::fetch, py::arg("names") = std::vector<std::string>{}, py::arg("release") = false,
           "Fetches the named tensors (none: all) in one round trip; later reads are views. release=True frees "
           "the handle in the same round trip.")
      .def(
          "numpy",
          [](const PyResult& self) {
            self.fetch({}, false);
            py::dict out;
            for (py::handle name : self.names()) out[name] = self.tensor(name.cast<std::string>());
            return out;
          },
          "Every tensor, fetched in one round trip, as a dict of numpy views.")
      .def("release", &PyResult::release, "Frees the handle on the daemon now; arrays already read stay valid.")
      .def_property_readonly("released", &PyResult::released)
      .def_property_readonly("info", &PyResult::info, "name → (shape, numpy dtype), without fetching.")
      .def_property_readonly("model", &PyResult::model)
      .def_property_readonly("timings", &PyResult::timings,
                             "The daemon's stage times and this client's round trip, in ms.")
      .def_property_readonly("match_count", &PyResult::match_count, "Rows of matches_1 (a match result); 0 otherwise.")
      .def_readonly("pair", &PyResult::pair, "infer_batch: the (first, second) image indices; None otherwise.");
}

}  // namespace recon::python
