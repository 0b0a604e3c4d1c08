// The engine's asynchronous, named collectives (trainrun/engine.h) for
// Python. A tensor arrives as (data pointer, DataType, shape, device): the
// engine reads and writes that memory directly, so the caller must keep the
// tensor alive and untouched until synchronize() returns (the Python package
// holds a reference per handle). Handles are the engine's ids. Every call
// releases the GIL: submissions may wait on the engine's lock, synchronize,
// join and barrier on other ranks.
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "integrations/python/core/bindings.h"
#include "integrations/python/core/process_set_table.h"
#include "trainrun/communicator.h"
#include "trainrun/engine.h"
#include "trainrun/types.h"

namespace py = pybind11;

namespace trainrun::python {
namespace {

using TensorArgs = std::tuple<std::uintptr_t, DataType, std::vector<std::int64_t>, int>;

Tensor to_tensor(const TensorArgs& args) {
  Tensor t;
  t.data = reinterpret_cast<void*>(std::get<0>(args));
  t.type = std::get<1>(args);
  t.shape = std::get<2>(args);
  t.device = std::get<3>(args);
  return t;
}

// The bytes of an engine-allocated output, owned here and shown through
// the buffer protocol (writable, uint8), so the caller views them as a
// tensor (torch.frombuffer) without another copy, and without numpy's C API,
// whose layout differs between numpy 1 and 2.
struct OutputBytes {
  std::vector<char> data;
};

// synchronize()'s result: (dtype, shape, OutputBytes or None, received_splits).
py::tuple to_python(Output&& out) {
  py::object data = py::none();
  if (!out.data.empty() || !out.shape.empty()) data = py::cast(OutputBytes{std::move(out.data)});
  return py::make_tuple(out.type, out.shape, data, out.received_splits);
}

// Submits on the engine of process set `set` (0: the job) and remembers
// which set the handle belongs to. Horovod's op name leads the error of a
// rank outside the set.
template <typename Submit>
std::uint64_t on_set(int set, const char* op, Submit&& submit) {
  ProcessSetTable& table = ProcessSetTable::instance();
  const Handle handle = submit(table.communicator(set, op));
  table.remember(handle.id, set);
  return handle.id;
}

// The dtypes and reductions, under the names mpi_ops uses.
void bind_types(py::module_& m) {
  py::enum_<DataType>(m, "DataType")
      .value("UInt8", DataType::UInt8)
      .value("Int8", DataType::Int8)
      .value("Int16", DataType::Int16)
      .value("Bool", DataType::Bool)
      .value("Int32", DataType::Int32)
      .value("Int64", DataType::Int64)
      .value("Float16", DataType::Float16)
      .value("BFloat16", DataType::BFloat16)
      .value("Float32", DataType::Float32)
      .value("Float64", DataType::Float64);
  py::enum_<ReduceOp>(m, "ReduceOp")
      .value("Sum", ReduceOp::Sum)
      .value("Average", ReduceOp::Average)
      .value("Min", ReduceOp::Min)
      .value("Max", ReduceOp::Max)
      .value("Product", ReduceOp::Product);
}

void bind_output_bytes(py::module_& m) {
  py::class_<OutputBytes>(m, "OutputBytes", py::buffer_protocol())
      .def_buffer([](OutputBytes& b) {
        return py::buffer_info(b.data.data(), 1, py::format_descriptor<std::uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(b.data.size())}, {py::ssize_t{1}});
      })
      .def("__len__", [](const OutputBytes& b) { return b.data.size(); });
}

// Handles (poll, synchronize; those of a removed process set's aborted
// ops included), barrier, join and the timeline.
void bind_handles(py::module_& m) {
  using Release = py::call_guard<py::gil_scoped_release>;
  m.def(
      "poll",
      [](std::uint64_t id) {
        ProcessSetTable& table = ProcessSetTable::instance();
        return table.removed(id) || poll(table.owner(id, false), Handle{id});
      },
      Release());
  m.def("synchronize", [](std::uint64_t id) {
    Output out;
    {
      py::gil_scoped_release release;
      ProcessSetTable& table = ProcessSetTable::instance();
      if (auto removed = table.take_removed(id)) out = std::move(*removed);
      else out = synchronize(table.owner(id, true), Handle{id});
    }
    return to_python(std::move(out));
  });
  m.def(
      "barrier", [](int set) { barrier(ProcessSetTable::instance().communicator(set, "Barrier")); }, Release(),
      py::arg("process_set") = 0);
  m.def(
      "join", [](int set) { return join(ProcessSetTable::instance().communicator(set, "Join")); }, Release(),
      py::arg("process_set") = 0);
  m.def(
      "start_timeline", [](const std::string& path, bool mark_cycles) { start_timeline(path, mark_cycles); }, Release(),
      py::arg("path"), py::arg("mark_cycles") = false);
  m.def(
      "stop_timeline", [] { stop_timeline(); }, Release());
}

}  // namespace

void bind_engine(py::module_& m) {
  bind_output_bytes(m);
  bind_types(m);
  m.attr("CPU") = kCpu;

  using Release = py::call_guard<py::gil_scoped_release>;
  m.def(
      "allreduce_async",
      [](const std::string& name, const TensorArgs& t, ReduceOp op, double prescale, double postscale, int set) {
        return on_set(set, "Allreduce",
                      [&](Communicator& c) { return allreduce_async(c, name, to_tensor(t), op, prescale, postscale); });
      },
      Release(), py::arg("name"), py::arg("tensor"), py::arg("op"), py::arg("prescale") = 1.0,
      py::arg("postscale") = 1.0, py::arg("process_set") = 0);
  m.def(
      "grouped_allreduce_async",
      [](const std::vector<std::string>& names, const std::vector<TensorArgs>& ts, ReduceOp op, double prescale,
         double postscale, int set) {
        std::vector<Tensor> tensors;
        tensors.reserve(ts.size());
        for (const TensorArgs& t : ts) tensors.push_back(to_tensor(t));
        return on_set(set, "Allreduce", [&](Communicator& c) {
          return grouped_allreduce_async(c, names, tensors, op, prescale, postscale);
        });
      },
      Release(), py::arg("names"), py::arg("tensors"), py::arg("op"), py::arg("prescale") = 1.0,
      py::arg("postscale") = 1.0, py::arg("process_set") = 0);
  m.def(
      "allgather_async",
      [](const std::string& name, const TensorArgs& t, int set) {
        return on_set(set, "Allgather", [&](Communicator& c) { return allgather_async(c, name, to_tensor(t)); });
      },
      Release(), py::arg("name"), py::arg("tensor"), py::arg("process_set") = 0);
  m.def(
      "broadcast_async",
      [](const std::string& name, const TensorArgs& t, int root, int set) {
        return on_set(set, "Broadcast", [&](Communicator& c) { return broadcast_async(c, name, to_tensor(t), root); });
      },
      Release(), py::arg("name"), py::arg("tensor"), py::arg("root"), py::arg("process_set") = 0);
  m.def(
      "alltoall_async",
      [](const std::string& name, const TensorArgs& t, const std::vector<std::int64_t>& splits, int set) {
        return on_set(set, "Alltoall", [&](Communicator& c) { return alltoall_async(c, name, to_tensor(t), splits); });
      },
      Release(), py::arg("name"), py::arg("tensor"), py::arg("splits"), py::arg("process_set") = 0);
  m.def(
      "reducescatter_async",
      [](const std::string& name, const TensorArgs& t, ReduceOp op, int set) {
        return on_set(set, "Reducescatter",
                      [&](Communicator& c) { return reducescatter_async(c, name, to_tensor(t), op); });
      },
      Release(), py::arg("name"), py::arg("tensor"), py::arg("op"), py::arg("process_set") = 0);
  bind_handles(m);
}

}  // namespace trainrun::python
