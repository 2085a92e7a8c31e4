// recon._recon: the compiled half of the Python package (recon/__init__.py is the other): the
// Client, Result and Future classes over librecon, the in-process Engine over gpu/, and the
// translation of librecon's Error into recon.Error (code, message, source).
#include <pybind11/pybind11.h>

#include "py_client.h"
#include "py_engine.h"
#include "py_result.h"
#include "recon/client/error.h"
#include "recon/client/version.h"

namespace py = pybind11;

PYBIND11_MODULE(_recon, m) {
  m.doc() = "recon: a client of the recond GPU inference daemon (librecon).";
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const recon::client::Error& e) {
      py::object type = py::module_::import("recon").attr("Error");
      py::object error =
          type(recon::client::error_code_name(e.code()), e.message(), recon::client::error_source_name(e.source()));
      PyErr_SetObject(type.ptr(), error.ptr());
    }
  });
  recon::python::bind_result(m);
  recon::python::bind_client(m);
  recon::python::bind_engine(m);
  m.attr("library_version") = recon::client::library_version();
  m.attr("protocol_version") = recon::client::protocol_version();
}
