// Why an engine stops when some rank called trainrun::shutdown(): which
// ranks did. Every rank reads the same cycle status, so every rank makes
// this one allgather of a byte each in the cycle that stops it; nothing is
// spent before. A failing rank's peers then read "shut down by rank 3"
// (it exited, often after an error of its own) instead of "some rank".
#pragma once

#include <string>

#include "backends/backend.h"

namespace trainrun::detail {

// The message for the ops that the shutdown fails; collective. Falls back to
// a message without ranks when the allgather fails (a peer is gone).
std::string shutdown_cause(Backend& backend, bool requested_here, int size);

}  // namespace trainrun::detail
