// The direct mesh's handshake and wiring with strangers at the door: garbage,
// silence, early hang-ups and a flood are each dropped with one line, and
// the real peers are wired all the same. Real sockets on loopback.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sched.h>

#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "backends/tcp/mesh_handshake.h"
#include "backends/tcp/mesh_wiring.h"
#include "trainrun/error.h"

using namespace trainrun::detail;
using trainrun::UniqueFd;
using trainrun::rendezvous::Secret;
using namespace std::chrono_literals;
namespace hs = mesh_handshake;

namespace {

Secret secret_of(std::uint8_t fill) {
  Secret s;
  s.fill(fill);
  return s;
}

// A listening socket on 127.0.0.1 (non-blocking, as SocketMesh hands it over).
struct Listener {
  int fd = -1;
  std::string port;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd, SOMAXCONN) == 0);
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    port = std::to_string(ntohs(address.sin_port));
  }
  ~Listener() { ::close(fd); }
};

int connect_to(const std::string& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(std::stoi(port)));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

// Collects the lines a wiring logs; lets the test wait for one.
class LogLines {
 public:
  MeshWiring::Log sink() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.push_back(line);
      changed_.notify_all();
    };
  }
  bool wait_for(const std::string& text, std::chrono::seconds within = 60s) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, within, [&] { return count_locked(text) > 0; });
  }
  int count(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_locked(text);
  }

 private:
  int count_locked(const std::string& text) const {
    int n = 0;
    for (const auto& line : lines_) n += line.find(text) != std::string::npos;
    return n;
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;
};

std::vector<MeshWiring::Peer> peers_at(const std::vector<std::string>& ports) {
  std::vector<MeshWiring::Peer> peers;
  for (std::size_t r = 0; r < ports.size(); ++r) {
    peers.push_back({"127.0.0.1", ports[r], "rank " + std::to_string(r) + " (127.0.0.1:" + ports[r] + ")"});
  }
  return peers;
}

// The wired pair works: a byte each way.
void check_connected(int a, int b) {
  ::fcntl(a, F_SETFL, 0);
  ::fcntl(b, F_SETFL, 0);
  char byte = 'x', got = 0;
  REQUIRE(::send(a, &byte, 1, MSG_NOSIGNAL) == 1);
  REQUIRE(::recv(b, &got, 1, 0) == 1);
  CHECK(got == 'x');
  REQUIRE(::send(b, &byte, 1, MSG_NOSIGNAL) == 1);
  REQUIRE(::recv(a, &got, 1, 0) == 1);
}

void close_all(std::vector<UniqueFd>& fds) {
  for (UniqueFd& fd : fds) {
    fd.reset();
  }
}

}  // namespace

TEST_CASE("mesh handshake: only the right secret, challenge and ranks verify") {
  const Secret secret = secret_of(7);
  const std::string challenge = hs::make_challenge();
  CHECK(challenge.size() == hs::kChallengeBytes);
  CHECK(hs::make_challenge() != challenge);
  const std::string reply = hs::make_reply(secret, challenge, 3, 1);
  REQUIRE(reply.size() == hs::kReplyBytes);
  CHECK(hs::verify_reply(secret, challenge, reply, 1, 4) == 3);
  CHECK_FALSE(hs::verify_reply(secret_of(8), challenge, reply, 1, 4));                              // another job
  CHECK_FALSE(hs::verify_reply(secret, hs::make_challenge(), reply, 1, 4));                         // replayed
  CHECK_FALSE(hs::verify_reply(secret, challenge, reply, 2, 4));                                    // meant for rank 1
  CHECK_FALSE(hs::verify_reply(secret, challenge, reply, 1, 3));                                    // rank 3 of 3
  CHECK_FALSE(hs::verify_reply(secret, challenge, hs::make_reply(secret, challenge, 0, 1), 1, 4));  // lower
  CHECK_FALSE(hs::verify_reply(secret, challenge, reply.substr(1), 1, 4));
  CHECK_FALSE(hs::verify_reply(secret, challenge, std::string(hs::kReplyBytes, '\xff'), 1, 4));
}

TEST_CASE("mesh wiring: garbage, silence and hang-ups at the door do not stop the real peer") {
  const Secret secret = secret_of(1);
  Listener l0, l1;
  const auto peers = peers_at({l0.port, l1.port});
  LogLines log0;
  // Strangers are already waiting when rank 0 starts wiring.
  const int garbage = connect_to(l0.port);
  const std::string junk(200, '\xab');
  REQUIRE(::send(garbage, junk.data(), junk.size(), MSG_NOSIGNAL) == 200);
  const int silent = connect_to(l0.port);
  ::close(connect_to(l0.port));  // hangs up at once
  const auto deadline = MeshWiring::Clock::now() + 120s;
  auto rank0 = std::async(std::launch::async,
                          [&] { return MeshWiring(0, secret, l0.fd, peers, log0.sink(), 200ms).run(deadline); });
  // Rank 1 comes only after the silent stranger was given up on.
  REQUIRE(log0.wait_for("no answer within 200 ms"));
  CHECK(log0.count("bad authentication") == 1);
  LogLines log1;
  auto fds1 = MeshWiring(1, secret, l1.fd, peers, log1.sink()).run(deadline);
  auto fds0 = rank0.get();
  REQUIRE(fds0[1].valid());
  REQUIRE(fds1[0].valid());
  check_connected(fds0[1].get(), fds1[0].get());
  CHECK(log0.count("rejected a connection from 127.0.0.1:") == 3);
  CHECK(log1.count("rejected") == 0);
  ::close(garbage);
  ::close(silent);
  close_all(fds0);
  close_all(fds1);
}

TEST_CASE("mesh wiring: a stranger who learned a reply cannot be another rank, and a flood is survived") {
  const Secret secret = secret_of(2);
  Listener l0, l1, l2;
  const auto peers = peers_at({l0.port, l1.port, l2.port});
  LogLines log0;
  // More silent strangers than may wait at once: the oldest are dropped.
  std::vector<int> flood;
  for (std::size_t i = 0; i < MeshWiring::kMaxPending + 40; ++i) flood.push_back(connect_to(l0.port));
  // One claims rank 2 with a reply made for another challenge.
  const int forger = connect_to(l0.port);
  const std::string forged = hs::make_reply(secret, hs::make_challenge(), 2, 0);
  REQUIRE(::send(forger, forged.data(), forged.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(forged.size()));
  const auto deadline = MeshWiring::Clock::now() + 120s;
  auto rank0 =
      std::async(std::launch::async, [&] { return MeshWiring(0, secret, l0.fd, peers, log0.sink()).run(deadline); });
  auto rank1 =
      std::async(std::launch::async, [&] { return MeshWiring(1, secret, l1.fd, peers, [](auto&) {}).run(deadline); });
  auto fds2 = MeshWiring(2, secret, l2.fd, peers, [](auto&) {}).run(deadline);
  auto fds0 = rank0.get();
  auto fds1 = rank1.get();
  check_connected(fds0[1].get(), fds1[0].get());
  check_connected(fds0[2].get(), fds2[0].get());
  check_connected(fds1[2].get(), fds2[1].get());
  CHECK(log0.count("too many unanswered connections") >= 1);
  CHECK(log0.count("connections in all") == 1);  // past three lines, one summary
  for (int fd : flood) ::close(fd);
  ::close(forger);
  close_all(fds0);
  close_all(fds1);
  close_all(fds2);
}

TEST_CASE("mesh wiring: a rank that never comes is named at the deadline") {
  const Secret secret = secret_of(3);
  Listener l0, l1;
  try {
    MeshWiring(0, secret, l0.fd, peers_at({l0.port, l1.port}), [](auto&) {}).run(MeshWiring::Clock::now() + 300ms);
    FAIL("no timeout");
  } catch (const trainrun::Error& e) {
    CHECK(e.code() == trainrun::Error::Code::Timeout);
    CHECK(std::string(e.what()) ==
          "direct mesh: no authenticated connection with rank 1 (127.0.0.1:" + l1.port + ") before the start timeout");
  }
}

namespace {

// Runs `body` on a thread of its own in a new network namespace whose only
// interface is lo (so 10.99.0.0/16 has no route: ENETUNREACH); `ip` there
// changes it. Needs CAP_SYS_ADMIN (CI runs as root).
void in_new_network(const std::function<void()>& body) {
  std::exception_ptr failure;
  std::thread([&] {
    try {
      REQUIRE(::unshare(CLONE_NEWNET) == 0);
      REQUIRE(std::system("ip link set lo up") == 0);
      body();
    } catch (...) {
      failure = std::current_exception();
    }
  }).join();
  if (failure) std::rethrow_exception(failure);
}

int listen_on(const std::string& address, std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, address.c_str(), &a.sin_addr);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, SOMAXCONN) == 0);
  return fd;
}

}  // namespace

// Issue 37, item 9: at 32 hosts a connect met EHOSTUNREACH while the
// neighbours were still being resolved, and the rank gave up at once.
TEST_CASE("mesh wiring: a peer's host unreachable at first is tried again until it is; never, and it is named") {
  in_new_network([] {
    const Secret secret = secret_of(4);
    std::vector<MeshWiring::Peer> peers = {{"10.99.0.2", "4711", "rank 0 (10.99.0.2:4711)"},
                                           {"127.0.0.1", "4712", "rank 1 (127.0.0.1:4712)"}};
    const int l1 = listen_on("127.0.0.1", 4712);
    const auto deadline = MeshWiring::Clock::now() + 60s;
    auto rank1 =
        std::async(std::launch::async, [&] { return MeshWiring(1, secret, l1, peers, [](auto&) {}).run(deadline); });
    std::this_thread::sleep_for(300ms);  // rank 1 meets ENETUNREACH meanwhile
    REQUIRE(std::system("ip addr add 10.99.0.2/32 dev lo") == 0);
    const int l0 = listen_on("10.99.0.2", 4711);
    auto fds0 = MeshWiring(0, secret, l0, peers, [](auto&) {}).run(deadline);
    auto fds1 = rank1.get();
    check_connected(fds0[1].get(), fds1[0].get());
    close_all(fds0);
    close_all(fds1);
    ::close(l0);
    // A host that never becomes reachable: named, with why, at the deadline.
    peers[0] = {"10.99.0.3", "4711", "rank 0 (10.99.0.3:4711)"};
    try {
      MeshWiring(1, secret, l1, peers, [](auto&) {}).run(MeshWiring::Clock::now() + 500ms);
      FAIL("no error");
    } catch (const trainrun::Error& e) {
      CHECK(e.code() == trainrun::Error::Code::Io);
      CHECK(std::string(e.what()) ==
            "direct mesh: cannot connect to rank 0 (10.99.0.3:4711): Network is unreachable (ENETUNREACH) (tried "
            "again until the start timeout)");
    }
    ::close(l1);
  });
}

// A refused connection (the peer's process is gone) still fails at once:
// an elastic generation must not wait on a worker that was killed.
TEST_CASE("mesh wiring: a refused peer fails at once, naming it") {
  Listener l1;
  std::string port;
  {
    Listener closed;
    port = closed.port;
  }
  const auto started = MeshWiring::Clock::now();
  try {
    MeshWiring(1, secret_of(5), l1.fd, peers_at({port, l1.port}), [](auto&) {}).run(started + 30s);
    FAIL("no error");
  } catch (const trainrun::Error& e) {
    CHECK(std::string(e.what()) ==
          "direct mesh: cannot connect to rank 0 (127.0.0.1:" + port + "): Connection refused (ECONNREFUSED)");
  }
  CHECK(MeshWiring::Clock::now() - started < 20s);
}
