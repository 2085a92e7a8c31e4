// PyEngine: recon.Engine, MASt3R in the interpreter's own process on gpu/ (no daemon), for scripts
// and notebooks on a machine with a GPU: load a checkpoint, warm up, infer pairs (images prepared
// as the official loader does), or many pairs over a set of images with each image encoded once.
// Results keep their tensors on the GPU; a tensor is copied to a numpy array on first access.
#pragma once

#include <pybind11/pybind11.h>

namespace recon::python {

namespace py = pybind11;

void bind_engine(py::module_& m);

}  // namespace recon::python
