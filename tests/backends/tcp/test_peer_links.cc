// The links of the tcp backend (backends/tcp/peer_links.h) on real
// loopback sockets: made at first use, one per pair and channel however
// both ranks dial at once, with strangers at the door (garbage, silence,
// hang-ups, a flood: each dropped with one line, the real peers linked all
// the same), a peer that is gone or never answers named, and abort().
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sched.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "backends/tcp/link_wiring.h"
#include "backends/tcp/mesh_handshake.h"
#include "backends/tcp/peer_links.h"
#include "trainrun/error.h"

using namespace trainrun::detail;
using trainrun::UniqueFd;
using trainrun::rendezvous::Secret;
using namespace std::chrono_literals;
namespace hs = mesh_handshake;
using Channel = hs::Channel;

namespace {

Secret secret_of(std::uint8_t fill) {
  Secret s;
  s.fill(fill);
  return s;
}

// A listening socket on 127.0.0.1 that nobody serves (a stopped peer, or
// a port to close for a peer that is gone).
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

std::string port_of(const PeerLinks& links) {
  const std::string& published = links.published();
  return published.substr(published.rfind(' ') + 1);
}

// Collects the lines a rank logs; lets the test wait for one.
class LogLines {
 public:
  LinkWiring::Log sink() {
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

PeerLinks::Options options_for(
    int rank, int size, const Secret& secret, LinkWiring::Log log = [](auto&) {}) {
  PeerLinks::Options o;
  o.rank = rank;
  o.size = size;
  o.secret = secret;
  o.dial_timeout = 60s;
  o.log = std::move(log);
  return o;
}

// `size` ranks' links in this process, each told every address.
std::vector<std::unique_ptr<PeerLinks>> world_of(int size, const Secret& secret,
                                                 const std::function<void(PeerLinks::Options&)>& adjust = nullptr) {
  std::vector<std::unique_ptr<PeerLinks>> world;
  std::vector<std::string> published;
  for (int r = 0; r < size; ++r) {
    PeerLinks::Options o = options_for(r, size, secret);
    if (adjust) adjust(o);
    world.push_back(std::make_unique<PeerLinks>(std::move(o), "127.0.0.1"));
    published.push_back(world.back()->published());
  }
  for (auto& links : world) links->set_addresses(published);
  return world;
}

// The two descriptors are the two ends of one connection, and it works: a
// byte each way.
void check_connected(int a, int b) {
  sockaddr_in a_local{}, b_peer{};
  socklen_t length = sizeof a_local;
  REQUIRE(::getsockname(a, reinterpret_cast<sockaddr*>(&a_local), &length) == 0);
  length = sizeof b_peer;
  REQUIRE(::getpeername(b, reinterpret_cast<sockaddr*>(&b_peer), &length) == 0);
  CHECK(a_local.sin_port == b_peer.sin_port);
  char byte = 'x', got = 0;
  REQUIRE(::send(a, &byte, 1, MSG_NOSIGNAL) == 1);
  pollfd pfd{b, POLLIN, 0};
  REQUIRE(::poll(&pfd, 1, 60'000) == 1);
  REQUIRE(::recv(b, &got, 1, 0) == 1);
  CHECK(got == 'x');
  REQUIRE(::send(b, &byte, 1, MSG_NOSIGNAL) == 1);
  pfd = {a, POLLIN, 0};
  REQUIRE(::poll(&pfd, 1, 60'000) == 1);
  REQUIRE(::recv(a, &got, 1, 0) == 1);
}

int link(PeerLinks& links, Channel channel, int peer) {
  const int fd = links.wait(channel, peer, PeerLinks::Clock::now() + 60s);
  REQUIRE(fd >= 0);
  return fd;
}

}  // namespace

TEST_CASE("link handshake: only the right secret, challenge, ranks and channel verify") {
  const Secret secret = secret_of(7);
  const std::string challenge = hs::make_challenge();
  CHECK(challenge.size() == hs::kChallengeBytes);
  CHECK(hs::make_challenge() != challenge);
  const std::string reply = hs::make_reply(secret, challenge, 3, 1);
  REQUIRE(reply.size() == hs::kReplyBytes);
  CHECK(hs::verify_reply(secret, challenge, reply, 1, 4) == hs::Claim{3, Channel::kMesh});
  CHECK_FALSE(hs::verify_reply(secret_of(8), challenge, reply, 1, 4));                              // another job
  CHECK_FALSE(hs::verify_reply(secret, hs::make_challenge(), reply, 1, 4));                         // replayed
  CHECK_FALSE(hs::verify_reply(secret, challenge, reply, 2, 4));                                    // meant for rank 2
  CHECK_FALSE(hs::verify_reply(secret, challenge, reply, 1, 3));                                    // rank 3 of 3
  CHECK_FALSE(hs::verify_reply(secret, challenge, hs::make_reply(secret, challenge, 1, 1), 1, 4));  // itself
  CHECK_FALSE(hs::verify_reply(secret, challenge, reply.substr(1), 1, 4));
  CHECK_FALSE(hs::verify_reply(secret, challenge, std::string(hs::kReplyBytes, '\xff'), 1, 4));
  // Either rank of a pair may dial: a lower one verifies too.
  CHECK(hs::verify_reply(secret, challenge, hs::make_reply(secret, challenge, 0, 1), 1, 4) ==
        hs::Claim{0, Channel::kMesh});
  // The channel is signed: a point-to-point dial cannot pass for a mesh one.
  std::string p2p = hs::make_reply(secret, challenge, 3, 1, Channel::kP2P);
  CHECK(hs::verify_reply(secret, challenge, p2p, 1, 4) == hs::Claim{3, Channel::kP2P});
  p2p[4] = static_cast<char>(Channel::kMesh);
  CHECK_FALSE(hs::verify_reply(secret, challenge, p2p, 1, 4));
  p2p[4] = 7;
  CHECK_FALSE(hs::verify_reply(secret, challenge, p2p, 1, 4));
}

TEST_CASE("link tie-break: when both dial at once, the higher rank's dial is the link on both sides") {
  CHECK(hs::keeps_dial(2, 5, false));  // not dialling: any proven dial is kept
  CHECK(hs::keeps_dial(5, 2, false));
  CHECK(hs::keeps_dial(2, 5, true));        // both dialling: rank 2 keeps 5's dial ...
  CHECK_FALSE(hs::keeps_dial(5, 2, true));  // ... and 5 refuses 2's
}

TEST_CASE("links: made at first use, only between the ranks that ask, one per pair and channel") {
  auto world = world_of(4, secret_of(1));
  check_connected(link(*world[0], Channel::kMesh, 2), link(*world[2], Channel::kMesh, 0));
  // Asked again, the same link.
  CHECK(link(*world[0], Channel::kMesh, 2) == link(*world[0], Channel::kMesh, 2));
  // Point-to-point gets a link of its own.
  const int p2p = link(*world[2], Channel::kP2P, 0);
  CHECK(p2p != link(*world[2], Channel::kMesh, 0));
  check_connected(p2p, link(*world[0], Channel::kP2P, 2));
  CHECK(world[0]->links_up(Channel::kMesh) == 1);
  CHECK(world[0]->links_up(Channel::kP2P) == 1);
  CHECK(world[1]->links_up(Channel::kMesh) == 0);  // never asked, never dialled
  CHECK(world[3]->links_up(Channel::kMesh) == 0);
  CHECK(world[1]->find(Channel::kMesh, 3) == -1);  // asks, without waiting
  check_connected(link(*world[1], Channel::kMesh, 3), link(*world[3], Channel::kMesh, 1));
}

TEST_CASE("links: both ranks dial each other at the same moment, 100 times: one link, the same on both sides") {
  const Secret secret = secret_of(2);
  for (int round = 0; round < 100; ++round) {
    auto world = world_of(2, secret);
    std::atomic<int> ready{0};
    auto dial = [&](int me) {
      ready.fetch_add(1);
      while (ready.load() < 2) std::this_thread::yield();
      return std::make_pair(link(*world[me], Channel::kMesh, 1 - me), link(*world[me], Channel::kP2P, 1 - me));
    };
    auto one = std::async(std::launch::async, dial, 1);
    const auto zero = dial(0);
    const auto other = one.get();
    check_connected(zero.first, other.first);
    check_connected(zero.second, other.second);
    for (auto& links : world) {
      CHECK(links->links_up(Channel::kMesh) == 1);
      CHECK(links->links_up(Channel::kP2P) == 1);
    }
  }
}

TEST_CASE("links: a rank that never calls anything still accepts the links its peers need") {
  auto world = world_of(3, secret_of(3));
  // Ranks 1 and 2 dial rank 0, which asks for nothing: its links' thread answers.
  const int a = link(*world[1], Channel::kMesh, 0);
  const int b = link(*world[2], Channel::kP2P, 0);
  // Rank 0's thread publishes a link just after its verdict reached the dialler.
  const auto deadline = PeerLinks::Clock::now() + 60s;
  while ((world[0]->links_up(Channel::kMesh) < 1 || world[0]->links_up(Channel::kP2P) < 1) &&
         PeerLinks::Clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  CHECK(world[0]->links_up(Channel::kMesh) == 1);
  CHECK(world[0]->links_up(Channel::kP2P) == 1);
  check_connected(a, link(*world[0], Channel::kMesh, 1));
  check_connected(b, link(*world[0], Channel::kP2P, 2));
}

TEST_CASE("links: garbage, silence and hang-ups at the door do not stop the real peer") {
  const Secret secret = secret_of(4);
  LogLines log0, log1;
  auto world = world_of(2, secret, [&](PeerLinks::Options& o) {
    o.log = o.rank == 0 ? log0.sink() : log1.sink();
    o.handshake_timeout = 200ms;
  });
  const std::string port = port_of(*world[0]);
  const int garbage = connect_to(port);
  const std::string junk(200, '\xab');
  REQUIRE(::send(garbage, junk.data(), junk.size(), MSG_NOSIGNAL) == 200);
  const int silent = connect_to(port);
  ::close(connect_to(port));  // hangs up at once
  // Rank 1 comes only after the silent stranger was given up on.
  REQUIRE(log0.wait_for("no answer within 200 ms"));
  CHECK(log0.count("bad authentication") == 1);
  check_connected(link(*world[1], Channel::kMesh, 0), link(*world[0], Channel::kMesh, 1));
  CHECK(log0.count("rejected a connection from 127.0.0.1:") == 3);
  CHECK(log1.count("rejected") == 0);
  ::close(garbage);
  ::close(silent);
}

TEST_CASE("links: a stranger who learned a reply cannot be another rank, and a flood is survived") {
  const Secret secret = secret_of(5);
  LogLines log0;
  auto world = world_of(3, secret, [&](PeerLinks::Options& o) {
    if (o.rank == 0) o.log = log0.sink();
  });
  const std::string port = port_of(*world[0]);
  // More silent strangers than may wait at once: the oldest are dropped.
  std::vector<int> flood;
  for (std::size_t i = 0; i < LinkWiring::max_pending(3) + 40; ++i) flood.push_back(connect_to(port));
  // One claims rank 2 with a reply made for another challenge.
  const int forger = connect_to(port);
  const std::string forged = hs::make_reply(secret, hs::make_challenge(), 2, 0);
  REQUIRE(::send(forger, forged.data(), forged.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(forged.size()));
  check_connected(link(*world[1], Channel::kMesh, 0), link(*world[0], Channel::kMesh, 1));
  check_connected(link(*world[2], Channel::kMesh, 0), link(*world[0], Channel::kMesh, 2));
  check_connected(link(*world[1], Channel::kMesh, 2), link(*world[2], Channel::kMesh, 1));
  CHECK(log0.wait_for("too many unanswered connections"));
  world[0].reset();
  CHECK(log0.count("connections in all") == 1);  // past three lines, one summary
  for (int fd : flood) ::close(fd);
  ::close(forger);
}

// A refused connection (the peer's process is gone) fails at once: a
// collective must not wait on a worker that was killed.
TEST_CASE("links: a peer that is gone fails the dial at once, naming it") {
  std::string port;
  {
    Listener closed;
    port = closed.port;
  }
  PeerLinks links(options_for(1, 2, secret_of(6)), "127.0.0.1");
  links.set_addresses({"127.0.0.1 " + port, links.published()});
  const auto started = PeerLinks::Clock::now();
  try {
    links.wait(Channel::kMesh, 0, started + 60s);
    FAIL("no error");
  } catch (const trainrun::Error& e) {
    CHECK(e.code() == trainrun::Error::Code::Io);
    CHECK(std::string(e.what()) ==
          "direct mesh: cannot connect to rank 0 (127.0.0.1:" + port + "): Connection refused (ECONNREFUSED)");
  }
  CHECK(PeerLinks::Clock::now() - started < 20s);
  // The failure stays: every later use is told at once, on each channel as it asks.
  CHECK_THROWS_AS(links.find(Channel::kMesh, 0), trainrun::Error);
  CHECK_THROWS_WITH(links.wait(Channel::kP2P, 0, PeerLinks::Clock::now() + 60s),
                    doctest::Contains("point-to-point: cannot connect to rank 0"));
}

TEST_CASE("links: a peer that never answers: a wait ends at its own deadline, the dial at the dial timeout") {
  Listener stopped;  // connections complete in the kernel, and nothing answers
  PeerLinks::Options o = options_for(1, 2, secret_of(7));
  o.dial_timeout = 1s;
  PeerLinks links(std::move(o), "127.0.0.1");
  links.set_addresses({"127.0.0.1 " + stopped.port, links.published()});
  CHECK(links.wait(Channel::kMesh, 0, PeerLinks::Clock::now() + 100ms) == -1);
  try {
    const int fd = links.wait(Channel::kMesh, 0, PeerLinks::Clock::now() + 60s);
    FAIL("no error: ", fd);
  } catch (const trainrun::Error& e) {
    CHECK(e.code() == trainrun::Error::Code::Timeout);
    CHECK(std::string(e.what()) ==
          "direct mesh: no authenticated connection with rank 0 (127.0.0.1:" + stopped.port + ") within 1 s");
  }
}

TEST_CASE("links: abort() wakes a wait and shuts the links down; a later dial to the aborted rank is refused") {
  const Secret secret = secret_of(8);
  Listener stopped;  // rank 0 never answers
  std::vector<std::unique_ptr<PeerLinks>> world(4);
  std::vector<std::string> published{"127.0.0.1 " + stopped.port};
  for (int r = 1; r < 4; ++r) {
    world[r] = std::make_unique<PeerLinks>(options_for(r, 4, secret), "127.0.0.1");
    published.push_back(world[r]->published());
  }
  for (int r = 1; r < 4; ++r) world[r]->set_addresses(published);
  const int up = link(*world[1], Channel::kMesh, 2);
  auto waiting =
      std::async(std::launch::async, [&] { return world[1]->wait(Channel::kMesh, 0, PeerLinks::Clock::now() + 60s); });
  CHECK(waiting.wait_for(200ms) == std::future_status::timeout);
  world[1]->abort();
  CHECK_THROWS_WITH(waiting.get(), doctest::Contains("direct mesh: aborted while connecting to rank 0"));
  char byte = 0;
  CHECK(::recv(up, &byte, 1, 0) == 0);  // shut down
  CHECK_THROWS_WITH(world[3]->wait(Channel::kMesh, 1, PeerLinks::Clock::now() + 60s),
                    doctest::Contains("direct mesh: cannot connect to rank 1 (127.0.0.1:"));
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

// At 32 hosts a connect met EHOSTUNREACH while the neighbours were still
// being resolved, and the rank gave up at once.
TEST_CASE("links: a peer's host unreachable at first is tried again until it is; never, and it is named") {
  in_new_network([] {
    const Secret secret = secret_of(9);
    PeerLinks links(options_for(1, 2, secret), "127.0.0.1");
    links.set_addresses({"10.99.0.2 4711", links.published()});
    CHECK(links.find(Channel::kMesh, 0) == -1);  // dials, and meets ENETUNREACH meanwhile
    std::this_thread::sleep_for(300ms);
    REQUIRE(std::system("ip addr add 10.99.0.2/32 dev lo") == 0);
    // Rank 0 is a bare wiring on the address rank 1 was given.
    const int l0 = listen_on("10.99.0.2", 4711);
    {
      LinkWiring rank0(0, 2, secret, l0, [](auto&) {});
      LinkWiring::Events events;
      const auto deadline = LinkWiring::Clock::now() + 60s;
      while (events.up.empty() && LinkWiring::Clock::now() < deadline) {
        rank0.poll(-1, LinkWiring::Clock::now() + 100ms, events);
      }
      REQUIRE(events.up.size() == 1);
      CHECK(events.up[0].peer == 1);
      check_connected(events.up[0].fd.get(), link(links, Channel::kMesh, 0));
    }
    ::close(l0);
    // A host that never becomes reachable: named, with why, at the deadline.
    PeerLinks::Options o = options_for(1, 2, secret);
    o.dial_timeout = 500ms;
    PeerLinks never(std::move(o), "127.0.0.1");
    never.set_addresses({"10.99.0.3 4711", never.published()});
    try {
      never.wait(Channel::kMesh, 0, PeerLinks::Clock::now() + 60s);
      FAIL("no error");
    } catch (const trainrun::Error& e) {
      CHECK(e.code() == trainrun::Error::Code::Io);
      CHECK(std::string(e.what()) ==
            "direct mesh: cannot connect to rank 0 (10.99.0.3:4711): Network is unreachable (ENETUNREACH) (tried "
            "again until the collective timeout)");
    }
  });
}
