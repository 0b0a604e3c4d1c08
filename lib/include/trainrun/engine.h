// The coordination engine (docs/design.md §5.2): asynchronous, named
// collectives that ranks may submit in any order. A background thread per
// process negotiates which names every rank has submitted, checks that the
// ranks agree on op, dtype, shape, root and scale (a disagreement is an
// Error of code Mismatch on every rank), fuses small allreduces into one
// backend call and runs the same ops in the same order everywhere.
//
//   trainrun::init();
//   trainrun::Handle h = trainrun::allreduce_async("fc.weight", {grad.data(),
//       trainrun::DataType::Float32, {17, 23}}, trainrun::ReduceOp::Average);
//   ...                      // submit more, in any order
//   trainrun::synchronize(h);
//
// Rules:
// - Call trainrun::init() first. The engine starts at the first engine call
//   and stops at trainrun::shutdown(). Every rank must make its first engine
//   call before its next core call (as with any collective, in the same
//   order on every rank).
// - While the engine runs, the core calls of the Communicator (allreduce,
//   broadcast, ...) are negotiated and run by the engine's thread, in order
//   (each waits for the next cycle, at most TRAINRUN_CYCLE_TIME_MS); they
//   never interleave with engine traffic.
// - A name may be in flight only once per rank; submitting it again before
//   its handle was synchronized (even if the op already completed) throws
//   Error(InvalidArgument). Names starting with
//   '#' are reserved.
// - The tensor's memory must stay valid and untouched until the handle
//   completes. Host memory (device kCpu) everywhere; CUDA memory (device >= 0,
//   the rank's GPU) in allreduce and broadcast, with prescale and postscale 1,
//   fused into a device buffer, through NCCL or staged (docs/gpus.md): the
//   others are Error(Unsupported), as is an int16 allreduce through NCCL,
//   and a rank that joined fails them.
// - Every function here is thread-safe.
// Settings come from the environment (man 3 trainrun): TRAINRUN_FUSION_THRESHOLD,
// TRAINRUN_CYCLE_TIME_MS, TRAINRUN_CACHE_CAPACITY, TRAINRUN_TIMELINE,
// TRAINRUN_TIMELINE_MARK_CYCLES,
// TRAINRUN_STALL_WARNING, TRAINRUN_STALL_SHUTDOWN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trainrun/types.h"

namespace trainrun {

class Communicator;

inline constexpr int kCpu = -1;  // Tensor::device of host memory; >= 0: a CUDA device

// A non-owning view of a dense tensor. An empty shape is a scalar.
struct Tensor {
  void* data = nullptr;
  DataType type = DataType::Float32;
  std::vector<std::int64_t> shape;
  int device = kCpu;

  std::size_t count() const;  // elements: the product of shape
  std::size_t bytes() const { return count() * size_of(type); }
};

// Identifies one submitted operation until synchronize() returns.
struct Handle {
  std::uint64_t id = 0;
};

// What synchronize() returns. For allreduce and broadcast the result is in
// the submitted tensor and `data` is empty; allgather, alltoall and
// reducescatter allocate their result here.
struct Output {
  DataType type = DataType::Float32;
  std::vector<std::int64_t> shape;
  std::vector<char> data;
  std::vector<std::int64_t> received_splits;  // alltoall: rows from each rank
};

// In place: the reduced value replaces the tensor's contents. prescale and
// postscale multiply before and after the reduction (floating types only).
Handle allreduce_async(const std::string& name, const Tensor& tensor, ReduceOp op = ReduceOp::Sum,
                       double prescale = 1.0, double postscale = 1.0);
// One handle for several tensors, negotiated and run together.
Handle grouped_allreduce_async(const std::vector<std::string>& names, const std::vector<Tensor>& tensors,
                               ReduceOp op = ReduceOp::Sum, double prescale = 1.0, double postscale = 1.0);
// Concatenates every rank's tensor along the first dimension, which may
// differ between ranks; the other dimensions must agree.
Handle allgather_async(const std::string& name, const Tensor& tensor);
// In place: root's tensor replaces every other rank's.
Handle broadcast_async(const std::string& name, const Tensor& tensor, int root);
// Rows [sum(splits[0..r)), +splits[r]) of the first dimension go to rank r;
// the result is what every rank sent here, rank by rank. Empty splits: an
// even split (the first dimension must divide by size()).
Handle alltoall_async(const std::string& name, const Tensor& tensor, const std::vector<std::int64_t>& splits = {});
// Reduces the tensor across ranks and gives rank r its share of the first
// dimension: rows/size rows, one more on the first rows%size ranks.
Handle reducescatter_async(const std::string& name, const Tensor& tensor, ReduceOp op = ReduceOp::Sum);

// True once the operation completed (successfully or not).
bool poll(Handle handle);
// Waits for the operation, forgets the handle, and returns its output;
// throws the operation's trainrun::Error if it failed.
Output synchronize(Handle handle);

// Blocks until every rank called barrier().
void barrier();
// Declares this rank out of data: until every rank has joined, it takes
// part in the other ranks' allreduces with the op's identity (e.g. zeros
// for Sum; Average still divides by size()). As in Horovod, any other op
// fails on every rank while a rank has joined, naming that rank.
// Blocks until every rank joined; returns the rank that joined last.
int join();

// The timeline at run time (Horovod's hvd.start_timeline): from now on
// rank 0 writes what the engine does to `path` as Chrome-trace JSON
// (chrome://tracing, Perfetto), as TRAINRUN_TIMELINE does from the start. A
// timeline being written (TRAINRUN_TIMELINE's or an earlier call's) is
// closed first, complete; the same path again changes only mark_cycles.
// mark_cycles adds a CYCLE_START mark at every negotiation cycle. Not a
// collective: it does not start the engine, and on other ranks it does
// nothing. Throws Error(Io) naming the path when it cannot be written.
void start_timeline(const std::string& path, bool mark_cycles = false);
// Closes the timeline file (a complete JSON array) before it returns;
// nothing when none is written. TRAINRUN_TIMELINE then no longer applies.
void stop_timeline();

// The same on another communicator than the default one, e.g. a process
// set's (Communicator::subset): each communicator has its own engine,
// negotiated among its ranks only (its rank 0 coordinates), so a set's
// ops run beside the job's. Ranks and roots are the communicator's own.
// Handles are unique in the process; poll and synchronize them with the
// communicator that made them.
Handle allreduce_async(Communicator& comm, const std::string& name, const Tensor& tensor, ReduceOp op = ReduceOp::Sum,
                       double prescale = 1.0, double postscale = 1.0);
Handle grouped_allreduce_async(Communicator& comm, const std::vector<std::string>& names,
                               const std::vector<Tensor>& tensors, ReduceOp op = ReduceOp::Sum, double prescale = 1.0,
                               double postscale = 1.0);
Handle allgather_async(Communicator& comm, const std::string& name, const Tensor& tensor);
Handle broadcast_async(Communicator& comm, const std::string& name, const Tensor& tensor, int root);
Handle alltoall_async(Communicator& comm, const std::string& name, const Tensor& tensor,
                      const std::vector<std::int64_t>& splits = {});
Handle reducescatter_async(Communicator& comm, const std::string& name, const Tensor& tensor,
                           ReduceOp op = ReduceOp::Sum);
bool poll(Communicator& comm, Handle handle);
Output synchronize(Communicator& comm, Handle handle);
void barrier(Communicator& comm);
int join(Communicator& comm);

}  // namespace trainrun
