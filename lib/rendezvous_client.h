// A connection from this rank to the job's rendezvous store, as the
// launcher's environment names it (World: address, port, secret). The
// library's own users (init, the engine's straggler table) open theirs here.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "contract/world.h"
#include "rendezvous/http_store.h"

namespace trainrun::detail {

// Requires world.has_rendezvous(). Throws Error(InvalidArgument) naming
// TRAINRUN_SECRET when the secret is not hex of the right length.
std::unique_ptr<rendezvous::HttpStore> connect_rendezvous_store(const World& world,
                                                                rendezvous::HttpStore::Options options);

// Sets job/`key` in the launcher's store over a connection of its own (for
// its report); does nothing without a rendezvous, and ignores failures.
void publish_job_key(const World& world, std::string_view key, const std::string& value);

}  // namespace trainrun::detail
