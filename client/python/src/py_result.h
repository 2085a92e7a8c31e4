// PyResult: a librecon Result seen from Python. Its tensors are numpy arrays that VIEW the shared
// memory the tensor was fetched into (no copy): each array holds a reference to the Result it
// came from, so the handle and the memory live until the last array and the Result object are
// gone. Fetching happens on first access, with the GIL released.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "recon/client/result.h"

namespace recon::python {

namespace py = pybind11;

class PyResult {
 public:
  explicit PyResult(client::Result result) : result_(std::make_shared<client::Result>(std::move(result))) {}

  // The tensor as a read-only numpy array viewing shared memory (fetched now if not yet).
  py::array tensor(const std::string& name) const;
  // Fetches every named tensor not fetched yet in one round trip (none named: all); with
  // `release` the daemon frees the handle in the same request.
  void fetch(const std::vector<std::string>& names, bool release) const;
  py::list names() const;
  bool contains(const std::string& name) const { return result_->find(name) != nullptr; }
  // name → (shape, dtype name) without fetching.
  py::dict info() const;
  py::dict timings() const;
  std::string model() const { return result_->model(); }
  uint64_t match_count() const { return result_->match_count(); }
  void release() const { result_->release(); }
  bool released() const { return result_->released(); }
  std::string repr() const;
  const client::Result& result() const { return *result_; }

  // InferBatch: the pair of image indices this result belongs to.
  std::optional<std::pair<uint32_t, uint32_t>> pair;

 private:
  std::shared_ptr<client::Result> result_;
};

// The numpy dtype of a recon dtype (BF16 as its raw uint16 bits).
py::dtype numpy_dtype(client::DType dtype);

void bind_result(py::module_& m);

}  // namespace recon::python
