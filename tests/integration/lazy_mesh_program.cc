// lazy_mesh_program: the light rank of the lazy-connection test
// (tests/integration/test_lazy_mesh.cc) and benchmark
// (tests/bench/lazy_mesh_bench.py). Its arguments are steps, in order:
//   allreduce   one allreduce of this rank's number; every rank checks the sum
//   alltoall    one alltoall of one Int32 per rank; every rank checks its blocks
//   p2p:A:B     rank A sends one Int32 to rank B, which checks it
//   sockets     every rank counts the sockets it holds (/proc/self/fd); rank 0
//               prints "sockets per rank: min X max Y" (the two allreduces
//               that gather them talk to the partners an allreduce already has)
//   exit:R      rank R exits now (code 0)
//   await:PATH  print "rank R: awaiting", then wait until PATH exists (a test's gate)
// Rank 0 prints "size N: ok" at the end. A wrong value prints what it got,
// an Error "rank R: error: WHAT"; either exits 1.
#include <trainrun/trainrun.h>

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

int socket_count() {
  int sockets = 0;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (const dirent* entry = ::readdir(dir)) {
      char target[64] = {};
      const std::string path = std::string("/proc/self/fd/") + entry->d_name;
      if (::readlink(path.c_str(), target, sizeof target - 1) > 0 && std::string(target).rfind("socket:", 0) == 0) {
        ++sockets;
      }
    }
    ::closedir(dir);
  }
  return sockets;
}

[[noreturn]] void wrong(int rank, const std::string& what) {
  std::printf("rank %d: wrong %s\n", rank, what.c_str());
  std::fflush(stdout);
  std::_Exit(1);
}

void allreduce(trainrun::Communicator& comm) {
  std::int64_t value = comm.rank();
  comm.allreduce(&value, &value, 1, trainrun::DataType::Int64, trainrun::ReduceOp::Sum);
  const std::int64_t n = comm.size();
  if (value != n * (n - 1) / 2) wrong(comm.rank(), "allreduce sum " + std::to_string(value));
}

void alltoall(trainrun::Communicator& comm) {
  const int n = comm.size();
  std::vector<std::int32_t> send(n), recv(n, -1);
  for (int to = 0; to < n; ++to) send[to] = comm.rank() * n + to;
  comm.alltoall(send.data(), recv.data(), 1, trainrun::DataType::Int32);
  for (int from = 0; from < n; ++from) {
    if (recv[from] != from * n + comm.rank()) wrong(comm.rank(), "alltoall block " + std::to_string(from));
  }
}

void p2p(trainrun::Communicator& comm, int from, int to) {
  std::int32_t value = 1000 + from;
  if (comm.rank() == from) comm.send(&value, 1, trainrun::DataType::Int32, to, 7);
  if (comm.rank() != to) return;
  value = 0;
  comm.recv(&value, 1, trainrun::DataType::Int32, from, 7);
  if (value != 1000 + from) wrong(comm.rank(), "p2p value " + std::to_string(value));
}

void sockets(trainrun::Communicator& comm) {
  std::int64_t most = socket_count(), least = most;
  comm.allreduce(&most, &most, 1, trainrun::DataType::Int64, trainrun::ReduceOp::Max);
  comm.allreduce(&least, &least, 1, trainrun::DataType::Int64, trainrun::ReduceOp::Min);
  if (comm.rank() == 0) std::printf("sockets per rank: min %lld max %lld\n", (long long)least, (long long)most);
}

void run(trainrun::Communicator& comm, const std::string& step) {
  if (step == "allreduce") {
    allreduce(comm);
  } else if (step == "alltoall") {
    alltoall(comm);
  } else if (step.rfind("p2p:", 0) == 0) {
    const std::size_t colon = step.find(':', 4);
    p2p(comm, std::atoi(step.substr(4, colon - 4).c_str()), std::atoi(step.substr(colon + 1).c_str()));
  } else if (step == "sockets") {
    sockets(comm);
  } else if (step.rfind("exit:", 0) == 0) {
    if (comm.rank() == std::atoi(step.substr(5).c_str())) std::_Exit(0);
  } else if (step.rfind("await:", 0) == 0) {
    std::printf("rank %d: awaiting\n", comm.rank());
    std::fflush(stdout);
    while (::access(step.substr(6).c_str(), F_OK) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } else {
    std::fprintf(stderr, "lazy_mesh_program: unknown step '%s'\n", step.c_str());
    std::_Exit(2);
  }
}

}  // namespace

int main(int argc, char** argv) {
  trainrun::Communicator& comm = trainrun::init();
  for (int i = 1; i < argc; ++i) {
    try {
      run(comm, argv[i]);
    } catch (const trainrun::Error& e) {
      std::printf("rank %d: error: %s\n", comm.rank(), e.what());
      std::fflush(stdout);
      std::_Exit(1);
    }
  }
  if (comm.rank() == 0) std::printf("size %d: ok\n", comm.size());
  std::fflush(stdout);
  trainrun::shutdown();
  return 0;
}
