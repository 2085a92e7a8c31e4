// Image arguments of the Python API, shared by Client and Engine: a packed uint8 [H, W, 3] numpy
// array (copied only when not C-contiguous or not uint8), or a path read by recon._load_image.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>

namespace recon::python {

namespace py = pybind11;

using ImageArray = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

// Throws recon.Error INVALID_ARGUMENT (source "client") naming image `index` when it is neither.
ImageArray as_image(py::object image, size_t index);

}  // namespace recon::python
