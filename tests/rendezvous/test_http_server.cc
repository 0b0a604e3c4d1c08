// The rendezvous server on loopback, attacked and used through real sockets:
// every bad request gets its documented status and leaves the table as it was.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "rendezvous/http_message.h"
#include "rendezvous/http_server.h"
#include "rendezvous/http_store.h"
#include "rendezvous/kv_request.h"
#include "contract/auth_scheme.h"
#include "contract/limits.h"
#include "trainrun/error.h"

using namespace trainrun::rendezvous;
namespace p = trainrun::contract;
using std::chrono::milliseconds;

namespace {

// A plain TCP client that sends exactly the bytes a test wants.
class RawClient {
 public:
  explicit RawClient(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~RawClient() { ::close(fd_); }

  void send(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;  // the server may close early (413, 431): that is the point
      sent += static_cast<std::size_t>(n);
    }
  }

  // The next response, or status 0 if the connection closed first.
  HttpResponse receive(milliseconds timeout = milliseconds(5000)) {
    char buffer[65536];
    while (true) {
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return {};
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) return {};
      if (parser_.feed(std::string_view(buffer, n)) == ResponseParser::State::Done) return parser_.take();
    }
  }

  bool closed_by_server(milliseconds timeout = milliseconds(3000)) {
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return false;
    char byte;
    return ::recv(fd_, &byte, 1, 0) <= 0;
  }

 private:
  int fd_ = -1;
  ResponseParser parser_;
};

struct Request {
  std::string method = "GET";
  std::string target = "/v1/health";
  std::string body;
  std::int64_t timestamp = now_unix_ms();
  std::string nonce = random_hex(p::kNonceBytes);
  std::string declared_digest;  // defaults to the body's
};

std::string signed_wire(const Secret& secret, const Request& r) {
  const std::string digest = r.declared_digest.empty() ? sha256_hex(r.body) : r.declared_digest;
  const std::string ts = std::to_string(r.timestamp);
  const std::string mac = sign(secret, {r.method, r.target, digest, ts, r.nonce});
  return format_request(r.method, r.target, "127.0.0.1",
                        {{"X-Trainrun-Timestamp", ts},
                         {"X-Trainrun-Nonce", r.nonce},
                         {"X-Trainrun-Content-Sha256", digest},
                         {"Authorization", "TRAINRUN-HMAC-SHA256 " + mac}},
                        r.body);
}

struct Fixture {
  explicit Fixture(HttpServer::Options options = {}) : secret(generate_secret()), server(secret, options) {
    server.start();
  }
  HttpResponse send(const std::string& wire) {
    RawClient client(server.port());
    client.send(wire);
    return client.receive();
  }
  HttpResponse send(const Request& r) { return send(signed_wire(secret, r)); }
  HttpStore store() { return HttpStore("127.0.0.1", server.port(), secret); }

  Secret secret;
  HttpServer server;
};

Request put(const std::string& key, const std::string& body) {
  Request r;
  r.method = "PUT";
  r.target = "/v1/kv/s/" + key;
  r.body = body;
  return r;
}

}  // namespace

TEST_CASE("a signed PUT and GET work; health answers") {
  Fixture f;
  CHECK(f.send(Request{}).status == 200);
  CHECK(f.send(put("k", "value")).status == 200);
  Request get;
  get.target = "/v1/kv/s/k";
  const HttpResponse response = f.send(get);
  CHECK(response.status == 200);
  CHECK(response.body == "value");
}

TEST_CASE("requests without a valid token get 401 and change nothing") {
  Fixture f;
  REQUIRE(f.send(put("existing", "original")).status == 200);
  const std::size_t before = f.server.table().size();

  SUBCASE("no token at all") {
    const HttpResponse r = f.send(format_request("PUT", "/v1/kv/s/existing", "h", {}, "evil"));
    CHECK(r.status == 401);
  }
  SUBCASE("signed with another secret") {
    CHECK(f.send(signed_wire(generate_secret(), put("existing", "evil"))).status == 401);
  }
  SUBCASE("path tampered after signing") {
    std::string wire = signed_wire(f.secret, put("existing", "evil"));
    wire.replace(wire.find("/v1/kv/s/existing"), 17, "/v1/kv/s/otherkey");
    CHECK(f.send(wire).status == 401);
  }
  SUBCASE("body tampered after signing (same length)") {
    std::string wire = signed_wire(f.secret, put("existing", "good"));
    wire.replace(wire.size() - 4, 4, "evil");
    CHECK(f.send(wire).status == 401);
  }
  SUBCASE("replayed request") {
    const std::string wire = signed_wire(f.secret, put("existing", "original"));
    CHECK(f.send(wire).status == 200);
    CHECK(f.send(wire).status == 401);
  }
  SUBCASE("stale timestamp") {
    Request r = put("existing", "evil");
    r.timestamp -= 10 * 60 * 1000;
    CHECK(f.send(r).status == 401);
  }
  SUBCASE("garbage authorization header") {
    const HttpResponse r = f.send(format_request(
        "PUT", "/v1/kv/s/existing", "h",
        {{"Authorization", "Bearer x"}, {"X-Trainrun-Timestamp", "1"}, {"X-Trainrun-Nonce", "2"}}, "evil"));
    CHECK(r.status == 401);
  }
  CHECK(f.server.table().size() == before);
  CHECK(f.server.table().get("s/existing") == "original");
  CHECK_FALSE(f.server.table().get("s/otherkey").has_value());
}

TEST_CASE("401 is identical for existing and missing keys") {
  Fixture f;
  REQUIRE(f.send(put("present", "x")).status == 200);
  const Secret wrong = generate_secret();
  Request present, missing;
  present.target = "/v1/kv/s/present";
  missing.target = "/v1/kv/s/absent";
  const HttpResponse a = f.send(signed_wire(wrong, present));
  const HttpResponse b = f.send(signed_wire(wrong, missing));
  CHECK(a.status == 401);
  CHECK(b.status == 401);
  CHECK(a.body == b.body);
  CHECK(a.headers == b.headers);
}

TEST_CASE("oversized bodies get 413 without the body being read") {
  Fixture f;
  Request r = put("big", "");
  r.declared_digest = sha256_hex("whatever");
  std::string wire = signed_wire(f.secret, r);
  const std::string length = "Content-Length: " + std::to_string(p::kMaxBodyBytes + 1);
  wire.replace(wire.find("Content-Length: 0"), 17, length);
  RawClient client(f.server.port());
  client.send(wire);  // header only: the server must answer without waiting for 4 MiB
  const HttpResponse response = client.receive(milliseconds(2000));
  CHECK(response.status == 413);
  CHECK_FALSE(f.server.table().get("s/big").has_value());
}

TEST_CASE("malformed requests get 400, 405, 431 or 404") {
  Fixture f;
  CHECK(f.send("NOT HTTP AT ALL\r\n\r\n").status == 400);
  CHECK(f.send("GET /v1/health HTTP/9.9\r\nHost: x\r\n\r\n").status == 400);
  Request del;
  del.method = "DELETE";
  del.target = "/v1/kv/s/k";
  CHECK(f.send(del).status == 405);
  Request unknown;
  unknown.target = "/v2/anything";
  CHECK(f.send(unknown).status == 404);
  Request bad_name;
  bad_name.target = "/v1/kv/s/bad%20name";
  CHECK(f.send(bad_name).status == 400);
  std::string huge =
      "GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(p::kMaxHeaderBytes + 10, 'a') + "\r\n\r\n";
  CHECK(f.send(huge).status == 431);
  Request get_with_body;
  get_with_body.target = "/v1/kv/s/k";
  get_with_body.body = "x";
  CHECK(f.send(get_with_body).status == 400);
  Request chunked = put("k", "");
  std::string wire = signed_wire(f.secret, chunked);
  wire.replace(wire.find("Content-Length: 0"), 17, "Transfer-Encoding: chunked");
  CHECK(f.send(wire + "0\r\n\r\n").status == 400);
  CHECK(f.server.table().size() == 0);
}

TEST_CASE("slow headers and slow bodies get 408") {
  HttpServer::Options options;
  options.header_timeout = milliseconds(300);
  options.body_timeout = milliseconds(300);
  Fixture f(options);
  {
    RawClient client(f.server.port());
    client.send("GET /v1/health HTTP/1.1\r\nHost: x\r\n");  // never finished
    CHECK(client.receive().status == 408);
  }
  {
    RawClient client(f.server.port());
    Request r = put("slow", "0123456789");
    std::string wire = signed_wire(f.secret, r);
    client.send(wire.substr(0, wire.size() - 5));  // body cut short
    CHECK(client.receive().status == 408);
  }
  CHECK_FALSE(f.server.table().get("s/slow").has_value());
}

TEST_CASE("connections over the limit are refused with 503") {
  HttpServer::Options options;
  options.max_connections = 2;
  Fixture f(options);
  RawClient a(f.server.port()), b(f.server.port());
  a.send(signed_wire(f.secret, Request{}));
  b.send(signed_wire(f.secret, Request{}));
  CHECK(a.receive().status == 200);
  CHECK(b.receive().status == 200);
  RawClient c(f.server.port());
  CHECK(c.receive().status == 503);
}

// Polls the server's counters until `ready` holds (bounded), so that a
// test orders its connections without assuming how fast the server is.
template <typename Ready>
bool wait_for_stats(const HttpServer& server, Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!ready(server.stats())) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

HttpServer::Options at_most(std::size_t connections) {
  HttpServer::Options options;
  options.max_connections = connections;
  return options;
}

// A connection that has made an authenticated request: never evicted.
std::unique_ptr<RawClient> member_of(Fixture& f) {
  auto member = std::make_unique<RawClient>(f.server.port());
  member->send(signed_wire(f.secret, Request{}));
  REQUIRE(member->receive().status == 200);
  return member;
}

TEST_CASE("a full server evicts the oldest silent stranger for a newcomer; members stay") {
  Fixture f(at_most(2));
  auto member = member_of(f);
  RawClient stranger(f.server.port());  // never says a word
  REQUIRE(wait_for_stats(f.server, [](const HttpServer::Stats& s) { return s.connections == 2; }));
  RawClient newcomer(f.server.port());
  newcomer.send(signed_wire(f.secret, Request{}));
  CHECK(newcomer.receive().status == 200);
  CHECK(stranger.receive().status == 503);  // told that nothing of it was processed
  member->send(signed_wire(f.secret, Request{}));
  CHECK(member->receive().status == 200);
}

TEST_CASE("HttpStore: a full server (503) is retried until a connection frees up") {
  Fixture f(at_most(1));
  auto member = member_of(f);
  std::thread release([&] {
    // The store's first attempt is refused; then the member leaves.
    wait_for_stats(f.server, [](const HttpServer::Stats& s) { return s.rejected >= 1; });
    member.reset();
  });
  HttpStore store = f.store();
  store.set("s", "k", "v");
  release.join();
  CHECK(f.server.table().get("s/k") == std::optional<std::string>("v"));
}

TEST_CASE("HttpStore: a server that stays full is reported after the connect deadline") {
  Fixture f(at_most(1));
  const auto member = member_of(f);
  HttpStore::Options store_options;
  store_options.connect_deadline = milliseconds(300);
  HttpStore store("127.0.0.1", f.server.port(), f.secret, store_options);
  try {
    store.set("s", "k", "v");
    FAIL("no error");
  } catch (const trainrun::Error& e) {
    CHECK(std::string(e.what()).find("HTTP 503 (too many connections)") != std::string::npos);
  }
  CHECK(f.server.stats().rejected >= 2);  // retried, not given up at once
}

TEST_CASE("keep-alive: many requests over one connection") {
  Fixture f;
  RawClient client(f.server.port());
  for (int i = 0; i < 50; ++i) {
    client.send(signed_wire(f.secret, put("k" + std::to_string(i), std::to_string(i))));
    CHECK(client.receive().status == 200);
  }
  CHECK(f.server.table().size() == 50);
  CHECK(f.server.stats().connections == 1);
}

TEST_CASE("HttpStore: set, long-poll get, range get, add") {
  Fixture f;
  HttpStore store = f.store();
  CHECK(store.healthy());
  store.set("s", "a", std::string("\0bin", 4));
  CHECK(store.get("s", "a", milliseconds(100)) == std::string("\0bin", 4));

  // A value published later by another client wakes the long poll.
  std::thread writer([&] {
    std::this_thread::sleep_for(milliseconds(200));
    HttpStore other = f.store();
    other.set("s", "late", "here");
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK(store.get("s", "late", milliseconds(5000)) == "here");
  CHECK(std::chrono::steady_clock::now() - start < milliseconds(4000));
  writer.join();

  for (int i = 0; i < 4; ++i) store.set("mesh", "addr." + std::to_string(i), "v" + std::to_string(i));
  CHECK(store.get_range("mesh", "addr.", 1, 3, milliseconds(100)) == std::vector<std::string>{"v1", "v2", "v3"});

  std::vector<std::thread> adders;
  for (int t = 0; t < 8; ++t) {
    adders.emplace_back([&] {
      HttpStore mine = f.store();
      for (int i = 0; i < 25; ++i) mine.add("s", "counter", 1);
    });
  }
  for (auto& t : adders) t.join();
  CHECK(store.add("s", "counter", 0) == 200);
}

TEST_CASE("HttpStore: waiting for absent keys times out naming them") {
  Fixture f;
  HttpStore store = f.store();
  store.set("mesh", "addr.0", "x");
  try {
    store.get_range("mesh", "addr.", 0, 3, milliseconds(300));
    FAIL("expected a timeout");
  } catch (const trainrun::Error& e) {
    CHECK(e.code() == trainrun::Error::Code::Timeout);
    const std::string message = e.what();
    CHECK(message.find("still missing: 'addr.1', 'addr.2'") != std::string::npos);
  }
  try {
    store.get("s", "never", milliseconds(200));
    FAIL("expected a timeout");
  } catch (const trainrun::Error& e) {
    CHECK(std::string(e.what()).find("key 's/never'") != std::string::npos);
  }
}

TEST_CASE("HttpStore: an unreachable server is named with its errno, after bounded retries") {
  // Bind a port and close it so nothing listens there.
  Fixture f;
  const std::uint16_t port = f.server.port();
  f.server.stop();
  HttpStore::Options options;
  options.connect_deadline = milliseconds(500);
  HttpStore store("127.0.0.1", port, f.secret, options);
  const auto start = std::chrono::steady_clock::now();
  try {
    store.set("s", "k", "v");
    FAIL("expected an I/O error");
  } catch (const trainrun::Error& e) {
    CHECK(e.code() == trainrun::Error::Code::Io);
    const std::string message = e.what();
    CHECK(message.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
    CHECK(message.find("ECONNREFUSED") != std::string::npos);
    CHECK(message.find("attempt") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - start < milliseconds(3000));
}

TEST_CASE("HttpStore with the wrong secret explains the 401") {
  Fixture f;
  HttpStore store("127.0.0.1", f.server.port(), generate_secret());
  try {
    store.set("s", "k", "v");
    FAIL("expected an error");
  } catch (const trainrun::Error& e) {
    CHECK(std::string(e.what()).find("HTTP 401") != std::string::npos);
    CHECK(std::string(e.what()).find("secret") != std::string::npos);
  }
  CHECK(f.server.table().size() == 0);
}
