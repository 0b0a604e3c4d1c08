// Entry point of the `trainrun._core` extension: registers the exception
// classes and the bindings. trainrun::Error becomes trainrun.TrainrunError
// (a RuntimeError) or its subclass for the error's code, e.g. MismatchError;
// the instance carries .code (the code's name, e.g. "Mismatch") and the
// core's message unchanged. elastic::HostsUpdated becomes
// HostsUpdatedInterrupt (a MembershipChangedError, Horovod's name). The way
// back (a Python error raised through the core's elastic::run) is
// throw_if_core_error. The classes live as long as the interpreter.
#include <pybind11/pybind11.h>

#include <array>
#include <exception>

#include "integrations/python/core/bindings.h"
#include "trainrun/elastic.h"
#include "trainrun/error.h"
#include "trainrun/version.h"

namespace py = pybind11;

namespace trainrun::python {
namespace {

struct CodeClass {
  Error::Code code;
  const char* code_name;   // .code of the Python exception
  const char* class_name;  // the subclass of TrainrunError
  PyObject* builtin;       // a second base, so `except ValueError` works too
};

constexpr std::size_t kCodes = 8;
// Owned references, created once per interpreter.
std::array<PyObject*, kCodes> code_classes{};
PyObject* hosts_updated_class = nullptr;

std::array<CodeClass, kCodes> code_table() {
  return {{{Error::Code::InvalidArgument, "InvalidArgument", "InvalidArgumentError", PyExc_ValueError},
           {Error::Code::Timeout, "Timeout", "TimeoutError", PyExc_TimeoutError},
           {Error::Code::Io, "Io", "IoError", PyExc_OSError},
           {Error::Code::Backend, "Backend", "BackendError", nullptr},
           {Error::Code::Mismatch, "Mismatch", "MismatchError", nullptr},
           {Error::Code::Unsupported, "Unsupported", "UnsupportedError", nullptr},
           {Error::Code::Internal, "Internal", "InternalError", nullptr},
           {Error::Code::MembershipChanged, "MembershipChanged", "MembershipChangedError", nullptr}}};
}

void raise(PyObject* cls, const Error& e) {
  py::object instance = py::handle(cls)(e.what());
  instance.attr("code") = code_table()[static_cast<std::size_t>(e.code())].code_name;
  PyErr_SetObject(cls, instance.ptr());
}

void register_errors(py::module_& m) {
  PyObject* base = PyErr_NewExceptionWithDoc("trainrun.TrainrunError",
                                             "An error of trainrun's core; .code names its kind (e.g. 'Mismatch').",
                                             PyExc_RuntimeError, nullptr);
  if (base == nullptr) throw py::error_already_set();
  m.add_object("TrainrunError", py::reinterpret_borrow<py::object>(base));
  const auto table = code_table();
  for (std::size_t i = 0; i < kCodes; ++i) {
    const CodeClass& c = table[i];
    py::tuple bases =
        c.builtin ? py::make_tuple(py::handle(base), py::handle(c.builtin)) : py::make_tuple(py::handle(base));
    const std::string qualified = std::string("trainrun.") + c.class_name;
    PyObject* cls = PyErr_NewException(qualified.c_str(), bases.ptr(), nullptr);
    if (cls == nullptr) throw py::error_already_set();
    code_classes[static_cast<std::size_t>(c.code)] = cls;
    m.add_object(c.class_name, py::reinterpret_borrow<py::object>(cls));
  }
  hosts_updated_class =
      PyErr_NewExceptionWithDoc("trainrun.HostsUpdatedInterrupt",
                                "Workers joined or left an elastic job: raised by State.commit() on every rank.",
                                code_classes[static_cast<std::size_t>(Error::Code::MembershipChanged)], nullptr);
  if (hosts_updated_class == nullptr) throw py::error_already_set();
  m.add_object("HostsUpdatedInterrupt", py::reinterpret_borrow<py::object>(hosts_updated_class));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const elastic::HostsUpdated& e) {
      raise(hosts_updated_class, e);
    } catch (const Error& e) {
      raise(code_classes[static_cast<std::size_t>(e.code())], e);
    }
  });
}

}  // namespace

void throw_if_core_error(const py::error_already_set& e) {
  if (e.matches(hosts_updated_class)) throw elastic::HostsUpdated(py::str(e.value()));
  for (const CodeClass& c : code_table()) {
    if (e.matches(code_classes[static_cast<std::size_t>(c.code)])) throw Error(c.code, py::str(e.value()));
  }
}

}  // namespace trainrun::python

PYBIND11_MODULE(_core, m) {
  m.doc() = "trainrun's C++ core (communicator and engine) for the Python package; use trainrun.torch.";
  m.attr("__version__") = TRAINRUN_VERSION;
  trainrun::python::register_errors(m);
  trainrun::python::bind_world(m);
  trainrun::python::bind_engine(m);
  trainrun::python::bind_elastic(m);
  trainrun::python::bind_process_sets(m);
  trainrun::python::bind_core_api(m);
}
