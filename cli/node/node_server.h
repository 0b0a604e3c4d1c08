// NodeServer: node 0's side of a per-node launch (cli/node). It listens
// where the nodes reach node 0, takes each connection through the handshake
// (cli/node/node_protocol.h), and keeps every joined node's control
// connection for the whole job: the nodes' signals arrive there, each run's
// NodeAttempt and the job's NodeEnd leave there. A node's agent connection
// for a run is handed to that run (agents()). A node's signal becomes this
// process's own (kill(getpid(), sig)), so the supervisor, which reads the
// job's signals, stops the job on every node as for a Ctrl-C on node 0.
// A stranger's connection is closed after a failed or slow handshake (10 s;
// at most 64 at a time, the oldest closed first) and never reaches the job.
// Single-threaded: driven by its own waits (join(), agents(), end()) and,
// while the supervisor runs, by the supervisor's poll loop (EventSource).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cli/agent/agent_protocol.h"
#include "cli/job/supervisor.h"
#include "cli/mode/host_source.h"
#include "cli/node/node_protocol.h"
#include "cli/node/node_settings.h"
#include "os/unique_fd.h"

namespace trainrun::cli::node {

// A node of the job, as node 0 knows it.
struct NodeInfo {
  int rank = 0;
  std::string name;     // in the plan and in messages: its host name, with "#RANK" after it where
                        // another node of the job had that name first (never renamed)
  std::string host;     // the host name it gave
  std::string address;  // where it joined from (node 0: where the nodes reach it)
  int nproc = 1;        // its ranks
};

class NodeServer final : public EventSource, public HostSource {
 public:
  using Clock = std::chrono::steady_clock;
  using Note = std::function<void(const std::string&)>;

  // `listener`: listening, non-blocking. `self`: node 0 (its address is
  // filled in from the first node's connection).
  NodeServer(NodeSettings settings, SharedSecret secret, UniqueFd listener, NodeInfo self, bool verbose);

  struct Joined {
    bool ok = false;
    int signal = 0;     // a job signal ended the wait (read from `signal_fd`)
    std::string error;  // the wait timed out: one line naming who is missing
  };
  // Until every node has joined (elastic: MAX, or MIN and then the last
  // call), a job signal on `signal_fd`, or the join timeout.
  Joined join(int signal_fd);
  // Every node in the job, node 0 first, in node order.
  std::vector<NodeInfo> nodes() const;
  // HostSource: the nodes as the plan's hosts, in node order, each with
  // where it joined from and its ranks as slots; an elastic job's nodes
  // come and go.
  std::vector<HostSlots> hosts() const override;
  std::uint64_t version() const override { return version_; }
  std::optional<std::string> take_failure() override { return std::nullopt; }
  std::string gone(const std::string& host) const override;

  struct Agents {
    std::vector<UniqueFd> sockets;  // one per node of nodes() but node 0, in that order
    std::string error;              // when empty sockets: the node that did not start its agent
  };
  // Asks every node to start its agent for run `run` of the job and waits
  // (at most `timeout`) for their connections.
  Agents agents(int run, std::chrono::milliseconds timeout);
  // An elastic job's new node: asks the node named `name` for its agent
  // for this run and waits (at most `timeout`) for it; none, with
  // `*error`, when the node does not come.
  UniqueFd agent_for(const std::string& name, std::chrono::milliseconds timeout, std::string* error);
  // The job is over: NodeEnd to every node, then until they have closed
  // their connections (at most `linger`).
  void end(const JobEnd& end, std::chrono::milliseconds linger);

  // EventSource: the listener, handshakes in progress, control connections.
  void add_fds(std::vector<pollfd>& fds) override;
  bool owns(int fd) const override;
  void on_ready(const pollfd& ready, const Note& note) override;

 private:
  struct Pending {
    UniqueFd fd;
    std::string challenge;
    FrameReader reader;
    Clock::time_point deadline;
  };
  struct Control {
    NodeInfo node;
    UniqueFd fd;
    FrameReader reader;
    std::string token;
  };

  void accept_all();
  void read_pending(Pending& pending, const Note& note);
  void take_join(Pending& pending, const Join& join, const Note& note);
  std::string refusal(const Join& join) const;
  int free_rank() const;
  void read_control(Control& control, const Note& note);
  void drop_control(int rank, const std::string& why, const Note& note);
  void expire_pending();
  // One turn of its own loop: waits up to `wait` (and for `signal_fd`);
  // true when `signal_fd` became readable.
  bool pump(std::chrono::milliseconds wait, int signal_fd, const Note& note);
  std::string missing() const;  // "node 2" / "1 node" names for the join error
  std::string unique_name(const std::string& host, int rank) const;

  NodeSettings settings_;
  SharedSecret secret_;
  UniqueFd listener_;
  NodeInfo self_;
  bool verbose_;
  std::vector<Pending> pending_;
  std::map<int, Control> controls_;  // by node rank
  std::map<int, UniqueFd> agents_;   // this run's agent connections, by node rank
  int run_ = -1;
  bool started_ = false;       // past join(): a late node is refused unless elastic
  std::uint64_t version_ = 0;  // +1 at each join and leave
};

}  // namespace trainrun::cli::node
