// How a rank that links lazily (backends/tcp/peer_links.h) may learn its
// peers' addresses, timed against the real rendezvous: run as
// `trainrun --local -np N address_lookup_bench MODE`, after every rank
// published a 22-byte address as the tcp backend does:
//   all   one multi-key GET of every rank's address at start (what
//         backends/tcp/tcp_transports.cc does);
//   lazy  one GET per peer when it is first needed: recursive doubling's
//         log2(N) partners, one after the other, as an allreduce meets them.
// Rank 0 prints the median and slowest rank's lookup time; trainrun's wall
// time is the job's. lazy_mesh_bench.py runs both.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "contract/environment.h"
#include "rendezvous/auth.h"
#include "rendezvous/http_store.h"

using namespace trainrun;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const char* secret_hex = std::getenv(contract::kEnvSecret);
  if ((mode != "all" && mode != "lazy") || !secret_hex) {
    std::fprintf(stderr, "usage: trainrun --local -np N address_lookup_bench all|lazy\n");
    return 2;
  }
  const int rank = std::atoi(std::getenv(contract::kEnvRank));
  const int size = std::atoi(std::getenv(contract::kEnvSize));
  rendezvous::HttpStore store(std::getenv(contract::kEnvRendezvousAddr),
                              static_cast<std::uint16_t>(std::atoi(std::getenv(contract::kEnvRendezvousPort))),
                              *rendezvous::secret_from_hex(secret_hex));
  const std::chrono::minutes wait(5);
  store.set("bench", "mesh." + std::to_string(rank), "127.0.0.1 " + std::to_string(40000 + rank));
  const auto start = Clock::now();
  if (mode == "all") {
    store.get_range("bench", "mesh.", 0, static_cast<std::uint64_t>(size), wait);
  } else {
    for (int distance = 1; distance < size; distance *= 2) {
      if ((rank ^ distance) < size) store.get("bench", "mesh." + std::to_string(rank ^ distance), wait);
    }
  }
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
  store.set("bench", "took." + std::to_string(rank), std::to_string(took));
  if (rank == 0) {
    std::vector<long> times;
    for (const std::string& t : store.get_range("bench", "took.", 0, static_cast<std::uint64_t>(size), wait)) {
      times.push_back(std::atol(t.c_str()));
    }
    std::sort(times.begin(), times.end());
    std::printf("%s: lookup median %.1f ms, slowest %.1f ms\n", mode.c_str(), times[times.size() / 2] / 1e3,
                times.back() / 1e3);
  }
  return 0;
}
