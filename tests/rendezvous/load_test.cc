// Rendezvous load test: N clients (default 1024) on loopback each PUT their
// key, then wait for all N keys in one long-poll range GET, as N ranks do in
// a Gloo full-mesh rendezvous. The server runs in a child process so that its
// peak RSS is its own. Exits 0 when every client got every value and the
// server answered no request with an error status; prints time and RSS.
//   load_test [clients]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/http_server.h"
#include "rendezvous/http_store.h"
#include "tests/integration/process_runner.h"
#include "trainrun/error.h"

using namespace trainrun::rendezvous;

namespace {

// Child: serve until the parent closes `control`, then report stats on `report`.
[[noreturn]] void serve(const Secret& secret, int port_pipe, int control, int report) {
  HttpServer server(secret, {});
  server.start();
  const std::uint16_t port = server.port();
  (void)!::write(port_pipe, &port, sizeof port);
  char byte;
  while (::read(control, &byte, 1) > 0) {
  }
  const HttpServer::Stats stats = server.stats();
  const long rss = trainrun::test::peak_rss_kib(::getpid());
  const std::uint64_t out[4] = {stats.requests, stats.rejected + stats.unauthorized, stats.peak_open,
                                static_cast<std::uint64_t>(rss)};
  (void)!::write(report, out, sizeof out);
  server.stop();
  ::_exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  const int clients = argc > 1 ? std::atoi(argv[1]) : 1024;
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);

  const Secret secret = generate_secret();
  int port_pipe[2], control[2], report[2];
  if (::pipe(port_pipe) || ::pipe(control) || ::pipe(report)) return 2;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(control[1]);
    serve(secret, port_pipe[1], control[0], report[1]);
  }
  ::close(control[0]);
  std::uint16_t port = 0;
  if (::read(port_pipe[0], &port, sizeof port) != sizeof port) return 2;

  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> threads;
  threads.reserve(clients);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      try {
        HttpStore store("127.0.0.1", port, secret);
        store.set("load", "k" + std::to_string(i), "value-of-rank-" + std::to_string(i));
        const auto values = store.get_range("load", "k", 0, clients, std::chrono::seconds(60));
        bool all = values.size() == static_cast<std::size_t>(clients);
        for (int k = 0; all && k < clients; ++k) all = values[k] == "value-of-rank-" + std::to_string(k);
        (all ? ok : failed)++;
      } catch (const trainrun::Error& e) {
        std::fprintf(stderr, "client %d: %s\n", i, e.what());
        failed++;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  ::close(control[1]);
  std::uint64_t stats[4] = {};
  (void)!::read(report[0], stats, sizeof stats);
  int status = 0;
  ::waitpid(child, &status, 0);

  std::printf(
      "rendezvous load: %d clients, %d ok, %d failed, %.3f s, %llu requests, "
      "%llu error answers, %llu peak connections, server peak RSS %.1f MiB\n",
      clients, ok.load(), failed.load(), seconds, static_cast<unsigned long long>(stats[0]),
      static_cast<unsigned long long>(stats[1]), static_cast<unsigned long long>(stats[2]), stats[3] / 1024.0);
  return (failed == 0 && ok == clients && stats[1] == 0) ? 0 : 1;
}
