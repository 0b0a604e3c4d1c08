// Elastic jobs (trainrun --min-np/--max-np/--host-discovery-script): how the
// launcher tells workers which generation of the job they belong to. Every
// worker has a stable worker id (TRAINRUN_WORKER_ID) for the life of its
// process; its rank changes from one generation to the next. Scope
// "elastic" of the rendezvous store:
//
//   gen.{g}       the Assignment of generation g (encode_assignment); written
//                 once, before `generation` names it
//   generation    the newest generation, decimal
//   ready.{w}     "host pid": worker w started and waits for a generation
//                 that includes it (workers started after generation 0)
//   alive.{w}     worker w's heartbeat: a number that changes every
//                 kHeartbeat while the worker's process runs in a
//                 generation (written by its generation watcher); the
//                 launcher removes a worker whose heartbeat stopped
//                 (--elastic-hang-timeout): a stopped or frozen process
//   probe.{w}     "address port" where worker w's host can be reached by
//                 its peers' probes (lib/elastic/peer_probe.h)
//   reach.{w}     "STUCK_MS W ...": worker w's collectives have been stuck
//                 that long, and it could not reach workers W ... (one per
//                 other host); the launcher resolves a partition from these
//   left.{w}      "G CAUSE": worker w left generation G on its own (CAUSE:
//                 the error of the collective that failed) and waits for the next; when it has been stuck
//                 for the hang timeout and reaches every peer (no partition
//                 to resolve), the launcher re-forms the same workers
//
// A worker joins generation g only if gen.{g} lists it; the backend of
// generation g rendezvouses in its own scopes (tcp.{g}, nccl.{g}), so a
// worker of an older generation never meets one of a newer. Pure encoding;
// no I/O.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainrun::elastic_protocol {

inline constexpr std::string_view kScope = "elastic";
inline constexpr std::string_view kKeyGeneration = "generation";
inline constexpr std::string_view kKeyAssignmentPrefix = "gen.";
inline constexpr std::string_view kKeyReadyPrefix = "ready.";
inline constexpr std::string_view kKeyAlivePrefix = "alive.";
inline constexpr std::string_view kKeyProbePrefix = "probe.";
inline constexpr std::string_view kKeyReachPrefix = "reach.";
inline constexpr std::string_view kKeyLeftPrefix = "left.";
// How often a worker rewrites alive.{w}; the hang timeout's floor is a few of these.
inline constexpr std::chrono::milliseconds kHeartbeat{500};

// One worker's place in a generation.
struct Slot {
  int worker = 0;
  int rank = 0;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
  std::string host;  // as the launcher names it (TRAINRUN_HOSTNAME)
};

struct Assignment {
  int generation = 0;
  std::vector<Slot> slots;  // in rank order: slots[r].rank == r

  int size() const { return static_cast<int>(slots.size()); }
  const Slot* find(int worker) const;
};

// "generation G\n" then one line per slot, in rank order:
// "worker rank local_rank local_size cross_rank cross_size host\n".
std::string encode_assignment(const Assignment& assignment);
// nullopt when malformed: a bad number, a host with spaces, or ranks that
// are not 0..size-1 in order.
std::optional<Assignment> decode_assignment(std::string_view text);

std::string assignment_key(int generation);  // "gen.{g}"
std::string ready_key(int worker);           // "ready.{w}"
std::string alive_key(int worker);           // "alive.{w}"
std::string probe_key(int worker);           // "probe.{w}"
std::string reach_key(int worker);           // "reach.{w}"
std::string left_key(int worker);            // "left.{w}"

}  // namespace trainrun::elastic_protocol
