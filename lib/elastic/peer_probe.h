// PeerProbe: whether this worker's host still reaches the hosts of its
// generation's other workers, so that the launcher can find a network
// partition (cli/elastic/partition.h) while every process is alive and
// beating. It listens on an ephemeral port of the address this host uses
// towards the launcher (a probe's connection completes in the kernel's
// backlog; nothing is read, the backlog is drained) and publishes it as
// probe.{w}. When this process's collectives have been stuck (some in
// progress, none finishing, sampled on every tick) for
// kProbeAfter, it connects to one worker on each other host and publishes
// reach.{w} = "STUCK_MS W W ..." (how long it has been stuck when the
// probes ended, the workers it could not reach; none: "STUCK_MS"), again
// kProbeAfter after each round while stuck.
// The GenerationWatcher's thread alone uses it (and its store).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "contract/world.h"
#include "contract/elastic_protocol.h"
#include "rendezvous/store.h"
#include "os/unique_fd.h"

namespace trainrun::detail {

class PeerProbe {
 public:
  static constexpr std::chrono::milliseconds kProbeAfter{3000};
  static constexpr std::chrono::milliseconds kConnectTimeout{2000};

  PeerProbe(const World& world, elastic_protocol::Assignment joined);
  ~PeerProbe();
  PeerProbe(const PeerProbe&) = delete;
  PeerProbe& operator=(const PeerProbe&) = delete;

  // Called on every heartbeat: publishes the listener once, drains it, and
  // probes when due. Store errors pass through (the watcher retries).
  void tick(rendezvous::Store& store);
  // This worker left its generation after a collective failed and waits
  // for the next: stuck from its last progress on, whatever the backend's
  // counters say (they start again with the next backend). Any thread.
  void hold() noexcept { held_ = true; }

 private:
  void publish(rendezvous::Store& store);
  void probe(rendezvous::Store& store);
  std::chrono::milliseconds stuck_for(std::chrono::steady_clock::time_point now);

  const int worker_;
  const elastic_protocol::Assignment joined_;
  std::string host_;     // this worker's host, as the launcher names it
  std::string address_;  // towards the launcher
  UniqueFd listen_fd_;
  std::uint16_t port_ = 0;
  bool published_ = false;
  std::chrono::steady_clock::time_point next_probe_{};
  std::uint64_t finished_ = 0;                      // collectives finished at the last change
  std::chrono::steady_clock::time_point moved_at_;  // when they last moved (or none waited)
  std::atomic<bool> held_{false};
};

}  // namespace trainrun::detail
