// The challenge-response that proves a connection to a rank's link port
// comes from a peer of the same job, as pure functions (no sockets), so
// that it can be unit-tested and fuzzed. Either rank of a pair may dial
// (links are made at first use, peer_links.h): the accepting rank sends a
// random challenge; the dialling rank answers with its rank, the channel
// the link is for (the collectives' mesh or point-to-point) and an HMAC
// under the job secret that binds the challenge, both ranks and the
// channel; the acceptor answers with one byte: kAccepted (this connection
// is the link) or kOtherWay (a link of the pair is up or being made the
// other way: keeps_dial). A dialler whose connection was dropped before
// either byte knows to dial again. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rendezvous/auth.h"

namespace trainrun::detail::mesh_handshake {

// What a link carries: each pair of ranks has at most one link of each.
enum class Channel : std::uint8_t { kMesh = 0, kP2P = 1 };
inline constexpr int kChannels = 2;

inline constexpr std::size_t kChallengeBytes = 32;      // hex text of 16 random bytes
inline constexpr std::size_t kReplyBytes = 4 + 1 + 64;  // rank (uint32), channel, HMAC-SHA256 hex
inline constexpr char kAccepted = 'A';
inline constexpr char kOtherWay = 'R';

struct Claim {
  int rank;
  Channel channel;
  bool operator==(const Claim& other) const { return rank == other.rank && channel == other.channel; }
};

std::string make_challenge();
// What rank `rank` answers to `peer`'s challenge when it dials a link of `channel`.
std::string make_reply(const rendezvous::Secret& secret, std::string_view challenge, int rank, int peer,
                       Channel channel = Channel::kMesh);
// Who `reply` (kReplyBytes) proves to be, answering `challenge` sent by
// `rank` in a world of `size`; nullopt when the rank is out of range or
// this rank's own, the channel unknown, or the MAC does not match.
std::optional<Claim> verify_reply(const rendezvous::Secret& secret, std::string_view challenge, std::string_view reply,
                                  int rank, int size);

// The tie-break when both ranks of a pair dial each other at once (ring
// neighbours do, in the same step): the dial of the higher rank is kept.
// Whether `rank`, proven to be dialled by `from`, keeps that connection as
// the link, given whether its own dial to `from` is still in flight (then
// `from` refuses that one by the same rule). Once a link is up, every
// later dial of the pair is answered kOtherWay.
inline bool keeps_dial(int rank, int from, bool dialling) { return !dialling || from > rank; }

}  // namespace trainrun::detail::mesh_handshake
