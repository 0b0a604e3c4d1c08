// The Gloo backend: collectives over Gloo's TCP transport, wired up through
// the job's rendezvous store. See backends/backend.h for the contract.
#pragma once

#include <memory>
#include <string>

#include "backends/backend.h"

namespace trainrun::detail {

std::unique_ptr<Backend> make_gloo_backend(const BackendContext& context);
std::string gloo_version();

// The local address a socket toward `host` would use (UDP connect +
// getsockname): the interface that routes to the rendezvous, never a guess.
std::string local_address_toward(const std::string& host);

}  // namespace trainrun::detail
