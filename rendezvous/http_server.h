// The rendezvous HTTP server that runs inside the launcher (Boost.Beast on
// Asio, one I/O thread). It authenticates every request before reading its
// body, enforces the limits of contract/limits.h, and serves the KV table with
// long-poll waits. start()/stop()/port() are for the owning thread; table()
// and stats() may be used from any thread while it runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "rendezvous/auth.h"
#include "rendezvous/kv_table.h"
#include "contract/limits.h"

namespace trainrun::rendezvous {

class HttpServer {
 public:
  struct Options {
    std::string bind_address = "127.0.0.1";  // never 0.0.0.0 unless asked
    std::uint16_t port = 0;                  // 0: the kernel picks
    std::size_t max_connections = contract::kMaxConnections;
    std::chrono::milliseconds header_timeout = contract::kHeaderTimeout;
    std::chrono::milliseconds body_timeout = contract::kBodyTimeout;
    std::chrono::milliseconds idle_timeout = contract::kIdleTimeout;
  };
  struct Stats {
    std::uint64_t requests = 0;      // headers parsed
    std::uint64_t unauthorized = 0;  // 401 answers
    std::uint64_t rejected = 0;      // other 4xx/5xx answers
    std::uint64_t connections = 0;   // accepted so far
    std::uint64_t peak_open = 0;     // most connections open at once
  };

  HttpServer(const Secret& secret, Options options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens (Error(Io) naming the address and errno on failure),
  // then serves on a background thread.
  void start();
  void stop();
  std::uint16_t port() const;
  const std::string& bind_address() const;
  KvTable& table();
  Stats stats() const;

  struct Impl;  // defined in http_server.cc, with the per-connection Session

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainrun::rendezvous
