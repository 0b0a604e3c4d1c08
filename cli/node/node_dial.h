// A node's side of a connection to node 0 in a per-node launch
// (cli/node): connect, answer node 0's challenge with the join, take the
// welcome or the refusal (cli/node/node_protocol.h). The control connection
// keeps trying while node 0 is not up yet (a scheduler starts the nodes in
// any order); an agent connection tries once. Blocking, with deadlines.
#pragma once

#include <functional>
#include <string>

#include "cli/agent/agent_protocol.h"
#include "cli/node/node_protocol.h"
#include "cli/node/node_settings.h"
#include "os/net.h"
#include "os/unique_fd.h"

namespace trainrun::cli::node {

struct Dialed {
  UniqueFd fd;           // connected and welcomed; none on failure
  Welcome welcome;       // when fd
  FrameReader reader;    // bytes node 0 sent after the welcome
  std::string error;     // when !fd: one line ("node 0 at h1:29500 refused this node: ...")
  bool refused = false;  // node 0 answered and said no (retrying will not help)
};

// `join` without its nonce (made here). `waiting` is called once per
// failed try of the control connection with why (to say, now and then,
// what the node waits for); retries stop at `deadline` or when
// `stop()` says so (a signal arrived).
Dialed dial_node0(const NodeSettings& settings, Join join, const SharedSecret& secret, net::Deadline deadline,
                  const std::function<void(const std::string&)>& waiting, const std::function<bool()>& stop);

}  // namespace trainrun::cli::node
