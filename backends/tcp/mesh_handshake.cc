#include "backends/tcp/mesh_handshake.h"

#include <cstdint>
#include <cstring>

namespace trainrun::detail::mesh_handshake {
namespace {

std::string signed_text(std::string_view challenge, std::uint32_t rank, int peer) {
  return "trainrun-mesh\n" + std::string(challenge) + "\n" + std::to_string(rank) + "\n" + std::to_string(peer);
}

}  // namespace

std::string make_challenge() { return rendezvous::random_hex(kChallengeBytes / 2); }

std::string make_reply(const rendezvous::Secret& secret, std::string_view challenge, int rank, int peer) {
  const auto me = static_cast<std::uint32_t>(rank);
  std::string reply(4, '\0');
  std::memcpy(reply.data(), &me, 4);
  return reply + rendezvous::hmac_sha256_hex(secret, signed_text(challenge, me, peer));
}

std::optional<int> verify_reply(const rendezvous::Secret& secret, std::string_view challenge, std::string_view reply,
                                int rank, int size) {
  if (reply.size() != kReplyBytes) return std::nullopt;
  std::uint32_t claimed = 0;
  std::memcpy(&claimed, reply.data(), 4);
  if (claimed <= static_cast<std::uint32_t>(rank) || claimed >= static_cast<std::uint32_t>(size)) {
    return std::nullopt;
  }
  const std::string expected = rendezvous::hmac_sha256_hex(secret, signed_text(challenge, claimed, rank));
  if (!rendezvous::constant_time_equal(expected, reply.substr(4))) return std::nullopt;
  return static_cast<int>(claimed);
}

}  // namespace trainrun::detail::mesh_handshake
