// Strangers against a real job: garbage and silent connections to every
// rank's mesh port while the ranks wait for a late peer, a flood of idle
// connections to the rendezvous while the job starts, and what a rank
// inherits from trainrun. The job must start and finish as if nobody had
// knocked, and leave nothing behind.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// The TCP ports `pid` listens on (its sockets in state LISTEN).
std::set<int> listening_ports(pid_t pid) {
  std::set<std::string> inodes;
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fd_dir, ec)) {
    const std::string target = fs::read_symlink(entry.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::set<int> ports;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::istringstream lines(read_file("/proc/" + std::to_string(pid) + table));
    std::string line;
    std::getline(lines, line);  // header
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      if (state == "0A" && inodes.count(inode))
        ports.insert(std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16));
    }
  }
  return ports;
}

// The pid of rank `rank` of the job whose processes carry `tag`, or -1.
pid_t rank_pid(const std::string& tag, int rank) {
  const std::string entry = std::string("TRAINRUN_RANK=") + std::to_string(rank);
  for (pid_t pid : processes_with_env(tag)) {
    const std::string environ = read_file("/proc/" + std::to_string(pid) + "/environ");
    if (environ.find(std::string(1, '\0') + entry + '\0') != std::string::npos || environ.rfind(entry + '\0', 0) == 0) {
      return pid;
    }
  }
  return -1;
}

// Polls until `pid` listens on some port (bounded); returns the ports.
std::set<int> wait_listening(const std::function<pid_t()>& find_pid, std::chrono::seconds within = 120s) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t pid = find_pid();
    if (pid > 0) {
      const auto ports = listening_ports(pid);
      if (!ports.empty()) return ports;
    }
    std::this_thread::sleep_for(20ms);
  }
  return {};
}

int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A file whose creation lets a gated rank go on ("await:R:PATH").
struct Gate {
  fs::path dir = fs::temp_directory_path() / ("trainrun-gate-" + std::to_string(::getpid()));
  fs::path path = dir / "open";
  Gate() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Gate() { fs::remove_all(dir); }
  void open() const { std::ofstream(path) << "go\n"; }
};

std::vector<std::string> trainrun_argv(std::vector<std::string> args) {
  args.insert(args.begin(), trainrun_bin());
  return args;
}

}  // namespace

TEST_CASE("garbage and silent connections to every mesh port during a slow start do not harm the job") {
  Gate gate;
  const std::string tag = unique_tag();
  ProcessOptions options;
  options.env = {tag};
  options.timeout = 300s;
  // Rank 2 is late: ranks 0 and 1 listen on their mesh ports and wait for it.
  Child job(trainrun_argv({"--local", "-np", "3", "--backend", "tcp", "--start-timeout", "240", rank_program(),
                           "await:2:" + gate.path.string(), "allreduce"}),
            options);
  std::vector<int> strangers;
  for (int rank : {0, 1}) {
    const auto ports = wait_listening([&] { return rank_pid(tag, rank); });
    REQUIRE_MESSAGE(ports.size() == 1, "rank ", rank, " has no mesh port");
    const int port = *ports.begin();
    const int garbage = connect_loopback(port);
    REQUIRE(garbage >= 0);
    const std::string junk(300, '\xab');
    REQUIRE(::send(garbage, junk.data(), junk.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(junk.size()));
    strangers.push_back(garbage);
    strangers.push_back(connect_loopback(port));  // says nothing at all
    REQUIRE(strangers.back() >= 0);
  }
  gate.open();
  const ProcessResult result = job.wait();
  for (int fd : strangers) ::close(fd);
  CHECK(result.exit_code == 0);
  for (int rank : {0, 1, 2}) CHECK(contains(result.out, "rank " + std::to_string(rank) + ": sum=3"));
  for (int rank : {0, 1}) {
    CHECK(contains(result.err,
                   "trainrun: rank " + std::to_string(rank) + ": direct mesh: rejected a connection from 127.0.0.1:"));
  }
  CHECK(count(result.err, ": bad authentication") == 2);
  CHECK_FALSE(contains(result.err, "error"));
  CHECK(nothing_left(tag));
}

TEST_CASE("a job starts while 9000 idle connections flood its rendezvous") {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_max < 9500) {
    MESSAGE("skipped: the descriptor limit (", limit.rlim_max, ") is below 9500");
    return;
  }
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  Gate gate;
  const std::string tag = unique_tag();
  ProcessOptions options;
  options.env = {tag};
  options.timeout = 300s;
  Child job(trainrun_argv({"--local", "-np", "2", "--start-timeout", "120", rank_program(),
                           "await:1:" + gate.path.string(), "allreduce"}),
            options);
  // The launcher's only listening port is its rendezvous.
  const auto ports = wait_listening([&] { return job.pid(); });
  REQUIRE(ports.size() == 1);
  std::vector<int> flood;
  for (int i = 0; i < 9000; ++i) {
    const int fd = connect_loopback(*ports.begin());
    if (fd >= 0) flood.push_back(fd);
  }
  CHECK(flood.size() >= 8192);  // at least as many as the server holds
  gate.open();                  // rank 1 now meets a full server
  const ProcessResult result = job.wait();
  for (int fd : flood) ::close(fd);
  CHECK_MESSAGE(result.exit_code == 0, result.err);
  CHECK(contains(result.out, "rank 0: sum=1"));
  CHECK(contains(result.out, "rank 1: sum=1"));
  CHECK(nothing_left(tag));
}

TEST_CASE("a rank inherits only stdin, stdout and stderr, and the library opens nothing inheritable") {
  std::string tag;
  const ProcessResult result = run_trainrun({"--local", "-np", "2", rank_program(), "fds", "init", "fds"}, &tag);
  CHECK(result.exit_code == 0);
  CHECK(count(result.out, "rank 0: inheritable fds: 0 1 2\n") == 2);
  CHECK(count(result.out, "rank 1: inheritable fds: 0 1 2\n") == 2);
  CHECK(nothing_left(tag));
}
