// The core collective API (docs/design.md §5.1). Every rank issues the same calls in
// the same order; each call blocks until this rank's part is complete.
//
// Buffers are host memory or CUDA device memory, all of one call's buffers
// on the same side. CUDA buffers go through NCCL when the build has it and
// every rank can run it, else they are staged through pinned host memory
// (TRAINRUN_BACKEND=nccl insists on NCCL; =tcp or =mpi always stages).
// A call on CUDA buffers is ordered after work queued on the legacy default
// stream, like cudaMemcpy; synchronize other streams before the call.
// `count` is in elements of `type`. In-place forms:
//   allreduce, broadcast:  send == recv.
//   reduce:                send == recv at the root.
//   allgather(v):          send == recv, or send == nullptr: this rank's
//                          block is already at its offset in recv.
//   reducescatter:         send == recv: the full input is in recv; the
//                          result lands at the start of recv.
//   alltoall:              send == recv.
// A Communicator is not thread-safe: use it from one thread at a time.
// It is owned by trainrun::init() and lives until trainrun::shutdown().
// Once the engine (trainrun/engine.h) runs, these calls are negotiated and
// run by the engine's thread, in the order every rank made them.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "trainrun/types.h"

namespace trainrun {

namespace detail {
class CommunicatorAccess;
}  // namespace detail

class Communicator {
 public:
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  int local_rank() const;
  int local_size() const;
  int cross_rank() const;
  int cross_size() const;
  const std::string& hostname() const;
  std::string backend_name() const;  // "tcp" | "mpi" | "nccl"

  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op);
  // recv holds size() * count elements, rank r's block at r * count.
  void allgather(const void* send, void* recv, std::size_t count, DataType type);
  // recv holds sum(counts) elements, rank r's block after those of ranks < r.
  void allgatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>& counts,
                  DataType type);
  void broadcast(void* buf, std::size_t count, DataType type, int root);
  // Every rank's send reduced into recv at `root` (MPI_Reduce); on the other
  // ranks recv is not touched and may be null.
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root);
  // send and recv hold size() * count elements; block r goes to / comes from rank r.
  void alltoall(const void* send, void* recv, std::size_t count, DataType type);
  // send holds size() * count elements; recv gets this rank's reduced block.
  void reducescatter(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op);
  void barrier();

  // Point-to-point, not collective: only the two ranks take part. send
  // returns once buf may be reused and does not wait for `peer` to call
  // recv (on the tcp backend; MPI_Send may wait for large messages). recv
  // waits for the next message with `tag` from `peer`, or from any rank
  // with kAnySource, and returns its sender. Messages between a pair with
  // one tag arrive in send order; tags keep them apart. Unlike the calls
  // above, send and recv may come from several threads at once and between
  // collectives in any order on each rank. Throws Error(InvalidArgument)
  // for a peer out of range or this rank, Error(Mismatch) naming both ranks
  // when the message's size or type differ from recv's, Error(Io) when the
  // peer exited first, Error(Timeout) past the collective timeout, and
  // Error(Unsupported) for a CUDA buffer: host buffers only (under the nccl
  // backend they take the CPU backend beside NCCL).
  static constexpr int kAnySource = -1;
  void send(const void* buf, std::size_t count, DataType type, int peer, int tag = 0);
  int recv(void* buf, std::size_t count, DataType type, int peer, int tag = 0);

  // Host memory for buffers the collectives read and write in place (the
  // role of MPI_Alloc_mem): on one host with shared memory, an allreduce of
  // 1 MiB or more whose send and recv every rank took from here moves about
  // half the bytes of one over ordinary memory (the host's other ranks map
  // this memory; docs/backends.md). Elsewhere, or once it is used up, it is
  // ordinary memory. 64-byte aligned, not zeroed; nullptr when no memory is
  // left. Not collective; thread-safe. Give it back with free_memory before
  // trainrun::shutdown() (it is unmapped then).
  void* allocate_memory(std::size_t bytes);
  void free_memory(void* p);

  // A process set: a communicator over `ranks` of this one (ranks of this
  // communicator, in any order; the set numbers them ascending). Collective
  // over every rank of this communicator, like any call here: all of them
  // call it with the same ranks, in the same order of calls. Returns the
  // set's communicator on its members and null on the other ranks. The set
  // has its own connections (shared memory, TCP mesh, MPI_Comm_split, its
  // own NCCL communicator) and its own engine, so it runs beside this one;
  // rank 0 of the set coordinates it. It must be destroyed before
  // trainrun::shutdown(). Throws Error(InvalidArgument) for an empty set, a
  // rank out of range or twice, Error(Mismatch) when ranks disagree.
  std::unique_ptr<Communicator> subset(const std::vector<int>& ranks);
  // Rank r of this communicator as the job numbers it (r itself unless this
  // is a process set).
  int job_rank(int r) const;

 private:
  // The library's own way in (lib/communicator_access.h): it makes
  // communicators and reaches their backend and engine.
  friend class detail::CommunicatorAccess;
  struct Impl;  // the world, the backend, the engine (lib/communicator.cc)
  explicit Communicator(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

// Starts the process-wide communicator from the environment (TRAINRUN_*,
// else OMPI_COMM_WORLD_*, else SLURM_*, else a single process) on the first
// call; later calls return the same one. Throws trainrun::Error.
Communicator& init();
// Tears the communicator down; init() may be called again afterwards.
void shutdown();
bool is_initialized();

}  // namespace trainrun
