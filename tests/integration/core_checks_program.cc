// core_checks_program: a rank that makes the core calls the library must
// refuse, for tests/integration/test_core_checks.cc. One mode per run:
//   overflow  every core op with count SIZE_MAX (a negative int turned
//             size_t), allgatherv with counts adding past 2^64, and an
//             engine allreduce of shape [2^62]: prints each Error's code
//             and text, then an allreduce that must still work; exits 0
//             when every refusal was InvalidArgument, else 1
//   dtype     allreduce of 4 elements: float32 on rank 0, int32 elsewhere
//   root      broadcast with root = this rank
//   counts    allgatherv whose counts differ between ranks 0 and 1
//   (for these three: prints "rank R: error (CODE): TEXT", then an
//   allreduce that must still work, and exits 3 on Mismatch, else 1)
//   fork      starts the engine, forks; the child tries a core allreduce
//             and an engine allreduce, prints each error with the time it
//             took, and exits; the parent waits for it, then runs both
//             again: "parent ok" and exit 0
#include <sys/wait.h>
#include <trainrun/trainrun.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace {

using trainrun::DataType;
using trainrun::Error;
using trainrun::ReduceOp;

constexpr std::size_t kHuge = std::numeric_limits<std::size_t>::max();

void say(int rank, const std::string& text) {
  std::printf("rank %d: %s\n", rank, text.c_str());
  std::fflush(stdout);
}

std::string describe(const Error& e) {
  return std::string("error (") + trainrun::to_string(e.code()) + "): " + e.what();
}

// Sum of ranks, which every rank must get if the ranks are still in step.
void in_step(trainrun::Communicator& comm) {
  int value = comm.rank(), sum = 0;
  comm.allreduce(&value, &sum, 1, DataType::Int32, ReduceOp::Sum);
  say(comm.rank(), "in step, sum=" + std::to_string(sum));
  // Every rank has printed before any exits: a rank exiting non-zero stops
  // the job, and its peers' lines must not be cut off by that.
  comm.barrier();
}

int overflow(trainrun::Communicator& comm) {
  std::vector<char> buffer(64);
  void* b = buffer.data();
  const std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), kHuge / 2);
  const std::vector<std::pair<const char*, std::function<void()>>> calls = {
      {"allreduce", [&] { comm.allreduce(b, b, kHuge, DataType::Float32, ReduceOp::Sum); }},
      {"broadcast", [&] { comm.broadcast(b, kHuge, DataType::Float32, 0); }},
      {"reducescatter", [&] { comm.reducescatter(b, b, kHuge, DataType::Float32, ReduceOp::Sum); }},
      {"allgather", [&] { comm.allgather(b, b, kHuge, DataType::Float32); }},
      {"alltoall", [&] { comm.alltoall(b, b, kHuge, DataType::Float32); }},
      {"allgatherv", [&] { comm.allgatherv(b, kHuge / 2, b, counts, DataType::UInt8); }},
      {"engine",
       [&] {
         trainrun::synchronize(
             trainrun::allreduce_async("huge", {b, DataType::Float32, {std::int64_t{1} << 62}}, ReduceOp::Sum));
       }},
  };
  int refused = 0;
  for (const auto& [name, run] : calls) {
    try {
      run();
      say(comm.rank(), std::string(name) + ": returned");
    } catch (const Error& e) {
      say(comm.rank(), std::string(name) + ": " + describe(e));
      if (e.code() == Error::Code::InvalidArgument) ++refused;
    }
  }
  in_step(comm);
  return refused == static_cast<int>(calls.size()) ? 0 : 1;
}

int mismatch(trainrun::Communicator& comm, const std::string& mode) {
  const int rank = comm.rank();
  std::vector<float> data(8, 1.0f);
  try {
    if (mode == "dtype") {
      comm.allreduce(data.data(), data.data(), 4, rank == 0 ? DataType::Float32 : DataType::Int32, ReduceOp::Sum);
    } else if (mode == "root") {
      comm.broadcast(data.data(), 4, DataType::Float32, rank);
    } else {
      std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), 1);
      if (rank == 1) counts[1] = 3;
      comm.allgatherv(data.data(), counts[rank], data.data(), counts, DataType::Float32);
    }
    say(rank, mode + ": returned");
    return 0;
  } catch (const Error& e) {
    say(rank, describe(e));
    in_step(comm);
    return e.code() == Error::Code::Mismatch ? 3 : 1;
  }
}

// The child's attempts: each must fail at once with the fork error.
void child(int rank) {
  using Clock = std::chrono::steady_clock;
  float value = 1.0f;
  const std::vector<std::pair<const char*, std::function<void()>>> calls = {
      {"core allreduce", [&] { trainrun::init().allreduce(&value, &value, 1, DataType::Float32, ReduceOp::Sum); }},
      {"engine allreduce",
       [&] {
         trainrun::synchronize(trainrun::allreduce_async("in.child", {&value, DataType::Float32, {1}}, ReduceOp::Sum));
       }},
  };
  for (const auto& [name, run] : calls) {
    const auto start = Clock::now();
    try {
      run();
      say(rank, std::string("child: ") + name + ": returned");
    } catch (const Error& e) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      say(rank, std::string("child: ") + name + ": " + describe(e) + " [" + std::to_string(ms) + " ms]");
    }
  }
  trainrun::shutdown();  // leaves the parent's communicator be
}

int forked(trainrun::Communicator& comm) {
  float value = 1.0f;
  trainrun::synchronize(trainrun::allreduce_async("before.fork", {&value, DataType::Float32, {1}}, ReduceOp::Sum));
  const pid_t pid = ::fork();
  if (pid == 0) {
    child(comm.rank());
    std::exit(0);  // at-exit teardown runs too, and must not touch the parent's job
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  say(comm.rank(), "child exited " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
  for (int i = 0; i < 3; ++i) {
    value = 1.0f;
    trainrun::synchronize(trainrun::allreduce_async("after.fork", {&value, DataType::Float32, {1}}, ReduceOp::Sum));
  }
  in_step(comm);
  say(comm.rank(), "parent ok, engine sum=" + std::to_string(static_cast<int>(value)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    trainrun::Communicator& comm = trainrun::init();
    int code = 2;
    if (mode == "overflow") code = overflow(comm);
    else if (mode == "dtype" || mode == "root" || mode == "counts") code = mismatch(comm, mode);
    else if (mode == "fork") code = forked(comm);
    else std::fprintf(stderr, "core_checks_program: unknown mode '%s'\n", mode.c_str());
    trainrun::shutdown();
    return code;
  } catch (const Error& e) {
    std::fprintf(stderr, "core_checks_program: %s\n", describe(e).c_str());
    return 1;
  }
}
