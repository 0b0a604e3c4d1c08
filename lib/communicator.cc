#include "trainrun/communicator.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>

#include "backends/backend.h"
#include "backends/call_descriptor.h"
#include "lib/call_size.h"
#include "backends/core_call.h"
#include "lib/communicator_access.h"
#include "lib/engine/engine.h"
#include "lib/fork_guard.h"
#include "lib/rendezvous_client.h"
#include "lib/subset_world.h"
#include "contract/job_records.h"
#include "contract/kv_keys.h"
#include "contract/world.h"
#include "trainrun/error.h"

namespace trainrun {
namespace {

using detail::CoreOp;

[[noreturn]] void invalid(const std::string& message) { throw Error(Error::Code::InvalidArgument, message); }

void require(bool ok, const char* what) {
  if (!ok) invalid(what);
}

void check_root(int root, const detail::World& world) {
  if (root < 0 || root >= world.size) {
    invalid("root " + std::to_string(root) + " is not a rank of this " + std::to_string(world.size) + "-rank world");
  }
}

const char* offset(const void* base, std::size_t elements, DataType type) {
  return static_cast<const char*>(base) + elements * size_of(type);
}

// What every rank must agree on for a core call negotiated by the engine
// (Impl::call adds which call it is).
detail::Request core_request(DataType type, std::vector<std::int64_t> shape, ReduceOp reduce_op = ReduceOp::Sum,
                             int root = 0) {
  detail::Request r;
  r.type = type;
  r.shape = std::move(shape);
  r.reduce_op = reduce_op;
  r.root = root;
  return r;
}

std::int64_t as_dim(std::size_t n) { return static_cast<std::int64_t>(n); }

// A timeline file rank 0 could not write reaches the launcher's report
// through its store.
void report_timeline_failure(const detail::World& world, const std::string& path, const std::string& error) {
  detail::publish_job_key(world, contract::kKeyTimelineError, detail::encode_timeline_error({path, error}));
}

}  // namespace

// Communicator::Impl: what a Communicator is made of (its world, its
// backend, its engine once started); only this file sees it. Owned by its
// Communicator and used like it, from one thread at a time, except
// engine(), which is thread-safe.
struct Communicator::Impl {
  Impl(std::unique_ptr<detail::World> world, std::unique_ptr<detail::Backend> backend)
      : world_(std::move(world)), backend_(std::move(backend)),
        timeline_([world = world_.get()](const std::string& path, const std::string& error) {
          report_timeline_failure(*world, path, error);
        }) {}
  ~Impl() { engine_.reset(); }

  detail::Engine& engine();
  // The timeline at run time (trainrun::start_timeline): rank 0 of the job
  // writes it, whether or not the engine runs yet; once called, the
  // environment's TRAINRUN_TIMELINE no longer applies to this communicator.
  void start_timeline(const std::string& path, bool mark_cycles);
  void stop_timeline();
  template <typename Check, typename Negotiated, typename Run>
  void call(detail::CoreOp op, Check&& check, Negotiated&& request, Run&& run);
  // The engine while it runs, else null.
  detail::Engine* running_engine();
  void check_call_agrees(const detail::CallDescriptor& call);

  std::unique_ptr<detail::World> world_;
  std::unique_ptr<detail::Backend> backend_;
  std::uint64_t core_calls_ = 0;    // numbers core calls in wait messages (backends/core_call.h)
  std::uint64_t subsets_made_ = 0;  // names each process set made from this one
  std::mutex engine_mutex_;
  std::atomic<bool> engine_made_{false};    // engine_ set (it stays until the communicator goes)
  detail::Timeline timeline_;               // the engine records into it: declared before engine_
  bool timeline_set_ = false;               // start/stop_timeline called (under engine_mutex_)
  std::unique_ptr<detail::Engine> engine_;  // declared last: stops before the backend goes
};

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Communicator::~Communicator() = default;

int Communicator::rank() const { return impl_->world_->rank; }
int Communicator::size() const { return impl_->world_->size; }
int Communicator::local_rank() const { return impl_->world_->local_rank; }
int Communicator::local_size() const { return impl_->world_->local_size; }
int Communicator::cross_rank() const { return impl_->world_->cross_rank; }
int Communicator::cross_size() const { return impl_->world_->cross_size; }
const std::string& Communicator::hostname() const { return impl_->world_->hostname; }
std::string Communicator::backend_name() const { return impl_->backend_->name(); }

void* Communicator::allocate_memory(std::size_t bytes) {
  if (std::shared_ptr<detail::HostMemory> heap = impl_->backend_->host_memory()) {
    if (void* p = heap->allocate(bytes)) return p;
  }
  return std::aligned_alloc(64, (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64);
}

void Communicator::free_memory(void* p) {
  std::shared_ptr<detail::HostMemory> heap = impl_->backend_->host_memory();
  if (!heap || !heap->free(p)) std::free(p);
}
int Communicator::job_rank(int r) const { return impl_->world_->job_rank(r); }

namespace detail {

std::unique_ptr<Communicator> CommunicatorAccess::make(std::unique_ptr<World> world, std::unique_ptr<Backend> backend) {
  auto impl = std::make_unique<Communicator::Impl>(std::move(world), std::move(backend));
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

Backend& CommunicatorAccess::backend(Communicator& comm) { return *comm.impl_->backend_; }
Engine& CommunicatorAccess::engine(Communicator& comm) { return comm.impl_->engine(); }

void CommunicatorAccess::start_timeline(Communicator& comm, const std::string& path, bool mark_cycles) {
  comm.impl_->start_timeline(path, mark_cycles);
}

void CommunicatorAccess::stop_timeline(Communicator& comm) { comm.impl_->stop_timeline(); }

void CommunicatorAccess::set_process_set_id(Communicator& comm, int id) {
  std::lock_guard lock(comm.impl_->engine_mutex_);  // the engine reads it as it starts
  comm.impl_->world_->set_id = id;
}

}  // namespace detail

detail::Engine& Communicator::Impl::engine() {
  std::lock_guard lock(engine_mutex_);
  if (!engine_) {
    detail::EngineOptions options = detail::engine_options_from_env(&std::getenv);
    // A process set's engine leaves the timeline to the job's.
    if (!world_->members.empty() || timeline_set_) options.timeline_path.clear();
    engine_ = std::make_unique<detail::Engine>(*world_, *backend_, std::move(options), timeline_);
    engine_made_.store(true, std::memory_order_release);
  }
  return *engine_;
}

void Communicator::Impl::start_timeline(const std::string& path, bool mark_cycles) {
  if (path.empty()) invalid("the timeline path is empty");
  std::lock_guard lock(engine_mutex_);
  timeline_set_ = true;
  if (world_->rank == 0 && world_->members.empty()) timeline_.start(path, mark_cycles);
}

void Communicator::Impl::stop_timeline() {
  std::lock_guard lock(engine_mutex_);
  timeline_set_ = true;
  timeline_.stop();
}

// No lock until an engine exists: the core calls of a program that never
// starts one pay nothing for it.
detail::Engine* Communicator::Impl::running_engine() {
  if (!engine_made_.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard lock(engine_mutex_);
  return engine_ && engine_->running() ? engine_.get() : nullptr;
}

// TRAINRUN_CHECK_CALLS: every rank's descriptor of this call, gathered
// before the call itself, must agree.
void Communicator::Impl::check_call_agrees(const detail::CallDescriptor& call) {
  if (world_->size == 1) return;
  std::vector<detail::CallDescriptor> all(static_cast<std::size_t>(world_->size));
  backend_->allgather(&call, all.data(), sizeof call / sizeof(std::uint64_t), DataType::Int64);
  detail::check_calls_agree(all.data(), world_->size, [](int r) { return "rank " + std::to_string(r); });
}

// Every core call: refused in a forked child, its arguments checked
// (`check` validates them, sizes included, and describes the call), the
// descriptor left where the shared-memory round carries it to the peers
// (backends/core_call.h), then run: on this thread, or, while the engine runs,
// on the engine's once every rank has reached the call `request()`
// describes, with `op` (the engine compares the requests itself). Every error leaving
// a collective names the rank, its host and the op. Backends may only
// enqueue (NCCL): the core API returns when done.
template <typename Check, typename Negotiated, typename Run>
void Communicator::Impl::call(detail::CoreOp op, Check&& check, Negotiated&& request, Run&& run) {
  const char* name = detail::to_string(op);
  try {
    detail::check_not_forked();
    const detail::CallDescriptor descriptor = check();
    const detail::CoreCallScope scope(op, ++core_calls_, descriptor);
    if (detail::Engine* engine = running_engine()) {
      detail::Request negotiated = request();
      negotiated.core_op = op;
      engine->run_core(std::move(negotiated), run);
    } else {
      if (world_->check_calls) check_call_agrees(descriptor);
      run();
    }
    backend_->synchronize();
  } catch (const Error& e) {
    throw Error(e.code(), "rank " + std::to_string(world_->job_rank(world_->rank)) + " (" + world_->hostname +
                              "): " + name + ": " + e.what());
  }
}

void Communicator::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  impl_->call(
      CoreOp::Allreduce,
      [&] {
        detail::checked_bytes(count, type);
        require(count == 0 || (send && recv), "send and recv must not be null");
        return detail::describe_call(CoreOp::Allreduce, type, count, op);
      },
      [&] { return core_request(type, {as_dim(count)}, op); },
      [&] { impl_->backend_->allreduce(send, recv, count, type, op); });
}

void Communicator::allgather(const void* send, void* recv, std::size_t count, DataType type) {
  bool in_place = false;
  impl_->call(
      CoreOp::Allgather,
      [&] {
        detail::checked_bytes(count, type, static_cast<std::size_t>(impl_->world_->size));
        require(count == 0 || recv, "recv must not be null");
        in_place = !send || send == recv || send == offset(recv, count * impl_->world_->rank, type);
        return detail::describe_call(CoreOp::Allgather, type, count);
      },
      [&] { return core_request(type, {as_dim(count)}); },
      [&] { impl_->backend_->allgather(in_place ? nullptr : send, recv, count, type); });
}

void Communicator::allgatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>& counts,
                              DataType type) {
  bool in_place = false;
  impl_->call(
      CoreOp::Allgatherv,
      [&] {
        if (counts.size() != static_cast<std::size_t>(impl_->world_->size)) {
          invalid("counts has " + std::to_string(counts.size()) + " entries, the world has " +
                  std::to_string(impl_->world_->size) + " ranks");
        }
        if (counts[impl_->world_->rank] != count) {
          invalid("count " + std::to_string(count) + " differs from counts[" + std::to_string(impl_->world_->rank) +
                  "] = " + std::to_string(counts[impl_->world_->rank]));
        }
        require(detail::checked_bytes(counts, type) == 0 || recv, "recv must not be null");
        const std::size_t before =
            std::accumulate(counts.begin(), counts.begin() + impl_->world_->rank, std::size_t{0});
        in_place = !send || send == recv || send == offset(recv, before, type);
        return detail::describe_call(CoreOp::Allgatherv, type, counts);
      },
      // Every rank passes the same counts, so they are what must agree.
      [&] { return core_request(type, std::vector<std::int64_t>(counts.begin(), counts.end())); },
      [&] { impl_->backend_->allgatherv(in_place ? nullptr : send, recv, counts, type); });
}

void Communicator::broadcast(void* buf, std::size_t count, DataType type, int root) {
  impl_->call(
      CoreOp::Broadcast,
      [&] {
        check_root(root, *impl_->world_);
        detail::checked_bytes(count, type);
        require(count == 0 || buf, "buf must not be null");
        return detail::describe_call(CoreOp::Broadcast, type, count, ReduceOp::Sum, root);
      },
      [&] { return core_request(type, {as_dim(count)}, ReduceOp::Sum, root); },
      [&] { impl_->backend_->broadcast(buf, count, type, root); });
}

void Communicator::reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root) {
  const bool at_root = root == impl_->world_->rank;
  impl_->call(
      CoreOp::Reduce,
      [&] {
        check_root(root, *impl_->world_);
        detail::checked_bytes(count, type);
        require(count == 0 || (send && (recv || !at_root)), "send, and recv at the root, must not be null");
        return detail::describe_call(CoreOp::Reduce, type, count, op, root);
      },
      [&] { return core_request(type, {as_dim(count)}, op, root); },
      [&] { impl_->backend_->reduce(send, at_root ? recv : nullptr, count, type, op, root); });
}

void Communicator::alltoall(const void* send, void* recv, std::size_t count, DataType type) {
  impl_->call(
      CoreOp::Alltoall,
      [&] {
        detail::checked_bytes(count, type, static_cast<std::size_t>(impl_->world_->size));
        require(count == 0 || (send && recv), "send and recv must not be null");
        return detail::describe_call(CoreOp::Alltoall, type, count);
      },
      [&] { return core_request(type, {as_dim(count)}); },
      [&] {
        const std::vector<std::size_t> counts(static_cast<std::size_t>(impl_->world_->size), count);
        impl_->backend_->alltoall(send, counts, recv, counts, type);
      });
}

void Communicator::reducescatter(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  impl_->call(
      CoreOp::Reducescatter,
      [&] {
        detail::checked_bytes(count, type, static_cast<std::size_t>(impl_->world_->size));
        require(count == 0 || (send && recv), "send and recv must not be null");
        return detail::describe_call(CoreOp::Reducescatter, type, count, op);
      },
      [&] { return core_request(type, {as_dim(count)}, op); },
      [&] {
        const std::vector<std::size_t> counts(static_cast<std::size_t>(impl_->world_->size), count);
        impl_->backend_->reducescatter(send, recv, counts, type, op);
      });
}

namespace {

// The checks and error context of a point-to-point call; no engine, no
// core-call agreement (only two ranks take part, from any thread).
template <typename Run>
auto point_to_point(const detail::World& world, const char* name, std::size_t count, DataType type, const void* buf,
                    int peer, bool any, Run&& run) {
  try {
    detail::check_not_forked();
    const bool in_range = peer >= 0 && peer < world.size;
    if (!(any && peer == Communicator::kAnySource) && (!in_range || peer == world.rank)) {
      invalid((peer == world.rank ? std::string("peer ") + std::to_string(peer) + " is this rank"
                                  : "peer " + std::to_string(peer) + " is not a rank of this " +
                                        std::to_string(world.size) + "-rank world"));
    }
    if (world.size == 1) invalid("a 1-rank world has no other rank");
    detail::checked_bytes(count, type);
    require(count == 0 || buf, "buf must not be null");
    return run();
  } catch (const Error& e) {
    throw Error(e.code(), "rank " + std::to_string(world.job_rank(world.rank)) + " (" + world.hostname + "): " + name +
                              ": " + e.what());
  }
}

}  // namespace

void Communicator::send(const void* buf, std::size_t count, DataType type, int peer, int tag) {
  point_to_point(*impl_->world_, "send", count, type, buf, peer, false,
                 [&] { impl_->backend_->send(buf, count, type, peer, tag); });
}

int Communicator::recv(void* buf, std::size_t count, DataType type, int peer, int tag) {
  return point_to_point(*impl_->world_, "recv", count, type, buf, peer, true,
                        [&] { return impl_->backend_->recv(buf, count, type, peer, tag); });
}

// The ranks agree first (one allgather of SubsetRecords over this
// communicator), so that a rank passing other ranks fails every rank alike
// instead of leaving the set's members waiting for each other.
std::unique_ptr<Communicator> Communicator::subset(const std::vector<int>& ranks) {
  std::vector<int> sorted;
  std::unique_ptr<detail::World> member;
  std::unique_ptr<detail::Backend> backend;
  Impl& me = *impl_;
  const std::uint64_t ordinal = me.subsets_made_++;
  me.call(
      CoreOp::Subset,
      [&] {
        sorted = detail::checked_subset(ranks, me.world_->size);
        // The ranks themselves are compared below, with a clearer message.
        return detail::describe_call(CoreOp::Subset, DataType::Int64, 0);
      },
      [&] { return core_request(DataType::Int64, {}); },
      [&] {
        const detail::SubsetRecord mine = detail::subset_record(sorted, me.world_->hostname, ordinal);
        std::vector<detail::SubsetRecord> records(static_cast<std::size_t>(me.world_->size));
        me.backend_->allgather(&mine, records.data(), sizeof mine / sizeof(std::int64_t), DataType::Int64);
        detail::check_subset_agrees(records, *me.world_);
        const std::string set = me.world_->set + ".set" + std::to_string(ordinal);
        if (auto world = detail::subset_world(*me.world_, sorted, records, set)) {
          member = std::make_unique<detail::World>(std::move(*world));
        }
        backend = me.backend_->subset(sorted, member.get(), set);
      });
  if (!member) return nullptr;
  return detail::CommunicatorAccess::make(std::move(member), std::move(backend));
}

void Communicator::barrier() {
  impl_->call(
      CoreOp::Barrier, [] { return detail::describe_call(CoreOp::Barrier, DataType::UInt8, 0); },
      [] { return core_request(DataType::UInt8, {}); }, [&] { impl_->backend_->barrier(); });
}

}  // namespace trainrun
