// rank_program: a scriptable rank for launcher tests. Its arguments are
// steps run in order; a step with a rank applies to that rank only:
//   init              trainrun::init() and a barrier
//   print:TEXT        print "rank R: TEXT" on stdout
//   eprint:TEXT       the same on stderr
//   env:NAME          print "rank R: NAME=value" (or "<unset>")
//   sleep:MS          sleep
//   exit:CODE         exit with CODE          exit:R:CODE   only on rank R
//   raise:SIG         raise signal SIG        raise:R:SIG   only on rank R
//   allreduce         sum of ranks via the library, printed
//   ignore-term       ignore SIGTERM from now on
//   spawn-tree        start a child and a grandchild, and a double-forked
//                     setsid escapee, all sleeping for ten minutes
//   spew:MB           write MB megabytes of tests/integration/spew.h lines
//   raw:TEXT          write TEXT unbuffered, "\r" and "\n" escapes honoured,
//                     no newline added
//   cat               copy stdin to stdout as "rank R got: LINE"
//   usr1              print "rank R: got SIGUSR1" once SIGUSR1 arrives
//   topology          "rank R: backend=B size=N local=L/LS cross=C/CS" via the library
//   quit:CODE         std::exit(CODE): at-exit handlers run   quit:R:CODE
//   noshutdown        leave trainrun::shutdown() to process exit
//   shutdown          trainrun::shutdown() now (a later step may init again)
//   await:PATH        wait until PATH exists (a test's gate)  await:R:PATH
//   fds               "rank R: inheritable fds: 0 1 2": the open descriptors
//                     without close-on-exec (what a program it starts gets)
//   allreduce-big:MB  one allreduce of MB MiB of floats; prints "ok", or the
//                     error and exits 1 (a peer's death must end it, not hang)
//   allreduce-heap:MB the same on memory from Communicator::allocate_memory
//                     (which shared memory reduces in place)
//   shm-mapped        "rank R: shm mapped: yes|no": whether this process maps
//                     the shared-memory transport's segment (/proc/self/maps)
//   hugecount         allreduce of 2^31 elements on a 1-element buffer; prints
//                     the error (mpi backend only: it refuses before sending)
//   deadlock:R        rank R locks a mutex it holds: stuck in pthread_mutex_lock
//                     for good (the other ranks go on to the next step)
//   alltoall:COUNT, reducescatter:COUNT, broadcast:COUNT (or OP:R:COUNT)
//                     one core call of COUNT floats per block (broadcast from
//                     rank 0) on buffers of at most 1 Mi floats, so a larger
//                     count must be refused before they are touched; prints
//                     "rank R: OP ok", or "rank R: OP error: ..." and exits 1
// The rank before init comes from TRAINRUN_RANK, else OMPI_COMM_WORLD_RANK
// (plain mpirun or trainrun --launcher mpirun), else SLURM_PROCID.
#include <trainrun/trainrun.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>

#include "tests/integration/spew.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = s.find(':', start);
    parts.push_back(s.substr(start, colon - start));
    if (colon == std::string::npos) return parts;
    start = colon + 1;
  }
}

volatile sig_atomic_t g_usr1 = 0;

void write_all(const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(1, data.data() + done, data.size() - done);
    if (n <= 0) std::_Exit(3);
    done += static_cast<std::size_t>(n);
  }
}

void sleep_forever_child() {
  ::sleep(600);
  std::_Exit(0);
}

void spawn_tree() {
  if (::fork() == 0) {
    if (::fork() == 0) sleep_forever_child();  // grandchild
    sleep_forever_child();                     // child
  }
  if (::fork() == 0) {
    // The escapee: its own session, then orphaned by its short-lived parent.
    ::setsid();
    if (::fork() == 0) sleep_forever_child();
    std::_Exit(0);
  }
}

void spew(int rank, std::size_t megabytes) {
  std::size_t written = 0;
  for (std::size_t i = 0; written < megabytes << 20; ++i) {
    const std::string line = trainrun::test::spew_line(rank, i);
    const std::size_t split = trainrun::test::spew_split(i, line.size());
    if (split == std::string::npos) {
      write_all(line);
    } else {
      write_all(line.substr(0, split));
      write_all(line.substr(split));
    }
    written += line.size();
  }
}

std::string unescape(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == 'r' || text[i + 1] == 'n')) {
      out.push_back(text[++i] == 'r' ? '\r' : '\n');
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::string inheritable_fds() {
  std::string list;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return " (cannot read /proc/self/fd)";
  std::vector<int> fds;
  while (const dirent* entry = ::readdir(dir)) {
    const int fd = std::atoi(entry->d_name);
    if (entry->d_name[0] == '.' || fd == ::dirfd(dir)) continue;
    if (!(::fcntl(fd, F_GETFD) & FD_CLOEXEC)) fds.push_back(fd);
  }
  ::closedir(dir);
  std::sort(fds.begin(), fds.end());
  for (int fd : fds) list += " " + std::to_string(fd);
  return list;
}

// Not inlined, so that the stack names it under the lock frames.
[[gnu::noinline]] void deadlock(int rank) {
  static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&mutex);
  std::printf("rank %d: deadlocking\n", rank);
  std::fflush(stdout);
  pthread_mutex_lock(&mutex);                   // a default mutex locked twice by its owner waits forever
  std::printf("rank %d: unreachable\n", rank);  // not a tail call: this frame stays on the stack
}

// alltoall|reducescatter|broadcast:COUNT (see the top of the file).
void core_call(int rank, const std::string& op, std::size_t count) {
  auto& comm = trainrun::init();
  const std::size_t cap = std::size_t{1} << 20;
  const std::size_t blocks = count > cap ? cap : count * static_cast<std::size_t>(comm.size());
  std::vector<float> send(std::min(blocks, cap) + 1, 1.0f), recv(std::min(blocks, cap) + 1, 0.0f);
  try {
    if (op == "alltoall") comm.alltoall(send.data(), recv.data(), count, trainrun::DataType::Float32);
    else if (op == "reducescatter") {
      comm.reducescatter(send.data(), recv.data(), count, trainrun::DataType::Float32, trainrun::ReduceOp::Sum);
    } else comm.broadcast(send.data(), count, trainrun::DataType::Float32, 0);
    std::printf("rank %d: %s ok\n", rank, op.c_str());
  } catch (const trainrun::Error& e) {
    std::printf("rank %d: %s error: %s\n", rank, op.c_str(), e.what());
    std::fflush(stdout);
    std::_Exit(1);
  }
  std::fflush(stdout);
}

int rank_from_env() {
  for (const char* name : {"TRAINRUN_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    if (const char* text = std::getenv(name)) return std::atoi(text);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int rank = rank_from_env();
  bool shutdown_at_end = true;
  for (int i = 1; i < argc; ++i) {
    const std::string step = argv[i];
    const std::vector<std::string> p = split(step);
    const std::string& verb = p[0];
    // "verb:R:X" applies to rank R only; "verb:X" to all.
    const bool targeted = p.size() == 3;
    if (targeted && std::atoi(p[1].c_str()) != rank) continue;
    const std::string arg = p.size() > 1 ? p.back() : "";
    if (verb == "init") {
      trainrun::init().barrier();
    } else if (verb == "print") {
      std::printf("rank %d: %s\n", rank, step.substr(6).c_str());
      std::fflush(stdout);
    } else if (verb == "eprint") {
      std::fprintf(stderr, "rank %d: %s\n", rank, step.substr(7).c_str());
    } else if (verb == "env") {
      const char* v = std::getenv(arg.c_str());
      std::printf("rank %d: %s=%s\n", rank, arg.c_str(), v ? v : "<unset>");
      std::fflush(stdout);
    } else if (verb == "await") {
      while (::access(arg.c_str(), F_OK) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } else if (verb == "fds") {
      std::printf("rank %d: inheritable fds:%s\n", rank, inheritable_fds().c_str());
      std::fflush(stdout);
    } else if (verb == "sleep") {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(arg.c_str())));
    } else if (verb == "exit") {
      std::fflush(stdout);
      std::_Exit(std::atoi(arg.c_str()));
    } else if (verb == "quit") {
      std::fflush(stdout);
      std::exit(std::atoi(arg.c_str()));
    } else if (verb == "shutdown") {
      trainrun::shutdown();
    } else if (verb == "noshutdown") {
      shutdown_at_end = false;
    } else if (verb == "topology") {
      auto& comm = trainrun::init();
      std::printf("rank %d: backend=%s size=%d local=%d/%d cross=%d/%d\n", comm.rank(), comm.backend_name().c_str(),
                  comm.size(), comm.local_rank(), comm.local_size(), comm.cross_rank(), comm.cross_size());
      std::fflush(stdout);
    } else if (verb == "hugecount") {
      float x = 0;
      try {
        trainrun::init().allreduce(&x, &x, std::size_t{1} << 31, trainrun::DataType::Float32, trainrun::ReduceOp::Sum);
        std::printf("rank %d: no error\n", rank);
      } catch (const trainrun::Error& e) {
        std::printf("rank %d: error: %s\n", rank, e.what());
      }
      std::fflush(stdout);
    } else if (verb == "raise") {
      std::fflush(stdout);
      std::signal(std::atoi(arg.c_str()), SIG_DFL);
      std::raise(std::atoi(arg.c_str()));
    } else if (verb == "allreduce") {
      auto& comm = trainrun::init();
      std::int64_t mine = comm.rank(), sum = 0;
      comm.allreduce(&mine, &sum, 1, trainrun::DataType::Int64, trainrun::ReduceOp::Sum);
      std::printf("rank %d: sum=%lld\n", rank, static_cast<long long>(sum));
      std::fflush(stdout);
    } else if (verb == "alltoall" || verb == "reducescatter" || verb == "broadcast") {
      core_call(rank, verb, static_cast<std::size_t>(std::strtoull(arg.c_str(), nullptr, 10)));
    } else if (verb == "deadlock") {
      if (std::atoi(arg.c_str()) == rank) deadlock(rank);
    } else if (verb == "allreduce-big" || verb == "allreduce-heap") {
      const std::size_t count = static_cast<std::size_t>(std::atoi(arg.c_str())) << 18;
      std::vector<float> own(verb == "allreduce-big" ? count : 0, 1.0f);
      auto& comm = trainrun::init();
      float* data = own.empty() ? static_cast<float*>(comm.allocate_memory(count * sizeof(float))) : own.data();
      std::fill(data, data + count, 1.0f);
      try {
        comm.allreduce(data, data, count, trainrun::DataType::Float32, trainrun::ReduceOp::Sum);
        std::printf("rank %d: %s ok\n", rank, verb.c_str());
      } catch (const trainrun::Error& e) {
        std::printf("rank %d: allreduce error: %s\n", rank, e.what());
        std::fflush(stdout);
        std::_Exit(1);
      }
      std::fflush(stdout);
    } else if (verb == "shm-mapped") {
      std::ifstream maps("/proc/self/maps");
      const std::string all((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
      std::printf("rank %d: shm mapped: %s\n", rank,
                  all.find("memfd:trainrun-shm") != std::string::npos ? "yes" : "no");
      std::fflush(stdout);
    } else if (verb == "ignore-term") {
      std::signal(SIGTERM, SIG_IGN);
    } else if (verb == "spawn-tree") {
      spawn_tree();
    } else if (verb == "spew") {
      spew(rank, static_cast<std::size_t>(std::atoi(arg.c_str())));
    } else if (verb == "raw") {
      std::fflush(stdout);
      write_all(unescape(step.substr(4)));
    } else if (verb == "cat") {
      std::string line;
      while (std::getline(std::cin, line)) std::printf("rank %d got: %s\n", rank, line.c_str());
      std::printf("rank %d: end of input\n", rank);
      std::fflush(stdout);
    } else if (verb == "usr1") {
      std::signal(SIGUSR1, [](int) { g_usr1 = 1; });
      std::printf("rank %d: waiting for SIGUSR1\n", rank);
      std::fflush(stdout);
      while (!g_usr1) ::usleep(1000);
      std::printf("rank %d: got SIGUSR1\n", rank);
      std::fflush(stdout);
    } else {
      std::fprintf(stderr, "rank_program: unknown step '%s'\n", step.c_str());
      return 2;
    }
  }
  if (shutdown_at_end && trainrun::is_initialized()) trainrun::shutdown();
  return 0;
}
