// HostProbe: the questions a launcher asks a host agent before it sends
// the job (pre-flight, `trainrun doctor`) and the agent's answers, found on
// the agent's own host: is the program there and executable, does the
// working directory exist, which address does this host have on the job's
// network (by the same rule its ranks will use) with a free port on it for
// torch's MASTER_PORT, and, for the doctor, can it reach the rendezvous and
// its peers. The encodings are pure; answer() and reach() do the checks.
// Owned by the agent; not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "os/unique_fd.h"

namespace trainrun::cli {

struct ProbeRequest {
  std::string program;          // argv[0] as typed; empty: not checked
  std::string path;             // PATH to search (-x PATH=...); empty: the agent's
  std::string cwd;              // the job's working directory
  std::string rendezvous_addr;  // default rule: this host's address toward it
  std::string network;          // --network CIDR, or empty
  std::string interface;        // --network-interface, or empty
  bool listen = false;          // open a port for peers to try (doctor)
};

struct ProbeAnswer {
  std::string program_error;    // empty: found and executable
  std::string cwd_error;        // empty: the directory exists
  std::string address;          // this host on the job's network
  std::string address_error;    // why there is no address
  std::uint16_t free_port = 0;  // free on `address` when asked
  std::uint16_t listen_port = 0;
};

struct ReachTarget {
  std::string name;  // for the answer's reader ("rendezvous", "h2")
  std::string address;
  std::uint16_t port = 0;
};

std::string encode_probe_request(const ProbeRequest& request);
std::optional<ProbeRequest> decode_probe_request(std::string_view payload);
std::string encode_probe_answer(const ProbeAnswer& answer);
std::optional<ProbeAnswer> decode_probe_answer(std::string_view payload);
std::string encode_reach_request(const std::vector<ReachTarget>& targets);
std::optional<std::vector<ReachTarget>> decode_reach_request(std::string_view payload);
// One entry per target: empty when it was reached, else why not.
std::string encode_reach_answer(const std::vector<std::string>& errors);
std::optional<std::vector<std::string>> decode_reach_answer(std::string_view payload, std::size_t count);

class HostProbe {
 public:
  HostProbe() = default;
  HostProbe(const HostProbe&) = delete;
  HostProbe& operator=(const HostProbe&) = delete;

  // A ProbeResult payload for a Probe payload.
  std::string answer(std::string_view request);
  // A ReachResult payload: connects to every target at once, 3 s each.
  std::string reach(std::string_view request);

 private:
  UniqueFd listen_fd_;  // the listener a probe asked for, kept open for the job
  std::uint16_t listen_port_ = 0;
};

}  // namespace trainrun::cli
