#include "rendezvous/http_server.h"

#include <fcntl.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <limits>
#include <memory>
#include <deque>
#include <optional>
#include <thread>
#include <unordered_map>

#include "rendezvous/kv_request.h"
#include "trainrun/error.h"

namespace trainrun::rendezvous {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace p = contract;
using tcp = asio::ip::tcp;

std::string_view view(beast::string_view s) { return {s.data(), s.size()}; }

// Lets the server hold as many connections as its limit allows: the soft
// descriptor limit (often 1024) is raised to the hard one.
void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

class Session;

// What a full server answers: sent to a connection refused at accept and
// to a stranger evicted to make room, neither of which had a request
// processed, so a client may always retry it.
const std::string kBusy =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 20\r\nConnection: close\r\n\r\n"
    "too many connections";

// Asio opens sockets without O_CLOEXEC; the launcher forks agents. Not
// checked: F_SETFD fails only on a closed descriptor, and every child
// closes what it inherits before exec anyway (cli/process/subprocess.h).
void set_close_on_exec(int fd) { ::fcntl(fd, F_SETFD, FD_CLOEXEC); }

}  // namespace

struct HttpServer::Impl {
  Impl(const Secret& secret, Options opts) : options(std::move(opts)), auth(secret) {}

  Options options;
  Authenticator auth;
  KvTable table;
  std::atomic<std::uint64_t> requests{0}, unauthorized{0}, rejected{0}, connections{0}, peak_open{0};
  std::atomic<std::size_t> open{0};
  asio::io_context io{1};
  // Connections in the order they came, for eviction: when the server is
  // full, a newcomer evicts the oldest that has not sent an authenticated
  // request yet, so a flood of strangers delays a job's ranks but never
  // locks them out. Entries of closed or authenticated sessions are skipped
  // and pruned. I/O thread only; sessions never touch it.
  std::deque<std::weak_ptr<Session>> arrivals;
  std::optional<tcp::acceptor> acceptor;
  std::thread thread;
  std::uint16_t port = 0;
  asio::steady_timer retry_accept{io};

  // The framed body of GetMany's values, encoded once for every connection
  // answered with the same shared values (N ranks reading N addresses: one
  // body, not N). By the values' address, checked against their owner
  // (an address may be reused). I/O thread only.
  struct Framed {
    std::weak_ptr<const KvTable::Values> values;
    std::weak_ptr<const std::string> body;
  };
  std::unordered_map<const KvTable::Values*, Framed> framed;
  std::shared_ptr<const std::string> frames_of(const KvTable::SharedValues& values);

  void accept();
  bool evict_oldest_stranger();
  void prune_arrivals();
};

namespace {

// One client connection. Lives as long as an async operation holds it;
// runs only on the server's single I/O thread.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl& server)
      : stream_(std::move(socket)), server_(server), deadline_(stream_.get_executor()),
        wait_timer_(stream_.get_executor()) {
    const std::size_t now_open = ++server_.open;
    std::uint64_t peak = server_.peak_open.load();
    while (now_open > peak && !server_.peak_open.compare_exchange_weak(peak, now_open)) {
    }
  }
  ~Session() { --server_.open; }

  void start() {
    server_.arrivals.push_back(weak_from_this());
    read_header();
  }

  // True until the connection sends an authenticated request.
  bool stranger() const { return stranger_; }

  // Closes a stranger's connection, telling it 503 (nothing of it was
  // processed, so its client may retry).
  void evict() {
    stranger_ = false;
    ++server_.rejected;
    ::send(stream_.socket().native_handle(), kBusy.data(), kBusy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    close();
  }

 private:
  // Beast's own stream timeouts close the socket, which would leave no way
  // to answer 408; this deadline only cancels the pending read or write.
  void arm(std::chrono::milliseconds timeout) {
    timed_out_ = false;
    deadline_.expires_after(timeout);
    deadline_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;
      self->timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
  }

  void read_header() {
    header_.emplace();
    header_->header_limit(p::kMaxHeaderBytes);
    // Checked by us, after authentication; Beast would answer before it.
    header_->body_limit(std::numeric_limits<std::uint64_t>::max());
    arm(first_request_ ? server_.options.header_timeout : server_.options.idle_timeout);
    http::async_read_header(stream_, buffer_, *header_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    deadline_.cancel();
    if (timed_out_) {
      // An idle keep-alive connection just goes away; a half-sent header is 408.
      if (!first_request_ && buffer_.size() == 0) return close();
      return reject(408, "header not received in time");
    }
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
        ec == asio::error::operation_aborted) {
      return close();
    }
    if (ec == http::error::header_limit) return reject(431, "request header too large");
    if (ec) return reject(400, "malformed request: " + ec.message());

    ++server_.requests;
    const auto& req = header_->get();
    keep_alive_ = req.keep_alive();
    if (req.version() != 11 && req.version() != 10) return reject(400, "unsupported HTTP version");
    parsed_ = parse_kv_request(view(req.method_string()), view(req.target()));
    if (!parsed_.request) return reject(parsed_.status, parsed_.reason);

    const std::string_view authorization = view(req[p::kHeaderAuthorization.data()]);
    declared_digest_ = std::string(view(req[p::kHeaderContentSha256.data()]));
    const std::string scheme = std::string(p::kAuthScheme) + " ";
    const std::string_view signature =
        authorization.substr(0, scheme.size()) == scheme ? authorization.substr(scheme.size()) : std::string_view();
    const SignedRequest signed_request{view(req.method_string()), view(req.target()), declared_digest_,
                                       view(req[p::kHeaderTimestamp.data()]), view(req[p::kHeaderNonce.data()])};
    if (server_.auth.check(signed_request, signature, now_unix_ms()) != AuthResult::Ok) {
      // Identical for every key, present or not, and sent before any body byte is read.
      ++server_.unauthorized;
      return respond(401, "unauthorized\n", true);
    }
    stranger_ = false;

    if (req.chunked()) return reject(400, "chunked request bodies are not accepted");
    const std::uint64_t length = header_->content_length().value_or(0);
    if (length > p::kMaxBodyBytes) return reject(413, "body exceeds the limit");
    const KvOp op = parsed_.request->op;
    const bool takes_body = op == KvOp::Put || op == KvOp::Add;
    if (!takes_body && length != 0) return reject(400, "this request takes no body");

    body_.emplace(std::move(*header_));
    body_->body_limit(p::kMaxBodyBytes);
    if (body_->is_done()) return on_body({});
    arm(server_.options.body_timeout);
    http::async_read(stream_, buffer_, *body_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    deadline_.cancel();
    if (timed_out_) return reject(408, "body not received in time");
    if (ec == http::error::body_limit) return reject(413, "body exceeds the limit");
    if (ec) return close();
    const std::string& body = body_->get().body();
    if (sha256_hex(body) != declared_digest_) {
      ++server_.unauthorized;
      return respond(401, "unauthorized\n", true);
    }
    handle(body);
  }

  void handle(const std::string& body) {
    KvRequest& request = *parsed_.request;
    switch (request.op) {
      case KvOp::Health: return respond(200, "ok\n", false);
      case KvOp::Put: server_.table.set(request.keys.front(), body); return respond(200, "", false);
      case KvOp::Add: {
        std::int64_t delta = 0;
        const auto r = std::from_chars(body.data(), body.data() + body.size(), delta);
        if (r.ec != std::errc() || r.ptr != body.data() + body.size()) {
          return reject(400, "add takes a decimal int64 body");
        }
        const auto value = server_.table.add(request.keys.front(), delta);
        if (!value) return reject(409, "stored value is not an int64 or the sum overflows");
        return respond(200, std::to_string(*value), false);
      }
      case KvOp::Get:
      case KvOp::GetMany: return start_wait();
    }
  }

  void start_wait() {
    KvRequest& request = *parsed_.request;
    auto callback = [weak = weak_from_this(), executor = stream_.get_executor()](KvTable::SharedValues values) {
      asio::post(executor, [weak, values = std::move(values)]() mutable {
        if (auto self = weak.lock()) self->on_values(std::move(values));
      });
    };
    keys_ = server_.table.intern(std::move(request.keys));  // one list for every rank that asks for it
    auto now = server_.table.get_or_wait(keys_, std::move(callback), &wait_id_);
    if (now) return answer_values(std::move(*now));
    if (request.wait.count() == 0) {
      server_.table.cancel(wait_id_);
      return answer_missing();
    }
    waiting_ = true;
    wait_timer_.expires_after(request.wait);
    wait_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || !self->waiting_) return;
      // cancel() fails when the values arrived concurrently; their post answers.
      if (self->server_.table.cancel(self->wait_id_)) {
        self->waiting_ = false;
        self->answer_missing();
      }
    });
  }

  void on_values(KvTable::SharedValues values) {
    if (!waiting_) return;
    waiting_ = false;
    wait_timer_.cancel();
    answer_values(std::move(values));
  }

  void answer_values(const KvTable::SharedValues& values) {
    if (parsed_.request->op == KvOp::Get) return respond(200, values->front(), false);
    respond(200, server_.frames_of(values), false);
  }

  void answer_missing() {
    std::string body;
    for (const auto& key : server_.table.missing(*keys_)) {
      body.append(key.substr(key.find('/') + 1)).push_back('\n');
    }
    respond(404, std::move(body), false);
  }

  void reject(int status, std::string_view reason) {
    ++server_.rejected;
    respond(status, std::string(reason) + "\n", true);
  }

  void respond(int status, std::string body, bool close_after) {
    respond(status, std::make_shared<const std::string>(std::move(body)), close_after);
  }

  // `body` may be shared with other connections' answers; it lives until ours is written.
  void respond(int status, std::shared_ptr<const std::string> body, bool close_after) {
    close_after_ = close_after || !keep_alive_;
    response_ = {};
    response_.version(11);
    response_.result(static_cast<http::status>(status));
    response_.set(http::field::content_type,
                  status == 200 && !body->empty() ? "application/octet-stream" : "text/plain");
    response_.keep_alive(!close_after_);
    response_.body() = {body->data(), body->size()};
    response_body_ = std::move(body);
    response_.prepare_payload();
    arm(server_.options.body_timeout);  // a client that does not read is dropped
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_write(ec); });
  }

  void on_write(beast::error_code ec) {
    deadline_.cancel();
    if (ec || timed_out_ || close_after_) return close();
    first_request_ = false;
    header_.reset();
    body_.reset();
    read_header();
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  HttpServer::Impl& server_;
  asio::steady_timer deadline_;    // header, body and write phases
  asio::steady_timer wait_timer_;  // long-poll GET
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> header_;
  std::optional<http::request_parser<http::string_body>> body_;
  http::response<http::span_body<const char>> response_;
  std::shared_ptr<const std::string> response_body_;  // what response_'s body points into
  KvParse parsed_;
  std::string declared_digest_;
  KvTable::Keys keys_;  // a Get's or GetMany's, interned
  KvTable::WaitId wait_id_ = 0;
  bool waiting_ = false;
  bool timed_out_ = false;
  bool first_request_ = true;
  bool keep_alive_ = true;
  bool close_after_ = false;
  bool stranger_ = true;
};

}  // namespace

std::shared_ptr<const std::string> HttpServer::Impl::frames_of(const KvTable::SharedValues& values) {
  Framed& entry = framed[values.get()];
  if (entry.values.lock() == values) {
    if (auto body = entry.body.lock()) return body;
  }
  auto body = std::make_shared<const std::string>(encode_frames(*values));
  entry = {values, body};
  if (framed.size() > 1024) {  // bodies no answer holds any more
    for (auto it = framed.begin(); it != framed.end();) it = it->second.body.expired() ? framed.erase(it) : ++it;
  }
  return body;
}

bool HttpServer::Impl::evict_oldest_stranger() {
  while (!arrivals.empty()) {
    const auto oldest = arrivals.front().lock();
    arrivals.pop_front();
    if (oldest && oldest->stranger()) {
      oldest->evict();
      return true;
    }
  }
  return false;
}

void HttpServer::Impl::prune_arrivals() {
  if (arrivals.size() <= 2 * options.max_connections) return;
  arrivals.erase(std::remove_if(arrivals.begin(), arrivals.end(),
                                [](const std::weak_ptr<Session>& w) {
                                  const auto s = w.lock();
                                  return !s || !s->stranger();
                                }),
                 arrivals.end());
}

void HttpServer::Impl::accept() {
  acceptor->async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (ec == asio::error::no_descriptors) {
      // Out of descriptors: make room, or wait for some to close.
      if (!evict_oldest_stranger()) {
        retry_accept.expires_after(std::chrono::milliseconds(50));
        return retry_accept.async_wait([this](beast::error_code e) {
          if (!e) accept();
        });
      }
    }
    if (!ec) {
      set_close_on_exec(socket.native_handle());
      ++connections;
      prune_arrivals();
      if (open.load() < options.max_connections || evict_oldest_stranger()) {
        std::make_shared<Session>(std::move(socket), *this)->start();
      } else {
        ++rejected;
        auto sock = std::make_shared<tcp::socket>(std::move(socket));
        asio::async_write(*sock, asio::buffer(kBusy), [sock](beast::error_code, std::size_t) {
          beast::error_code ignored;
          sock->shutdown(tcp::socket::shutdown_both, ignored);
        });
      }
    }
    accept();
  });
}

HttpServer::HttpServer(const Secret& secret, Options options)
    : impl_(std::make_unique<Impl>(secret, std::move(options))) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  raise_descriptor_limit();
  Impl& s = *impl_;
  beast::error_code ec;
  const auto address = asio::ip::make_address(s.options.bind_address, ec);
  const std::string where = s.options.bind_address + ":" + std::to_string(s.options.port);
  if (ec)
    throw Error(Error::Code::InvalidArgument, "rendezvous: invalid bind address '" + s.options.bind_address + "'");
  const tcp::endpoint endpoint(address, s.options.port);
  s.acceptor.emplace(s.io);
  auto check = [&](const char* what) {
    if (ec) throw Error(Error::Code::Io, "rendezvous: cannot " + std::string(what) + " " + where + ": " + ec.message());
  };
  s.acceptor->open(endpoint.protocol(), ec);
  check("open a socket for");
  set_close_on_exec(s.acceptor->native_handle());
  s.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  s.acceptor->bind(endpoint, ec);
  check("bind");
  s.acceptor->listen(asio::socket_base::max_listen_connections, ec);
  check("listen on");
  s.port = s.acceptor->local_endpoint().port();
  s.accept();
  s.thread = std::thread([&s] { s.io.run(); });
}

void HttpServer::stop() {
  Impl& s = *impl_;
  if (!s.thread.joinable()) return;
  asio::post(s.io, [&s] {
    beast::error_code ignored;
    s.acceptor->close(ignored);
    s.io.stop();
  });
  s.thread.join();
}

std::uint16_t HttpServer::port() const { return impl_->port; }
const std::string& HttpServer::bind_address() const { return impl_->options.bind_address; }
KvTable& HttpServer::table() { return impl_->table; }

HttpServer::Stats HttpServer::stats() const {
  return Stats{impl_->requests.load(), impl_->unauthorized.load(), impl_->rejected.load(), impl_->connections.load(),
               impl_->peak_open.load()};
}

}  // namespace trainrun::rendezvous
