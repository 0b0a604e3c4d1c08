#include "rendezvous/http_store.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <charconv>
#include <cstring>
#include <thread>

#include "rendezvous/kv_request.h"
#include "os/net.h"
#include "contract/http_scheme.h"
#include "contract/auth_scheme.h"
#include "contract/limits.h"
#include "trainrun/error.h"

namespace trainrun::rendezvous {
namespace {

namespace p = contract;
using std::chrono::milliseconds;

[[noreturn]] void throw_io(const std::string& message) { throw Error(Error::Code::Io, message); }

using net::errno_text;

std::string describe_keys(std::string_view body) {
  std::string out;
  std::size_t shown = 0, total = 0, start = 0;
  while (start < body.size()) {
    std::size_t end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    if (end > start) {
      ++total;
      if (shown < 8) {
        out += (shown ? ", '" : "'") + std::string(body.substr(start, end - start)) + "'";
        ++shown;
      }
    }
    start = end + 1;
  }
  if (total > shown) out += " and " + std::to_string(total - shown) + " more";
  return out;
}

}  // namespace

HttpStore::HttpStore(std::string host, std::uint16_t port, const Secret& secret)
    : HttpStore(std::move(host), port, secret, Options()) {}

HttpStore::HttpStore(std::string host, std::uint16_t port, const Secret& secret, Options options)
    : host_(std::move(host)), port_(port),
      address_(host_.find(':') != std::string::npos ? "[" + host_ + "]:" + std::to_string(port)
                                                    : host_ + ":" + std::to_string(port)),
      secret_(secret), options_(options) {}

HttpStore::~HttpStore() { disconnect(); }

void HttpStore::disconnect() {
  fd_.reset();
  parser_ = ResponseParser();
}

void HttpStore::connect_once(Clock::time_point deadline) {
  int error = 0;
  std::string resolve_error;
  fd_ = net::connect_tcp(host_, std::to_string(port_), deadline, &error, &resolve_error);
  if (!resolve_error.empty()) {
    throw_io("rendezvous server " + address_ + ": cannot resolve host: " + resolve_error);
  }
  if (!fd_) throw std::system_error(error, std::generic_category());
}

void HttpStore::ensure_connected() {
  if (fd_ && connection_alive()) return;
  disconnect();
  const auto start = Clock::now();
  const auto deadline = start + options_.connect_deadline;
  auto backoff = milliseconds(20);
  int attempts = 0;
  while (true) {
    ++attempts;
    try {
      connect_once(std::min(deadline, Clock::now() + milliseconds(3000)));
      return;
    } catch (const std::system_error& e) {
      if (Clock::now() + backoff >= deadline) {
        const auto spent = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
        throw_io("rendezvous server " + address_ + " unreachable after " + std::to_string(attempts) +
                 " attempt(s) over " + std::to_string(spent.count()) + " ms: connect: " + errno_text(e.code().value()));
      }
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, milliseconds(500));
  }
}

bool HttpStore::connection_alive() const {
  // A kept-alive connection the server has closed reads as EOF; find out
  // before sending so that no request is lost in that race.
  pollfd pfd{fd_.get(), POLLIN, 0};
  if (::poll(&pfd, 1, 0) <= 0) return true;
  char byte;
  const ssize_t n = ::recv(fd_.get(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

HttpResponse HttpStore::exchange(const std::string& wire, Clock::time_point deadline) {
  std::size_t sent = 0;
  while (sent < wire.size()) {
    const ssize_t n = ::send(fd_.get(), wire.data() + sent, wire.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!net::wait_fd(fd_.get(), POLLOUT, deadline)) throw_io("rendezvous server " + address_ + ": send timed out");
    } else if (n < 0 && errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "send");
    }
  }
  char buffer[64 * 1024];
  while (true) {
    const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, 0);
    if (n > 0) {
      const auto state = parser_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
      if (state == ResponseParser::State::Done) return parser_.take();
      if (state == ResponseParser::State::Error) {
        throw_io("rendezvous server " + address_ + ": bad response: " + parser_.error());
      }
    } else if (n == 0) {
      throw std::system_error(ECONNRESET, std::generic_category(), "connection closed by server");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!net::wait_fd(fd_.get(), POLLIN, deadline)) {
        throw Error(Error::Code::Timeout, "rendezvous server " + address_ + ": no response in time");
      }
    } else if (errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "recv");
    }
  }
}

// A full server (503: it processed nothing) and a lost connection are
// retried with backoff for as long as a connection may take (the job's
// start timeout), so a flood of strangers delays a rank instead of failing
// it. A POST whose connection broke is not retried: it may have been applied.
HttpResponse HttpStore::request(std::string_view method, std::string_view target, std::string_view body,
                                milliseconds timeout) {
  const bool idempotent = method != "POST";
  const auto give_up = Clock::now() + options_.connect_deadline;
  auto backoff = milliseconds(0);
  while (true) {
    ensure_connected();
    const std::string timestamp = std::to_string(now_unix_ms());
    const std::string nonce = random_hex(p::kNonceBytes);
    const std::string digest = sha256_hex(body);
    const std::string signature = sign(secret_, SignedRequest{method, target, digest, timestamp, nonce});
    const HeaderList headers = {
        {std::string(p::kHeaderTimestamp), timestamp},
        {std::string(p::kHeaderNonce), nonce},
        {std::string(p::kHeaderContentSha256), digest},
        {std::string(p::kHeaderAuthorization), std::string(p::kAuthScheme) + " " + signature},
    };
    const std::string wire = format_request(method, target, host_, headers, body);
    try {
      HttpResponse response = exchange(wire, Clock::now() + timeout);
      if (!response.keep_alive) disconnect();
      if (response.status != 503 || Clock::now() + backoff >= give_up) return response;
    } catch (const std::system_error& e) {
      disconnect();
      if (!idempotent || Clock::now() + backoff >= give_up) {
        throw_io("rendezvous server " + address_ + ": " + std::string(method) + " " + std::string(target) +
                 " failed: " + errno_text(e.code().value()));
      }
    } catch (...) {
      disconnect();
      throw;
    }
    std::this_thread::sleep_for(backoff);  // the first retry is at once (a stale keep-alive)
    backoff = std::clamp(backoff * 2, milliseconds(20), milliseconds(500));
  }
}

void HttpStore::fail_status(std::string_view what, const HttpResponse& response) const {
  std::string message =
      "rendezvous server " + address_ + " refused " + std::string(what) + ": HTTP " + std::to_string(response.status);
  if (response.status == 401) {
    message += " (the job secret does not match: was this process started by this job's trainrun?)";
  } else if (!response.body.empty() && response.body.size() < 200) {
    message += " (" + response.body.substr(0, response.body.find('\n')) + ")";
  }
  throw Error(response.status == 400 || response.status == 413 ? Error::Code::InvalidArgument : Error::Code::Io,
              message);
}

void HttpStore::set(std::string_view scope, std::string_view key, std::string_view value) {
  const std::string target = kv_target(scope, key);
  const HttpResponse response = request("PUT", target, value, options_.request_timeout);
  if (response.status != 200) fail_status("PUT " + target, response);
}

// Long-polls `target` until it answers 200 or `timeout` passes. frames == 0:
// one raw value; otherwise a multi-key answer of that many frames.
std::vector<std::string> HttpStore::wait_for(const std::string& description,
                                             const std::function<std::string(milliseconds)>& target, std::size_t frames,
                                             milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string last_missing;
  while (true) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    const milliseconds wait = std::clamp(left, milliseconds(0), p::kMaxWait);
    const std::string path = target(wait);
    const HttpResponse response = request("GET", path, "", wait + options_.request_timeout);
    if (response.status == 200) {
      if (frames == 0) return {response.body};
      auto values = decode_frames(response.body, frames);
      if (!values) throw_io("rendezvous server " + address_ + ": malformed multi-key answer");
      return std::move(*values);
    }
    if (response.status != 404) fail_status("GET " + path, response);
    last_missing = response.body;
    if (Clock::now() >= deadline) {
      const std::string missing = describe_keys(last_missing);
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.1f", timeout.count() / 1000.0);
      throw Error(Error::Code::Timeout, "rendezvous: timed out after " + std::string(seconds) + " s waiting for " +
                                            description + (missing.empty() ? "" : " (still missing: " + missing + ")"));
    }
  }
}

std::string HttpStore::get(std::string_view scope, std::string_view key, milliseconds timeout) {
  const std::string name = std::string(scope) + "/" + std::string(key);
  auto values = wait_for(
      "key '" + name + "'", [&](milliseconds wait) { return kv_get_target(scope, key, wait); }, 0, timeout);
  return std::move(values.front());
}

std::vector<std::string> HttpStore::get_range(std::string_view scope, std::string_view prefix, std::uint64_t first,
                                              std::uint64_t count, milliseconds timeout) {
  if (count == 0) return {};
  const std::string description = "keys '" + std::string(scope) + "/" + std::string(prefix) + std::to_string(first) +
                                  "'..'" + std::string(prefix) + std::to_string(first + count - 1) + "'";
  return wait_for(
      description, [&](milliseconds wait) { return kv_get_range_target(scope, prefix, first, count, wait); }, count,
      timeout);
}

std::int64_t HttpStore::add(std::string_view scope, std::string_view key, std::int64_t delta) {
  const std::string target = kv_add_target(scope, key);
  const HttpResponse response = request("POST", target, std::to_string(delta), options_.request_timeout);
  if (response.status != 200) fail_status("POST " + target, response);
  std::int64_t value = 0;
  const auto parsed = std::from_chars(response.body.data(), response.body.data() + response.body.size(), value);
  if (parsed.ec != std::errc()) throw_io("rendezvous server " + address_ + ": add answered a non-integer");
  return value;
}

bool HttpStore::healthy() { return request("GET", p::kHealthPath, "", options_.request_timeout).status == 200; }

}  // namespace trainrun::rendezvous
