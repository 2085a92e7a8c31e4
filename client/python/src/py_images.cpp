// Image arguments: see py_images.h.
#include "py_images.h"

#include <string>

#include "recon/client/error.h"

namespace recon::python {

ImageArray as_image(py::object image, size_t index) {
  if (py::isinstance<py::str>(image) || py::hasattr(image, "__fspath__")) {
    image = py::module_::import("recon").attr("_load_image")(image);
  }
  auto array = ImageArray::ensure(image);
  if (!array || array.ndim() != 3 || array.shape(2) != 3) {
    throw client::Error(
        client::ErrorCode::kInvalidArgument, client::ErrorSource::kClient,
        "image " + std::to_string(index) + " is not an RGB image: pass a uint8 array [H, W, 3] or a path");
  }
  return array;
}

}  // namespace recon::python
