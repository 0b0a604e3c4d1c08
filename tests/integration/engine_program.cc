// engine_program: a rank that uses the engine the way the integration tests
// need, printing what happened as "rank R: ..." lines.
//   stall LATE_RANK DELAY_MS [fresh|cold]
//                             every rank allreduces "late.tensor" once (so
//                             it is cached, as in steady-state training;
//                             "fresh": an engine barrier instead, "cold":
//                             nothing, so LATE_RANK's engine has not
//                             started), then again, LATE_RANK DELAY_MS late.
//                             Prints
//                             when it submits, and "done" or "error after S
//                             s: MESSAGE". Then a core barrier (direct again
//                             once the engine stopped) and exit 0, or 3
//                             after an error.
//   steps N                   N training steps: two small tensors (fused),
//                             one large (in place), an allgather and a
//                             broadcast; exit 0, or 1 with the error.
//   train N SLOW_RANK MS      N steps of one allreduce each; SLOW_RANK
//                             (-1: none) sleeps MS before each submission
//                             (a straggler); exit 0.
//   leave LEAVING_RANK        one allreduce on every rank; then LEAVING_RANK
//                             calls trainrun::shutdown() and, 10 s later
//                             (the launcher stops it first), exits 5 while
//                             the others allreduce again and print "done"
//                             or "error: MESSAGE", exit 3.
//   timeline FIRST SECOND     trainrun::start_timeline(FIRST), one step,
//                             start_timeline(SECOND, mark_cycles), one step,
//                             stop_timeline(), one more step; exit 0.
//   outofstep SKIPPING_RANK   every rank but SKIPPING_RANK allreduces
//                             "skipped.op", which SKIPPING_RANK never
//                             submits: it goes on to an engine barrier (as
//                             after an exception on some ranks only). Each
//                             prints "error after S s: MESSAGE" or "done",
//                             then all meet in the barrier and print
//                             "barrier passed"; exit 0.
#include <trainrun/trainrun.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

using trainrun::DataType;
using Clock = std::chrono::steady_clock;

int stall(trainrun::Communicator& comm, int late_rank, int delay_ms, const std::string& warm_up) {
  const int rank = comm.rank();
  std::vector<float> data(16, 1.0f);
  if (warm_up == "fresh") trainrun::barrier();
  if (warm_up.empty()) {
    trainrun::synchronize(trainrun::allreduce_async("late.tensor", {data.data(), DataType::Float32, {16}}));
    data.assign(16, 1.0f);
  }
  if (rank == late_rank) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  std::printf("rank %d: submitting\n", rank);
  std::fflush(stdout);
  const auto start = Clock::now();
  int status = 0;
  try {
    trainrun::synchronize(trainrun::allreduce_async("late.tensor", {data.data(), DataType::Float32, {16}}));
    std::printf("rank %d: done, sum %g\n", rank, data[0]);
  } catch (const trainrun::Error& e) {
    std::printf("rank %d: error after %.2f s: %s\n", rank, std::chrono::duration<double>(Clock::now() - start).count(),
                e.what());
    status = 3;
  }
  std::fflush(stdout);
  try {
    comm.barrier();
  } catch (const trainrun::Error& e) {
    std::printf("rank %d: barrier failed: %s\n", rank, e.what());
  }
  return status;
}

int steps(int count) {
  std::vector<float> a(3, 1.0f), b(5, 2.0f), big(100000, 3.0f);
  std::vector<std::int32_t> row(4, 7);
  for (int step = 0; step < count; ++step) {
    auto ha = trainrun::allreduce_async("small.a", {a.data(), DataType::Float32, {3}});
    auto hb = trainrun::allreduce_async("small.b", {b.data(), DataType::Float32, {5}});
    auto hbig = trainrun::allreduce_async("big", {big.data(), DataType::Float32, {100000}});
    auto hg = trainrun::allgather_async("gathered", {row.data(), DataType::Int32, {1, 4}});
    auto hc = trainrun::broadcast_async("params", {b.data(), DataType::Float32, {5}}, 0);
    for (auto h : {ha, hb, hbig, hg, hc}) trainrun::synchronize(h);
  }
  return 0;
}

int train(int rank, int count, int slow_rank, int delay_ms) {
  std::vector<float> grad(64, 1.0f);
  for (int step = 0; step < count; ++step) {
    if (rank == slow_rank) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    trainrun::synchronize(trainrun::allreduce_async("grad", {grad.data(), DataType::Float32, {64}}));
  }
  std::printf("rank %d: trained %d steps\n", rank, count);
  return 0;
}

int leave(int rank, int leaving_rank) {
  std::vector<float> grad(64, 1.0f);
  trainrun::synchronize(trainrun::allreduce_async("grad", {grad.data(), DataType::Float32, {64}}));
  if (rank == leaving_rank) {
    trainrun::shutdown();
    std::this_thread::sleep_for(std::chrono::seconds(10));  // the others report first
    return 5;
  }
  try {
    trainrun::synchronize(trainrun::allreduce_async("grad", {grad.data(), DataType::Float32, {64}}));
    std::printf("rank %d: done\n", rank);
  } catch (const trainrun::Error& e) {
    std::printf("rank %d: error: %s\n", rank, e.what());
  }
  std::fflush(stdout);
  return 3;
}

}  // namespace

int timeline(const std::string& first, const std::string& second) {
  trainrun::start_timeline(first);
  steps(1);
  trainrun::start_timeline(second, true);
  steps(1);
  trainrun::stop_timeline();
  return steps(1);
}

int out_of_step(int rank, int skipping_rank) {
  std::vector<float> data(4, 1.0f);
  if (rank != skipping_rank) {
    const auto start = Clock::now();
    try {
      trainrun::synchronize(trainrun::allreduce_async("skipped.op", {data.data(), DataType::Float32, {4}}));
      std::printf("rank %d: done\n", rank);
    } catch (const trainrun::Error& e) {
      std::printf("rank %d: error after %.2f s: %s\n", rank,
                  std::chrono::duration<double>(Clock::now() - start).count(), e.what());
    }
    std::fflush(stdout);
  }
  trainrun::barrier();
  std::printf("rank %d: barrier passed\n", rank);
  std::fflush(stdout);
  return 0;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    trainrun::Communicator& comm = trainrun::init();
    int status = 2;
    if (mode == "stall" && (argc == 4 || argc == 5)) {
      status = stall(comm, std::atoi(argv[2]), std::atoi(argv[3]), argc == 5 ? argv[4] : "");
    } else if (mode == "steps" && argc == 3) status = steps(std::atoi(argv[2]));
    else if (mode == "train" && argc == 5) {
      status = train(comm.rank(), std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]));
    } else if (mode == "leave" && argc == 3) status = leave(comm.rank(), std::atoi(argv[2]));
    else if (mode == "timeline" && argc == 4) status = timeline(argv[2], argv[3]);
    else if (mode == "outofstep" && argc == 3) status = out_of_step(comm.rank(), std::atoi(argv[2]));
    else
      std::fprintf(stderr,
                   "engine_program: usage: stall LATE_RANK DELAY_MS [fresh|cold] | steps N | "
                   "train N SLOW_RANK MS | leave LEAVING_RANK | timeline FIRST SECOND | outofstep SKIPPING_RANK\n");
    trainrun::shutdown();
    return status;
  } catch (const trainrun::Error& e) {
    std::fprintf(stderr, "engine_program: %s\n", e.what());
    return 1;
  }
}
