// Where an allreduce across hosts changes algorithm, chosen per size from a
// cost model of each level (docs/design.md §13): the launcher prints the
// switch points (--verbose) and the ranks use the same ones, so both come
// from here. Pure.
//
// The candidates, for H hosts of L ranks each (S: the message's bytes):
//   flat        recursive doubling over the TCP mesh among all H*L ranks:
//               log2(L) rounds between ranks of a host (loopback TCP) and
//               log2(H) across, where all L ranks of a host send S at once;
//   leader      a shared-memory allreduce in each host (one round for small
//               S), then local rank 0 alone allreduces the host sum with its
//               counterparts on the other hosts and broadcasts the result
//               in shared memory (its peers spin for it): S on each link;
//   replicated  (only by override, below leader=SIZE) as leader, but every
//               local rank carries the host sum across: no broadcast, but
//               each link carries L*S and every local rank waits on the
//               network; measured slower than leader at every size on 2
//               hosts x 2 ranks;
//   split       shared-memory reduce-scatter, each local rank allreduces
//               its 1/L block across hosts, shared-memory allgather: two
//               rounds in the host, S on each link, in chunks of
//               chunk_bytes that overlap (the link never waits for shared
//               memory; among 3 or more hosts from blocks of
//               cross_ring_min, below it by recursive doubling, unchunked).
// Reducescatter (backends/tcp/two_level_reducescatter.h) has a leader and
// a split of its own, costed alike, each host's share crossing once.
// Each crossing is costed as it runs: 2 hosts one exchange; more,
// recursive doubling below cross_ring_min (3 steps for 3 hosts: the fold
// costs 2) and a ring from it, per flow (the split's blocks are S/L).
// The costs: a round in shared memory 5 us + 0.25 ns/B (40 us + 0.25 ns/B
// right after a network round every local rank took part in, where it waits
// for the slowest local rank's),
// over loopback TCP 20 us + 0.5 ns/B, across hosts 30 us + 8 ns/B
// (1 Gbit/s). The model
// assumes the slow link: on a faster one the split starts at a larger size
// than it could, which costs one shared-memory round per call;
// assuming a fast link on a slow one would cost L-1 extra copies of the
// message on the wire.
//
// TRAINRUN_SWITCH_POINTS (launcher --switch-points) overrides any of them:
// "two-level=SIZE,leader=SIZE|never,split=SIZE,reducescatter-split=SIZE,
// chunk=SIZE" (each optional;
// SIZE in bytes with an optional K, M or G; two-level=never keeps every size
// flat; leader=SIZE makes sizes below it replicated, never all of them).
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <string>

namespace trainrun::detail {

struct SwitchPoints {
  static constexpr std::size_t kNever = std::numeric_limits<std::size_t>::max();
  std::size_t two_level_min = 0;  // from this size two-level, below it flat
  std::size_t split_min = 0;      // two-level from this size is split, below it leader (or replicated)
  std::size_t leader_min = 0;     // two-level below split_min: from this size leader, below it replicated
  // Two-level allgather: from this total size each local rank carries only
  // its own block across, below it every block of its host.
  std::size_t allgather_split_min = 0;
  // Two-level reducescatter: from this total size each local rank carries
  // its blocks' share across, below it local rank 0 carries the host's.
  std::size_t reducescatter_split_min = 0;
  std::size_t chunk_bytes = 256 * 1024;  // the split's pipeline chunk
};

// From how many bytes an allreduce among the hosts (the cross mesh) runs a
// ring instead of recursive doubling: 16 KiB when the host count is no
// power of two (doubling's fold costs 2 more steps of the whole message;
// 3 x 2, 16 KiB leader: 180 us by ring, 276 by doubling; 8 KiB: 155
// against 138), else direct_allreduce's own choice (256 KiB between 2,
// 64 KiB among more).
std::size_t cross_ring_min(int hosts);

// The model's points for `hosts` hosts of `ranks_per_host` ranks each.
SwitchPoints model_switch_points(int hosts, int ranks_per_host);

// The model's points with `spec` (TRAINRUN_SWITCH_POINTS) applied; nullopt
// and `error` naming the bad part when it does not parse.
std::optional<SwitchPoints> switch_points(int hosts, int ranks_per_host, const std::string& spec, std::string& error);

// "flat below 0 B ..." for --verbose: one phrase per switch.
std::string describe(const SwitchPoints& points);

// "64 KiB", "1 MiB", "12 B".
std::string byte_size_text(std::size_t bytes);

}  // namespace trainrun::detail
