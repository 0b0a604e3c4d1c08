// The Gloo backend: collectives over Gloo's TCP transport, wired up through
// the job's rendezvous store. See backends/backend.h for the contract.
#pragma once

#include <memory>
#include <string>

#include "backends/backend.h"

namespace trainrun::detail {

std::unique_ptr<Backend> make_gloo_backend(const BackendContext& context);
std::string gloo_version();

}  // namespace trainrun::detail
