#include "backends/mpi/mpi_backend.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <string>
#include <vector>

#include "backends/mpi/mpi_runtime.h"
#include "backends/mpi/mpi_types.h"
#include "backends/reduction.h"
#include "contract/environment.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

// MPI counts and displacements are int (Open MPI 4 has no MPI-4 large-count
// calls): larger counts are an error before anything is sent.
constexpr std::size_t kMaxCount = INT_MAX;

// A communicator this backend created; freed unless MPI is already gone.
struct OwnedComm {
  MPI_Comm handle = MPI_COMM_NULL;
  OwnedComm() = default;
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;
  ~OwnedComm() {
    if (handle != MPI_COMM_NULL && !MpiRuntime::finalized()) MPI_Comm_free(&handle);
  }
};

int as_count(std::size_t count, const char* what = "count") {
  if (count > kMaxCount) {
    throw Error(Error::Code::InvalidArgument, std::string(what) + " " + std::to_string(count) +
                                                  " exceeds MPI's limit of " + std::to_string(kMaxCount) + " elements");
  }
  return static_cast<int>(count);
}

bool uniform(const std::vector<std::size_t>& counts) {
  return std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) == counts.end();
}

class MpiBackend final : public Backend {
 public:
  explicit MpiBackend(World& world) : runtime_(MpiRuntime::acquire()) {
    // Our own errors return codes, on the world too when we own MPI.
    if (runtime_.initialised_by_us()) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_.handle), "MPI_Comm_dup");
    open(world);
  }

  // A process set's backend over `comm`, which it owns from here on.
  MpiBackend(World& world, MPI_Comm comm) : runtime_(MpiRuntime::acquire()) {
    comm_.handle = comm;
    open(world);
  }

  // MPI_Comm_split of this communicator: every rank calls it, those outside
  // the set with MPI_UNDEFINED. Ranks keep their order.
  std::unique_ptr<Backend> subset(const std::vector<int>& ranks, World* member, const std::string&) override {
    int level = MPI_THREAD_SINGLE;
    check_mpi(MPI_Query_thread(&level), "MPI_Query_thread");
    if (level != MPI_THREAD_MULTIPLE) {
      throw Error(Error::Code::Unsupported,
                  std::string("process sets on the mpi backend need MPI at MPI_THREAD_MULTIPLE (each set's engine "
                              "calls MPI from its own thread): set ") +
                      contract::kEnvMpiThreads +
                      "=multiple, or call MPI_Init_thread with MPI_THREAD_MULTIPLE "
                      "before trainrun::init(), or use the tcp backend");
    }
    const int position = static_cast<int>(std::find(ranks.begin(), ranks.end(), rank_) - ranks.begin());
    MPI_Comm comm = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(comm_.handle, member ? 0 : MPI_UNDEFINED, position, &comm), "MPI_Comm_split");
    if (!member) return nullptr;
    return std::make_unique<MpiBackend>(*member, comm);
  }

  std::string name() const override { return "mpi"; }

  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) override {
    const MPI_Datatype datatype = types_.datatype(type);
    const MPI_Op mpi_op = types_.op(type, op);
    check_mpi(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, as_count(count), datatype, mpi_op, comm_.handle),
              "MPI_Allreduce");
    if (op == ReduceOp::Average) divide_in_place(recv, count, type, size_);
  }

  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root) override {
    const MPI_Datatype datatype = types_.datatype(type);
    const MPI_Op mpi_op = types_.op(type, op);
    const void* from = rank_ == root && send == recv ? MPI_IN_PLACE : send;
    check_mpi(MPI_Reduce(from, recv, as_count(count), datatype, mpi_op, root, comm_.handle), "MPI_Reduce");
    if (op == ReduceOp::Average && rank_ == root) divide_in_place(recv, count, type, size_);
  }

  void allgather(const void* send, void* recv, std::size_t count, DataType type) override {
    if (count == 0) return;
    const MPI_Datatype datatype = types_.datatype(type);
    const int n = as_count(count);
    check_mpi(MPI_Allgather(send ? send : MPI_IN_PLACE, n, datatype, recv, n, datatype, comm_.handle), "MPI_Allgather");
  }

  void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type) override {
    if (fill(counts, counts_, displs_) == 0) return;
    const MPI_Datatype datatype = types_.datatype(type);
    check_mpi(MPI_Allgatherv(send ? send : MPI_IN_PLACE, counts_[rank_], datatype, recv, counts_.data(), displs_.data(),
                             datatype, comm_.handle),
              "MPI_Allgatherv");
  }

  void broadcast(void* buf, std::size_t count, DataType type, int root) override {
    const MPI_Datatype datatype = types_.datatype(type);
    check_mpi(MPI_Bcast(buf, as_count(count), datatype, root, comm_.handle), "MPI_Bcast");
  }

  void alltoall(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                const std::vector<std::size_t>& recv_counts, DataType type) override {
    // Always alltoallv: a rank whose own counts happen to be uniform cannot
    // tell whether its peers' are, and every rank must call the same collective.
    const MPI_Datatype datatype = types_.datatype(type);
    fill(send_counts, counts_, displs_);
    fill(recv_counts, recv_counts_, recv_displs_);
    check_mpi(MPI_Alltoallv(send, counts_.data(), displs_.data(), datatype, recv, recv_counts_.data(),
                            recv_displs_.data(), datatype, comm_.handle),
              "MPI_Alltoallv");
  }

  void reducescatter(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type,
                     ReduceOp op) override {
    const MPI_Datatype datatype = types_.datatype(type);
    const MPI_Op mpi_op = types_.op(type, op);
    if (fill(counts, counts_, displs_) == 0) return;
    if (uniform(counts)) {
      check_mpi(MPI_Reduce_scatter_block(send, recv, counts_[0], datatype, mpi_op, comm_.handle),
                "MPI_Reduce_scatter_block");
    } else {
      check_mpi(MPI_Reduce_scatter(send, recv, counts_.data(), datatype, mpi_op, comm_.handle), "MPI_Reduce_scatter");
    }
    if (op == ReduceOp::Average) divide_in_place(recv, counts[rank_], type, size_);
  }

  void barrier() override { check_mpi(MPI_Barrier(comm_.handle), "MPI_Barrier"); }

  void synchronize() override {}  // every call above completes before it returns

  // MPI keeps point-to-point apart from collectives on one communicator.
  // MPI_Send of a large message may wait for the matching receive; calls
  // from several threads at once need MPI_THREAD_MULTIPLE. MPI does not
  // carry the type: a size mismatch is caught, a type mismatch of one size
  // is not.
  void send(const void* buf, std::size_t count, DataType type, int peer, int tag) override {
    const std::size_t bytes = count * size_of(type);
    check_mpi(MPI_Send(buf, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_.handle), "MPI_Send");
  }
  int recv(void* buf, std::size_t count, DataType type, int peer, int tag) override {
    const int bytes = static_cast<int>(count * size_of(type));
    MPI_Status status;
    check_mpi(MPI_Probe(peer == kAnySource ? MPI_ANY_SOURCE : peer, tag, comm_.handle, &status), "MPI_Probe");
    int sent = 0;
    check_mpi(MPI_Get_count(&status, MPI_BYTE, &sent), "MPI_Get_count");
    if (sent != bytes) {
      throw Error(Error::Code::Mismatch, "rank " + std::to_string(status.MPI_SOURCE) + " sent " + std::to_string(sent) +
                                             " bytes with tag " + std::to_string(tag) + ", rank " +
                                             std::to_string(rank_) + " receives " + std::to_string(bytes) + " bytes");
    }
    check_mpi(MPI_Recv(buf, bytes, MPI_BYTE, status.MPI_SOURCE, tag, comm_.handle, MPI_STATUS_IGNORE), "MPI_Recv");
    return status.MPI_SOURCE;
  }

  void abort() noexcept override {
    if (!MpiRuntime::finalized()) MPI_Abort(comm_.handle, 1);
  }

 private:
  void open(World& world) {
    check_mpi(MPI_Comm_set_errhandler(comm_.handle, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(comm_.handle, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_.handle, &size_), "MPI_Comm_size");
    refine(world);
    counts_.resize(static_cast<std::size_t>(size_));
    displs_.resize(static_cast<std::size_t>(size_));
    recv_counts_.resize(static_cast<std::size_t>(size_));
    recv_displs_.resize(static_cast<std::size_t>(size_));
  }

  // MPI's view of the nodes is exact; the environment's was a guess (Open
  // MPI exports no host index) or, under trainrun, must agree with it.
  void refine(World& world) {
    if (size_ != world.size && world.source != World::Source::Single) {
      throw Error(Error::Code::InvalidArgument,
                  "MPI_COMM_WORLD has " + std::to_string(size_) + " process(es) but the job has " +
                      std::to_string(world.size) + " ranks (from " + to_string(world.source) +
                      "): start MPI jobs with mpirun, srun --mpi=pmix or trainrun --launcher mpirun");
    }
    OwnedComm local, cross;
    check_mpi(MPI_Comm_split_type(comm_.handle, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local.handle),
              "MPI_Comm_split_type");
    int local_rank = 0, local_size = 1, cross_rank = 0, cross_size = 1;
    check_mpi(MPI_Comm_rank(local.handle, &local_rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(local.handle, &local_size), "MPI_Comm_size");
    // Horovod's cross communicator: the same local rank on every node.
    check_mpi(MPI_Comm_split(comm_.handle, local_rank, rank_, &cross.handle), "MPI_Comm_split");
    check_mpi(MPI_Comm_rank(cross.handle, &cross_rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(cross.handle, &cross_size), "MPI_Comm_size");
    world.rank = rank_;
    world.size = size_;
    world.local_rank = local_rank;
    world.local_size = local_size;
    world.cross_rank = cross_rank;
    world.cross_size = cross_size;
  }

  // Per-rank counts and displacements as MPI ints; returns the total.
  static std::size_t fill(const std::vector<std::size_t>& counts, std::vector<int>& out_counts,
                          std::vector<int>& out_displs) {
    std::size_t total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      out_displs[r] = as_count(total, "offset");
      out_counts[r] = as_count(counts[r]);
      total += counts[r];
    }
    return total;
  }

  MpiRuntime& runtime_;
  MpiTypes types_;
  OwnedComm comm_;
  int rank_ = 0;
  int size_ = 1;
  // MPI's int count/displacement arrays, sized once: no allocation per call.
  std::vector<int> counts_, displs_, recv_counts_, recv_displs_;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_backend(const BackendContext& context) {
  return std::make_unique<MpiBackend>(context.world);
}

}  // namespace trainrun::detail
