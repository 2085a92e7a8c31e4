// PyClient: recon.Client, a connection to recond over librecon. Images are numpy uint8 arrays
// [H, W, 3] (or paths, read by recon._load_image); each call copies them once into shared memory
// that this client registered with the daemon (librecon's ImagePool), and the daemon reads them
// there. Every wait for the daemon releases the GIL, so threads run requests concurrently
// over the one connection.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "py_result.h"
#include "recon/client/client.h"
#include "recon/client/image_pool.h"

namespace recon::python {

namespace py = pybind11;

// The images of one call, in one buffer leased from the client's ImagePool.
using StagedImages = client::ImagePool::Lease;

// A request in flight (infer_async): result() waits for it.
class PyFuture {
 public:
  PyFuture(client::PendingResult pending, StagedImages images)
      : pending_(std::move(pending)), images_(std::move(images)) {}
  PyResult result(std::optional<double> timeout_s);
  bool done();

 private:
  std::mutex mutex_;
  client::PendingResult pending_;
  StagedImages images_;  // the daemon reads them until the answer arrives
};

struct CallOptions {
  std::string model;
  std::optional<client::Resolution> resolution;
  std::vector<std::string> outputs;
  double ttl_s = 0;
  double deadline_s = 0;

  client::InferOptions infer() const;
};

class PyClient {
 public:
  PyClient(std::optional<std::string> socket_dir, const std::string& client_name, double timeout_s, bool session);

  PyResult infer(py::object image1, py::object image2, const CallOptions& options);
  std::unique_ptr<PyFuture> infer_async(py::object image1, py::object image2, const CallOptions& options);
  py::list infer_batch(const py::sequence& images, const std::vector<std::pair<uint32_t, uint32_t>>& pairs,
                       bool symmetric, const CallOptions& options);
  PyResult match(const PyResult& pair, uint32_t max_matches, uint32_t subsample, float min_confidence);
  py::tuple retrieve(const py::sequence& images, uint32_t top_k, const CallOptions& options);
  PyResult infer_model(const std::string& model, const py::dict& inputs,
                       const std::map<std::string, std::string>& parameters, const CallOptions& options);
  PyResult reconstruct(const py::sequence& images, const std::map<std::string, std::string>& parameters,
                       py::object progress, const CallOptions& options);
  py::dict status();
  py::dict session();

 private:
  StagedImages stage(const std::vector<py::object>& images);
  client::Client& client();

  std::unique_ptr<client::Client> client_;
  std::unique_ptr<client::ImagePool> images_;
};

void bind_client(py::module_& m);

}  // namespace recon::python
