// Point-to-point (Communicator::send / recv) in the conformance program:
// both directions at once with messages larger than the sockets' buffers,
// order and tags, any source, calls from a thread beside collectives, and
// the errors (a mismatch naming both ranks, a bad peer). Skipped at np 1.
// On the mpi backend, MPI_Send of a large message may wait for its receiver
// and threads need MPI_THREAD_MULTIPLE: those two cases are tcp's only.
// Every rank runs every case (CHECK only, as in conformance.cc).
#include <doctest/doctest.h>
#include <trainrun/trainrun.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using trainrun::DataType;

namespace {

trainrun::Communicator& comm() { return trainrun::init(); }  // the program's, made in main

std::vector<std::int32_t> message(int sender, int tag, std::size_t n) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>(i * 7 + sender * 1000 + tag * 100000);
  return v;
}

bool on_tcp() { return comm().backend_name() == "tcp"; }

}  // namespace

TEST_CASE("p2p: every rank sends 32 MiB both ways before it receives") {
  if (comm().size() < 2 || !on_tcp()) return;
  const int rank = comm().rank(), size = comm().size();
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  const std::size_t n = 8u << 20;  // int32: 32 MiB, far above a socket's buffers
  comm().send(message(rank, 1, n).data(), n, DataType::Int32, right, 1);
  comm().send(message(rank, 2, n).data(), n, DataType::Int32, left, 2);
  std::vector<std::int32_t> from_left(n), from_right(n);
  CHECK(comm().recv(from_left.data(), n, DataType::Int32, left, 1) == left);
  CHECK(comm().recv(from_right.data(), n, DataType::Int32, right, 2) == right);
  CHECK(from_left == message(left, 1, n));
  CHECK(from_right == message(right, 2, n));
}

TEST_CASE("p2p: messages of one tag arrive in order; tags keep them apart") {
  if (comm().size() < 2) return;
  const int rank = comm().rank();
  if (rank == 0) {
    for (int tag : {4, 3}) {
      for (int i = 0; i < 20; ++i) comm().send(message(i, tag, 100).data(), 100, DataType::Int32, 1, tag);
    }
  } else if (rank == 1) {
    for (int tag : {3, 4}) {
      for (int i = 0; i < 20; ++i) {
        std::vector<std::int32_t> got(100);
        comm().recv(got.data(), 100, DataType::Int32, 0, tag);
        CHECK(got == message(i, tag, 100));
      }
    }
  }
  comm().barrier();
}

TEST_CASE("p2p: recv from any source returns each sender") {
  if (comm().size() < 2) return;
  const int rank = comm().rank(), size = comm().size();
  if (rank == 0) {
    std::vector<int> seen(size, 0);
    for (int i = 1; i < size; ++i) {
      std::vector<std::int32_t> got(10);
      const int from = comm().recv(got.data(), 10, DataType::Int32, trainrun::Communicator::kAnySource, 7);
      REQUIRE((from > 0 && from < size));
      CHECK(got == message(from, 7, 10));
      ++seen[from];
    }
    for (int r = 1; r < size; ++r) CHECK(seen[r] == 1);
  } else {
    comm().send(message(rank, 7, 10).data(), 10, DataType::Int32, 0, 7);
  }
  comm().barrier();
}

TEST_CASE("p2p: a thread's receive waits beside collectives on the main thread") {
  if (comm().size() < 2 || !on_tcp()) return;
  const int rank = comm().rank(), size = comm().size();
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  std::vector<std::int32_t> got(1000);
  int from = -1;
  std::thread receiver([&] { from = comm().recv(got.data(), got.size(), DataType::Int32, left, 8); });
  for (int i = 0; i < 10; ++i) {
    std::int32_t one = 1, sum = 0;
    comm().allreduce(&one, &sum, 1, DataType::Int32, trainrun::ReduceOp::Sum);
    CHECK(sum == size);
  }
  comm().send(message(rank, 8, 1000).data(), 1000, DataType::Int32, right, 8);
  receiver.join();
  CHECK(from == left);
  CHECK(got == message(left, 8, 1000));
}

TEST_CASE("p2p: a size or type mismatch names both ranks; a bad peer is refused") {
  if (comm().size() < 2) return;
  const int rank = comm().rank(), size = comm().size();
  if (rank == 0) {
    std::vector<std::int32_t> v(5);
    comm().send(v.data(), 5, DataType::Int32, 1, 9);
    comm().send(v.data(), 4, DataType::Int32, 1, 10);
  } else if (rank == 1) {
    std::vector<float> f(6);
    const std::string size_mismatch = on_tcp() ? "rank 0 sent 20 bytes of int32 with tag 9, rank 1 receives 24 bytes"
                                               : "rank 0 sent 20 bytes with tag 9, rank 1 receives 24 bytes";
    CHECK_THROWS_WITH_AS(comm().recv(f.data(), 6, DataType::Float32, 0, 9), doctest::Contains(size_mismatch.c_str()),
                         trainrun::Error);
    if (on_tcp()) {
      CHECK_THROWS_WITH_AS(comm().recv(f.data(), 4, DataType::Float32, 0, 10),
                           doctest::Contains("rank 0 sent 16 bytes of int32 with tag 10, rank 1 receives 16 bytes of "
                                             "float32"),
                           trainrun::Error);
    } else {
      comm().recv(f.data(), 4, DataType::Float32, 0, 10);  // MPI carries no type
    }
  }
  std::int32_t x = 0;
  CHECK_THROWS_WITH_AS(comm().send(&x, 1, DataType::Int32, rank, 0),
                       doctest::Contains(("send: peer " + std::to_string(rank) + " is this rank").c_str()),
                       trainrun::Error);
  CHECK_THROWS_WITH_AS(comm().recv(&x, 1, DataType::Int32, size, 0),
                       doctest::Contains(("recv: peer " + std::to_string(size) + " is not a rank of this " +
                                          std::to_string(size) + "-rank world")
                                             .c_str()),
                       trainrun::Error);
  comm().barrier();
}
