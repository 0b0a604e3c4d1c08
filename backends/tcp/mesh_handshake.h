// The direct mesh's challenge-response, as pure functions (no sockets), so
// that it can be unit-tested and fuzzed. The accepting (lower) rank sends a
// random challenge; the connecting (higher) rank answers with its rank and
// an HMAC under the job secret that binds the challenge and both ranks; the
// acceptor confirms with one byte, so that a connector whose connection was
// dropped before it was accepted knows to connect again. Thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "rendezvous/auth.h"

namespace trainrun::detail::mesh_handshake {

inline constexpr std::size_t kChallengeBytes = 32;  // hex text of 16 random bytes
inline constexpr std::size_t kReplyBytes = 4 + 64;  // rank (uint32) + HMAC-SHA256 hex
inline constexpr char kAccepted = 'A';

std::string make_challenge();
// What rank `rank` answers to `peer`'s challenge.
std::string make_reply(const rendezvous::Secret& secret, std::string_view challenge, int rank, int peer);
// The rank that `reply` (kReplyBytes) proves to be, answering `challenge`
// sent by `rank` in a world of `size`; nullopt when the rank is out of
// range (a connector is always a higher rank) or the MAC does not match.
std::optional<int> verify_reply(const rendezvous::Secret& secret, std::string_view challenge, std::string_view reply,
                                int rank, int size);

}  // namespace trainrun::detail::mesh_handshake
