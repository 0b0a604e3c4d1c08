// The public engine API (trainrun/engine.h): checks arguments on the
// calling thread, turns them into Work for the default communicator's
// Engine, and names the rank and host in every error.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "lib/call_size.h"
#include "lib/communicator_access.h"
#include "lib/engine/engine.h"
#include "lib/fork_guard.h"
#include "trainrun/communicator.h"
#include "trainrun/engine.h"

namespace trainrun {

std::size_t Tensor::count() const {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

namespace {

using detail::OpType;
using detail::Request;
using detail::Work;

[[noreturn]] void invalid(const std::string& message) { throw Error(Error::Code::InvalidArgument, message); }

// Runs `fn` on `comm`, or on the default communicator when `comm` is null;
// errors name the rank (as the job numbers it) and host.
template <typename Fn>
auto on_communicator(Communicator* comm, const char* what, Fn&& fn) {
  try {
    detail::check_not_forked();
    if (!comm) {
      if (!is_initialized()) invalid("call trainrun::init() before using the engine");
      comm = &init();
    }
    return fn(*comm);
  } catch (const Error& e) {
    const std::string where =
        comm ? "rank " + std::to_string(comm->job_rank(comm->rank())) + " (" + comm->hostname() + "): " : "";
    throw Error(e.code(), where + what + e.what());
  }
}

// The same on the engine of that communicator (started here if need be).
template <typename Fn>
auto call(Communicator* comm, const char* what, Fn&& fn) {
  return on_communicator(comm, what, [&](Communicator& c) { return fn(detail::CommunicatorAccess::engine(c)); });
}

void check_name(const std::string& name) {
  if (name.empty()) invalid("the tensor name is empty");
  if (name[0] == detail::kReservedPrefix) {
    invalid("'" + name + "': names starting with '" + detail::kReservedPrefix + "' are reserved");
  }
}

Request tensor_request(OpType op, const std::string& name, const Tensor& t) {
  check_name(name);
  for (auto d : t.shape) {
    if (d < 0) invalid("'" + name + "' has shape " + detail::shape_text(t.shape) + ": dimensions must be >= 0");
  }
  if (t.device != kCpu && op != OpType::Allreduce && op != OpType::Broadcast) {
    throw Error(Error::Code::Unsupported, "'" + name + "' is on CUDA device " + std::to_string(t.device) +
                                              ": the engine's " + detail::to_string(op) +
                                              " takes host memory (device kCpu) only; allreduce and broadcast "
                                              "take CUDA memory");
  }
  const std::size_t count =
      detail::checked_elements(t.shape, t.type, "'" + name + "' has shape " + detail::shape_text(t.shape));
  if (!t.data && count > 0) invalid("'" + name + "' has no data (null pointer)");
  const bool rows = op == OpType::Allgather || op == OpType::Alltoall || op == OpType::Reducescatter;
  if (rows && t.shape.empty()) {
    invalid("'" + name + "': " + detail::to_string(op) + " needs a tensor with at least one dimension");
  }
  Request r;
  r.name = name;
  r.op = op;
  r.type = t.type;
  r.shape = t.shape;
  r.device = t.device;
  return r;
}

void set_scales(Request& r, double prescale, double postscale) {
  if (!std::isfinite(prescale) || !std::isfinite(postscale)) {
    invalid("'" + r.name + "': prescale and postscale must be finite");
  }
  if ((prescale != 1.0 || postscale != 1.0) && r.type == DataType::Bool) {
    invalid("'" + r.name + "': prescale and postscale need a numeric dtype, not bool");
  }
  if ((prescale != 1.0 || postscale != 1.0) && r.device != kCpu) {
    throw Error(Error::Code::Unsupported, "'" + r.name +
                                              "': prescale and postscale of CUDA memory are not supported "
                                              "(the engine scales host memory); scale on the device");
  }
  r.prescale = prescale;
  r.postscale = postscale;
}

// NCCL has no 16-bit integer type, so the nccl backend refuses to reduce
// Int16 CUDA memory: refused here, as the backend's refusal would stop the engine.
void check_reducible(const Communicator& comm, const Request& r, const std::string& name) {
  if (r.type == DataType::Int16 && r.on_cuda() && comm.backend_name() == "nccl") {
    throw Error(Error::Code::Unsupported, "'" + name + "': nccl cannot reduce " + to_string(r.type) +
                                              " (NCCL has no 16-bit integer type); reduce int32, or a host tensor");
  }
}

Work work_for(Request request, const Tensor& tensor) {
  Work work;
  work.request = std::move(request);
  work.data = {tensor.data};
  return work;
}

}  // namespace

Handle allreduce_async(Communicator& comm, const std::string& name, const Tensor& tensor, ReduceOp op, double prescale,
                       double postscale) {
  return call(&comm, "allreduce_async: ", [&](detail::Engine& engine) {
    Request r = tensor_request(OpType::Allreduce, name, tensor);
    r.reduce_op = op;
    set_scales(r, prescale, postscale);
    check_reducible(comm, r, name);
    return engine.submit(work_for(std::move(r), tensor));
  });
}

Handle grouped_allreduce_async(Communicator& comm, const std::vector<std::string>& names,
                               const std::vector<Tensor>& tensors, ReduceOp op, double prescale, double postscale) {
  return call(&comm, "grouped_allreduce_async: ", [&](detail::Engine& engine) {
    if (names.empty() || names.size() != tensors.size()) {
      invalid(std::to_string(names.size()) + " names for " + std::to_string(tensors.size()) +
              " tensors (need the same number, at least one)");
    }
    Work work;
    Request& r = work.request;
    r.name = std::string(1, detail::kReservedPrefix) + "group." + names[0];
    r.type = tensors[0].type;
    r.device = tensors[0].device;
    r.reduce_op = op;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const Request member = tensor_request(OpType::Allreduce, names[i], tensors[i]);
      if (member.type != r.type) {
        invalid("'" + names[i] + "' is " + to_string(member.type) + " but '" + names[0] + "' is " + to_string(r.type) +
                ": a group has one dtype");
      }
      if (member.on_cuda() != r.on_cuda()) {
        auto memory = [](const Request& m) { return m.on_cuda() ? "CUDA memory" : "host memory"; };
        invalid("'" + names[i] + "' is in " + memory(member) + " but '" + names[0] + "' in " + memory(r) +
                ": a group is all host or all CUDA memory");
      }
      if (!seen.insert(names[i]).second) invalid("'" + names[i] + "' appears twice in the group");
      r.members.push_back({names[i], tensors[i].shape});
      work.data.push_back(tensors[i].data);
    }
    set_scales(r, prescale, postscale);
    check_reducible(comm, r, names[0]);
    return engine.submit(std::move(work));
  });
}

Handle allgather_async(Communicator& comm, const std::string& name, const Tensor& tensor) {
  return call(&comm, "allgather_async: ", [&](detail::Engine& engine) {
    return engine.submit(work_for(tensor_request(OpType::Allgather, name, tensor), tensor));
  });
}

Handle broadcast_async(Communicator& comm, const std::string& name, const Tensor& tensor, int root) {
  return call(&comm, "broadcast_async: ", [&](detail::Engine& engine) {
    Request r = tensor_request(OpType::Broadcast, name, tensor);
    if (root < 0 || root >= engine.size()) {
      invalid("'" + name + "': root " + std::to_string(root) + " is not a rank of this " +
              std::to_string(engine.size()) + "-rank world");
    }
    r.root = root;
    return engine.submit(work_for(std::move(r), tensor));
  });
}

Handle alltoall_async(Communicator& comm, const std::string& name, const Tensor& tensor,
                      const std::vector<std::int64_t>& splits) {
  return call(&comm, "alltoall_async: ", [&](detail::Engine& engine) {
    Work work = work_for(tensor_request(OpType::Alltoall, name, tensor), tensor);
    const std::int64_t rows = tensor.shape[0], size = engine.size();
    work.splits = splits;
    if (splits.empty()) {
      if (rows % size != 0) {
        invalid("'" + name + "': " + std::to_string(rows) + " rows do not split evenly over " + std::to_string(size) +
                " ranks; pass splits");
      }
      work.splits.assign(static_cast<std::size_t>(size), rows / size);
    }
    // Each split at most `rows` (checked against 2^47 bytes): the sum below cannot overflow.
    const bool negative =
        std::any_of(work.splits.begin(), work.splits.end(), [rows](auto s) { return s < 0 || s > rows; });
    const std::int64_t sum = std::accumulate(work.splits.begin(), work.splits.end(), std::int64_t{0});
    if (static_cast<std::int64_t>(work.splits.size()) != size || negative || sum != rows) {
      invalid("'" + name + "': splits " + detail::shape_text(work.splits) + " must be " + std::to_string(size) +
              " non-negative row counts adding up to " + std::to_string(rows));
    }
    return engine.submit(std::move(work));
  });
}

Handle reducescatter_async(Communicator& comm, const std::string& name, const Tensor& tensor, ReduceOp op) {
  return call(&comm, "reducescatter_async: ", [&](detail::Engine& engine) {
    Request r = tensor_request(OpType::Reducescatter, name, tensor);
    r.reduce_op = op;
    return engine.submit(work_for(std::move(r), tensor));
  });
}

bool poll(Communicator& comm, Handle handle) {
  return call(&comm, "poll: ", [&](detail::Engine& engine) { return engine.poll(handle); });
}

Output synchronize(Communicator& comm, Handle handle) {
  return call(&comm, "", [&](detail::Engine& engine) { return engine.wait(handle); });
}

void barrier(Communicator& comm) {
  call(&comm, "barrier: ", [&](detail::Engine& engine) {
    Work work;
    work.request.op = OpType::Barrier;
    engine.wait(engine.submit(std::move(work)));
  });
}

int join(Communicator& comm) {
  return call(&comm, "join: ", [&](detail::Engine& engine) { return engine.join(); });
}

// The default communicator for the engine calls without one; errors as call() gives them.
Communicator* default_communicator(const char* what) {
  return call(nullptr, what, [](detail::Engine&) { return &init(); });
}

Handle allreduce_async(const std::string& name, const Tensor& tensor, ReduceOp op, double prescale, double postscale) {
  return allreduce_async(*default_communicator("allreduce_async: "), name, tensor, op, prescale, postscale);
}

Handle grouped_allreduce_async(const std::vector<std::string>& names, const std::vector<Tensor>& tensors, ReduceOp op,
                               double prescale, double postscale) {
  return grouped_allreduce_async(*default_communicator("grouped_allreduce_async: "), names, tensors, op, prescale,
                                 postscale);
}

Handle allgather_async(const std::string& name, const Tensor& tensor) {
  return allgather_async(*default_communicator("allgather_async: "), name, tensor);
}

Handle broadcast_async(const std::string& name, const Tensor& tensor, int root) {
  return broadcast_async(*default_communicator("broadcast_async: "), name, tensor, root);
}

Handle alltoall_async(const std::string& name, const Tensor& tensor, const std::vector<std::int64_t>& splits) {
  return alltoall_async(*default_communicator("alltoall_async: "), name, tensor, splits);
}

Handle reducescatter_async(const std::string& name, const Tensor& tensor, ReduceOp op) {
  return reducescatter_async(*default_communicator("reducescatter_async: "), name, tensor, op);
}

bool poll(Handle handle) { return poll(*default_communicator("poll: "), handle); }

Output synchronize(Handle handle) { return synchronize(*default_communicator(""), handle); }

void barrier() { barrier(*default_communicator("barrier: ")); }

int join() { return join(*default_communicator("join: ")); }

void start_timeline(const std::string& path, bool mark_cycles) {
  on_communicator(nullptr, "start_timeline: ", [&](Communicator& comm) {
    detail::CommunicatorAccess::start_timeline(comm, path, mark_cycles);
  });
}

void stop_timeline() {
  on_communicator(nullptr,
                  "stop_timeline: ", [](Communicator& comm) { detail::CommunicatorAccess::stop_timeline(comm); });
}

}  // namespace trainrun
