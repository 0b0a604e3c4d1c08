// Worker-side client of the rendezvous server: one keep-alive TCP
// connection, every request signed with the job secret, long-poll waits,
// bounded connection retries with errors that name the address and errno.
// Not thread-safe: one HttpStore per thread (the library owns one per
// communicator).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "rendezvous/auth.h"
#include "rendezvous/http_message.h"
#include "rendezvous/store.h"
#include "os/unique_fd.h"

namespace trainrun::rendezvous {

class HttpStore : public Store {
 public:
  struct Options {
    // Connection attempts, 503 answers (a server full of strangers) and
    // lost connections are retried with backoff until this much time has
    // passed (covers a launcher that is still starting its server).
    std::chrono::milliseconds connect_deadline{10'000};
    std::chrono::milliseconds request_timeout{30'000};
  };

  HttpStore(std::string host, std::uint16_t port, const Secret& secret);
  HttpStore(std::string host, std::uint16_t port, const Secret& secret, Options options);
  ~HttpStore() override;
  HttpStore(const HttpStore&) = delete;
  HttpStore& operator=(const HttpStore&) = delete;

  void set(std::string_view scope, std::string_view key, std::string_view value) override;
  std::string get(std::string_view scope, std::string_view key, std::chrono::milliseconds timeout) override;
  std::vector<std::string> get_range(std::string_view scope, std::string_view prefix, std::uint64_t first,
                                     std::uint64_t count, std::chrono::milliseconds timeout) override;
  std::int64_t add(std::string_view scope, std::string_view key, std::int64_t delta) override;
  bool healthy();  // GET /v1/health answered 200
  void release_connection() override { disconnect(); }

  // One signed request; exposed for tests and diagnostics. Retries once on a
  // fresh connection when a kept-alive one turns out to be dead, unless the
  // request is not idempotent.
  HttpResponse request(std::string_view method, std::string_view target, std::string_view body,
                       std::chrono::milliseconds timeout);

  const std::string& address() const { return address_; }  // "host:port"

 private:
  using Clock = std::chrono::steady_clock;
  void ensure_connected();
  void connect_once(Clock::time_point deadline);
  void disconnect();
  bool connection_alive() const;
  HttpResponse exchange(const std::string& wire, Clock::time_point deadline);
  std::vector<std::string> wait_for(const std::string& description,
                                    const std::function<std::string(std::chrono::milliseconds)>& target,
                                    std::size_t frames, std::chrono::milliseconds timeout);
  [[noreturn]] void fail_status(std::string_view what, const HttpResponse& response) const;

  const std::string host_;
  const std::uint16_t port_;
  const std::string address_;
  const Secret secret_;
  const Options options_;
  UniqueFd fd_;
  ResponseParser parser_;
};

}  // namespace trainrun::rendezvous
