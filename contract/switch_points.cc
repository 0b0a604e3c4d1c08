#include "contract/switch_points.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace trainrun::detail {
namespace {

// One level: a round's latency (us) and its cost per byte (us).
struct Level {
  double latency_us, us_per_byte;
  double round(double bytes) const { return latency_us + bytes * us_per_byte; }
};
constexpr Level kShm{5.0, 0.25e-3};
// A shared-memory round right after a network round: the host's ranks
// arrive as their own network rounds end, so it waits for the slowest
// (measured 20-60 us more on 2 hosts x 2 ranks, 16 B - 16 KiB).
constexpr Level kShmAfterLink{40.0, 0.25e-3};
constexpr Level kLoopback{20.0, 0.5e-3};
constexpr Level kLink{30.0, 8e-3};
constexpr std::size_t kShmOneRoundMax = 32 * 1024;  // ShmCollectives::kSmallBytes

double rounds(int ranks) { return ranks > 1 ? std::ceil(std::log2(ranks)) : 0.0; }

// Steps of recursive doubling among n ranks: 2 more (the fold) when n is no power of two.
double doubling_steps(int n) {
  const double pow2 = std::floor(std::log2(n));
  return pow2 + (std::exp2(pow2) == n ? 0 : 2);
}

// direct_allreduce among the hosts (one rank each per flow) of `block` bytes
// per flow, `flows` flows sharing each host's link, as it runs: 2 hosts one
// exchange; more, recursive doubling (with a fold, 2 steps more, when the
// count is no power of two) below cross_ring_min, else a ring.
double cross_allreduce(double block, int hosts, int flows) {
  if (hosts == 2) return kLink.latency_us + flows * block * kLink.us_per_byte;
  if (block < cross_ring_min(hosts)) {
    return doubling_steps(hosts) * (kLink.latency_us + flows * block * kLink.us_per_byte);
  }
  return 2 * (hosts - 1) * kLink.latency_us + 2.0 * (hosts - 1) / hosts * flows * block * kLink.us_per_byte;
}

double flat(double s, int hosts, int local) {
  return rounds(local) * kLoopback.round(s) +
         doubling_steps(hosts) * (kLink.latency_us + local * s * kLink.us_per_byte);
}

double shm_allreduce(double s, int local) {
  if (s <= kShmOneRoundMax) return kShm.latency_us + local * s * kShm.us_per_byte;
  return 2 * kShm.round(s);
}

double replicated(double s, int hosts, int local) {
  return shm_allreduce(s, local) + rounds(hosts) * (kLink.latency_us + local * s * kLink.us_per_byte);
}

double leader(double s, int hosts, int local) {
  return shm_allreduce(s, local) + cross_allreduce(s, hosts, 1) + kShm.round(s);
}

double split(double s, int hosts, int local) {
  return kShm.round(s) + kShmAfterLink.round(s) + cross_allreduce(s / local, hosts, local);
}

// Reducescatter: direct_reducescatter among the hosts, a ring of H-1 steps
// that each move one host's share (`share` bytes per flow).
double cross_reducescatter(double share, int hosts, int flows) {
  return (hosts - 1) * (kLink.latency_us + flows * share * kLink.us_per_byte);
}

// The host's sum in shared memory, local rank 0 carries it across, shares
// the host's blocks in shared memory.
double reducescatter_leader(double s, int hosts, int local) {
  return shm_allreduce(s, local) + cross_reducescatter(s / hosts, hosts, 1) + kShm.round(s / hosts);
}

// Shared-memory reduce-scatters, each local rank carries its blocks across.
double reducescatter_split(double s, int hosts, int local) {
  return kShm.round(s) + kShmAfterLink.round(s / hosts) + cross_reducescatter(s / hosts / local, hosts, local);
}

bool parse_size(const std::string& text, std::size_t& out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  std::size_t scale = 1;
  const std::string unit(end);
  if (unit == "K" || unit == "k" || unit == "KiB") scale = 1024;
  else if (unit == "M" || unit == "m" || unit == "MiB") scale = 1024 * 1024;
  else if (unit == "G" || unit == "g" || unit == "GiB") scale = 1024ull * 1024 * 1024;
  else if (!unit.empty() && unit != "B") return false;
  if (v > (std::size_t(1) << 40)) return false;
  out = static_cast<std::size_t>(v) * scale;
  return true;
}

}  // namespace

std::size_t cross_ring_min(int hosts) {
  const bool power_of_two = hosts > 0 && (hosts & (hosts - 1)) == 0;
  if (!power_of_two) return 16 * 1024;
  return hosts == 2 ? 256 * 1024 : 64 * 1024;  // direct_allreduce's own (backends/tcp/direct_collectives.cc)
}

SwitchPoints model_switch_points(int hosts, int ranks_per_host) {
  SwitchPoints points;
  if (hosts < 2 || ranks_per_host < 2) {
    points.two_level_min = SwitchPoints::kNever;
    return points;
  }
  points.two_level_min = SwitchPoints::kNever;
  points.split_min = SwitchPoints::kNever;
  points.reducescatter_split_min = SwitchPoints::kNever;
  std::size_t split_over_replicated = SwitchPoints::kNever;
  // Powers of two from 4 B to 1 GiB: the first size where each choice wins.
  auto first = [](std::size_t& point, std::size_t s, bool wins) {
    if (point == SwitchPoints::kNever && wins) point = s == 4 ? 0 : s;
  };
  for (std::size_t s = 4; s <= (std::size_t(1) << 30); s *= 2) {
    const double f = flat(s, hosts, ranks_per_host), l = leader(s, hosts, ranks_per_host),
                 p = split(s, hosts, ranks_per_host);
    first(points.two_level_min, s, std::min(l, p) < f);
    first(points.split_min, s, p <= l);
    first(split_over_replicated, s, p <= replicated(s, hosts, ranks_per_host));
    first(points.reducescatter_split_min, s,
          reducescatter_split(s, hosts, ranks_per_host) <= reducescatter_leader(s, hosts, ranks_per_host));
  }
  // Allgather's replicated variant costs (L-1)/H of the message more on each
  // link where allreduce's costs L-1 times it: it pays up to H times the size.
  points.allgather_split_min = split_over_replicated == SwitchPoints::kNever
                                   ? SwitchPoints::kNever
                                   : split_over_replicated * static_cast<std::size_t>(hosts);
  return points;
}

std::optional<SwitchPoints> switch_points(int hosts, int ranks_per_host, const std::string& spec, std::string& error) {
  SwitchPoints points = model_switch_points(hosts, ranks_per_host);
  std::stringstream items(spec);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    std::size_t bytes = 0;
    const bool never = value == "never";
    if (!never && !parse_size(value, bytes)) {
      error = "'" + item + "': the value is not a size in bytes (e.g. 64K, 1M)";
      return std::nullopt;
    }
    if (key == "two-level") {
      points.two_level_min = never ? SwitchPoints::kNever : bytes;
    } else if (key == "split" && !never) {
      points.split_min = bytes;
    } else if (key == "leader") {
      points.leader_min = never ? SwitchPoints::kNever : bytes;
    } else if (key == "reducescatter-split" && !never) {
      points.reducescatter_split_min = bytes;
    } else if (key == "chunk" && !never && bytes >= 4096) {
      points.chunk_bytes = bytes;
    } else {
      error = "'" + item +
              "': expected two-level=SIZE|never, leader=SIZE|never, split=SIZE, reducescatter-split=SIZE or chunk=SIZE "
              "(at least 4K)";
      return std::nullopt;
    }
  }
  return points;
}

std::string byte_size_text(std::size_t bytes) {
  if (bytes >= (std::size_t(1) << 30) && bytes % (std::size_t(1) << 30) == 0) {
    return std::to_string(bytes >> 30) + " GiB";
  }
  if (bytes >= (std::size_t(1) << 20) && bytes % (std::size_t(1) << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string describe(const SwitchPoints& points) {
  if (points.two_level_min == SwitchPoints::kNever) return "TCP mesh at every size";
  std::string text;
  if (points.two_level_min > 0) text = "TCP mesh below " + byte_size_text(points.two_level_min) + ", ";
  const std::size_t split_from = std::max(points.split_min, points.two_level_min);
  const std::size_t leader_from = std::clamp(points.leader_min, points.two_level_min, split_from);
  if (leader_from > points.two_level_min) {
    text +=
        "two-level with every local rank carrying the host's sum across below " + byte_size_text(leader_from) + ", ";
  }
  if (split_from > leader_from) {
    text += "two-level with local rank 0 carrying the host's sum across below " + byte_size_text(split_from) + ", ";
  }
  return text + "two-level with each local rank carrying 1/L across from " + byte_size_text(split_from) +
         " (pipelined in " + byte_size_text(points.chunk_bytes) + " chunks)";
}

}  // namespace trainrun::detail
