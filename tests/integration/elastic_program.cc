// elastic_program: the worker the launcher's elastic tests run. Its output
// is a contract those tests parse; keep every line's format exactly:
//   worker W pid P                          each process, at start
//   step S size N gen G t_ms T              rank 0, after each completed step
//                                           (T: system_clock ms since the epoch)
//   worker W: exiting with code C at step S before a scripted exit
//   worker W: wrong result at step S        then exit 3
//   worker W: done at step S size N         each rank at the end, then exit 0
// Options:
//   --steps N            steps to complete (default 10)
//   --mb M               MiB of floats allreduced per step (default 64)
//   --commit-every K     State::commit() every K steps (default 1)
//   --sleep-ms X         sleep per step (default 0)
//   --ops core|engine    the step's allreduce as a core call (default) or a
//                        named engine op (allreduce_async + synchronize)
//   --collective allreduce|broadcast|alltoall  the step's core call (default
//                        allreduce); broadcast: from rank 0; alltoall: the
//                        buffer split evenly, rank r's blocks filled with
//                        step+1+r; each checked like the allreduce
//   --exit-at S:W:C      worker W exits with C on reaching step S, in the
//                        generation where the job first reached S (repeatable)
//   --shutdown-at S:W:C  the same, but through trainrun::shutdown() and exit(),
//                        as a program that returns an error from main does
//   --return-at S:W:C    the same, through exit() alone: a program that ends
//                        without trainrun::shutdown(), its threads still running
//   --pause-at S:W:MS    worker W sleeps MS ms before step S's collective, in
//                        the generation where the job first reached S: a peer
//                        slower than the collective timeout
//   --fail-on-host H:C[:FILE]  a worker whose TRAINRUN_HOSTNAME is H exits with C
//                        at its first step (while FILE exists, when given)
//                        at its first step
// Each step allreduces (Sum) a buffer filled with step+1 and checks every
// element is (step+1) * size; the State holds the step and a checksum (the
// sum of completed step numbers) that must be N(N+1)/2 at the end (exit 4).
#include <trainrun/trainrun.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

enum class Leave { Crash, Shutdown, Return, Pause };

struct ExitAt {
  std::int64_t step;
  int worker;
  int code;  // Leave::Pause: the ms to sleep
  Leave how = Leave::Crash;
};

struct Options {
  std::int64_t steps = 10;
  std::size_t mb = 64;
  std::int64_t commit_every = 1;
  int sleep_ms = 0;
  bool engine_ops = false;
  std::string collective = "allreduce";
  std::vector<ExitAt> exits;
  std::string fail_host;
  int fail_code = 0;
  std::string fail_while;  // a file: the host fails only while it exists
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "elastic_program: %s\n", why.c_str());
  std::exit(2);
}

long long number(const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') usage("not a number: '" + text + "'");
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--steps") o.steps = number(value);
    else if (flag == "--mb") o.mb = static_cast<std::size_t>(number(value));
    else if (flag == "--commit-every") o.commit_every = std::max(1LL, number(value));
    else if (flag == "--sleep-ms") o.sleep_ms = static_cast<int>(number(value));
    else if (flag == "--ops" && (value == "core" || value == "engine")) o.engine_ops = value == "engine";
    else if (flag == "--collective" && (value == "allreduce" || value == "broadcast" || value == "alltoall")) {
      o.collective = value;
    } else if (flag == "--exit-at" || flag == "--shutdown-at" || flag == "--return-at" || flag == "--pause-at") {
      const auto a = value.find(':'), b = value.rfind(':');
      if (a == std::string::npos || a == b) usage(flag + " takes STEP:WORKER:CODE (--pause-at: STEP:WORKER:MS)");
      o.exits.push_back({number(value.substr(0, a)), static_cast<int>(number(value.substr(a + 1, b - a - 1))),
                         static_cast<int>(number(value.substr(b + 1))),
                         flag == "--exit-at"       ? Leave::Crash
                         : flag == "--shutdown-at" ? Leave::Shutdown
                         : flag == "--pause-at"    ? Leave::Pause
                                                   : Leave::Return});
    } else if (flag == "--fail-on-host") {
      const auto a = value.find(':'), b = value.find(':', a + 1);
      if (a == std::string::npos) usage("--fail-on-host takes NAME:CODE[:FILE]");
      o.fail_host = value.substr(0, a);
      o.fail_code = static_cast<int>(number(value.substr(a + 1, b == std::string::npos ? b : b - a - 1)));
      if (b != std::string::npos) o.fail_while = value.substr(b + 1);
    } else {
      usage("unknown option " + flag);
    }
  }
  return o;
}

int worker_id() {
  for (const char* name : {"TRAINRUN_WORKER_ID", "TRAINRUN_RANK"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

[[noreturn]] void exit_now(int worker, int code, std::int64_t step, Leave how = Leave::Crash) {
  std::printf("worker %d: exiting with code %d at step %lld\n", worker, code, static_cast<long long>(step));
  std::fflush(stdout);
  if (how == Leave::Crash) std::_Exit(code);  // no shutdown handshake with the peers, no destructors
  if (how == Leave::Shutdown) trainrun::shutdown();
  std::exit(code);
}

long long now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

class Worker {
 public:
  Worker(Options options, int id) : o_(std::move(options)), id_(id), buffer_(o_.mb * 1024 * 1024 / sizeof(float)) {
    const char* host = std::getenv("TRAINRUN_HOSTNAME");
    host_ = host ? host : "";
    state_.add_value("step", step_);
    state_.add_value("checksum", checksum_);
  }

  int main() {
    trainrun::elastic::run(state_, [&] { train(); });
    trainrun::Communicator& comm = trainrun::init();
    if (checksum_ != step_ * (step_ + 1) / 2) {
      std::printf("worker %d: wrong checksum %lld at step %lld\n", id_, static_cast<long long>(checksum_),
                  static_cast<long long>(step_));
      return 4;
    }
    std::printf("worker %d: done at step %lld size %d\n", id_, static_cast<long long>(step_), comm.size());
    std::fflush(stdout);
    trainrun::shutdown();
    return 0;
  }

 private:
  // Scripted failures; a step's trigger belongs to the generation in which
  // this process first reached that step, so a replayed step does not fire.
  void maybe_exit() {
    const bool failing = o_.fail_while.empty() || ::access(o_.fail_while.c_str(), F_OK) == 0;
    if (!o_.fail_host.empty() && host_ == o_.fail_host && failing) exit_now(id_, o_.fail_code, step_);
    const int generation = trainrun::elastic::generation();
    const auto first = first_reached_.emplace(step_, generation).first->second;
    for (const ExitAt& e : o_.exits) {
      if (e.step != step_ || e.worker != id_ || first != generation) continue;
      if (e.how == Leave::Pause) std::this_thread::sleep_for(std::chrono::milliseconds(e.code));
      else exit_now(id_, e.code, step_, e.how);
    }
  }

  void train() {
    trainrun::Communicator& comm = trainrun::init();
    while (step_ < o_.steps) {
      maybe_exit();
      const float value = static_cast<float>(step_ + 1);
      std::fill(buffer_.begin(), buffer_.end(), value);
      if (o_.collective != "allreduce") {
        other_collective(comm, value);
      } else if (o_.engine_ops) {
        const trainrun::Tensor t{
            buffer_.data(), trainrun::DataType::Float32, {static_cast<std::int64_t>(buffer_.size())}};
        trainrun::synchronize(trainrun::allreduce_async("step", t, trainrun::ReduceOp::Sum));
      } else {
        comm.allreduce(buffer_.data(), buffer_.data(), buffer_.size(), trainrun::DataType::Float32,
                       trainrun::ReduceOp::Sum);
      }
      if (o_.collective == "allreduce") check(value * static_cast<float>(comm.size()), 0, buffer_.size());
      ++step_;
      checksum_ += step_;
      if (comm.rank() == 0) {
        std::printf("step %lld size %d gen %d t_ms %lld\n", static_cast<long long>(step_), comm.size(),
                    trainrun::elastic::generation(), now_ms());
        std::fflush(stdout);
      }
      if (o_.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o_.sleep_ms));
      if (step_ % o_.commit_every == 0) state_.commit();
    }
  }

  void check(float want, std::size_t from, std::size_t to) const {
    for (std::size_t i = from; i < to; ++i) {
      if (buffer_[i] != want) {
        std::printf("worker %d: wrong result at step %lld\n", id_, static_cast<long long>(step_));
        std::fflush(stdout);
        std::_Exit(3);
      }
    }
  }

  // --collective broadcast|alltoall: the step's call on buffer_ (filled
  // with `value`), checked.
  void other_collective(trainrun::Communicator& comm, float value) {
    if (o_.collective == "broadcast") {
      if (comm.rank() != 0) std::fill(buffer_.begin(), buffer_.end(), -1.0f);
      comm.broadcast(buffer_.data(), buffer_.size(), trainrun::DataType::Float32, 0);
      return check(value, 0, buffer_.size());
    }
    const std::size_t block = buffer_.size() / static_cast<std::size_t>(comm.size());
    send_.assign(buffer_.size(), value + static_cast<float>(comm.rank()));
    comm.alltoall(send_.data(), buffer_.data(), block, trainrun::DataType::Float32);
    for (int r = 0; r < comm.size(); ++r) check(value + static_cast<float>(r), r * block, (r + 1) * block);
  }

  const Options o_;
  const int id_;
  std::string host_;
  std::vector<float> buffer_;
  std::vector<float> send_;  // --collective alltoall
  std::int64_t step_ = 0;
  std::int64_t checksum_ = 0;
  trainrun::elastic::State state_;
  std::map<std::int64_t, int> first_reached_;  // step -> generation (this process only)
};

}  // namespace

int main(int argc, char** argv) {
  Options options = parse(argc, argv);
  const int id = worker_id();
  std::printf("worker %d pid %d\n", id, static_cast<int>(::getpid()));
  std::fflush(stdout);
  try {
    return Worker(std::move(options), id).main();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "worker %d: %s\n", id, e.what());
    return 1;
  }
}
