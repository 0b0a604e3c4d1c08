// Frames on a per-node launch's connections (cli/node) when a step must
// finish before the next: the handshake, a control message. Each call
// waits at most until its deadline; the socket stays non-blocking.
// Stateless; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cli/agent/agent_protocol.h"
#include "os/net.h"

namespace trainrun::cli::node {

// The whole frame written by `deadline`; false with `*error` saying why.
bool send_frame(int fd, FrameType type, std::string_view payload, net::Deadline deadline, std::string* error);
// The next frame from `fd` (bytes past it stay in `reader`), or nullopt
// with `*error` saying why: "timed out", "closed", an errno, a bad frame.
std::optional<Frame> receive_frame(int fd, FrameReader& reader, net::Deadline deadline, std::string* error);

}  // namespace trainrun::cli::node
