#include "backends/tcp/mesh_handshake.h"

#include <cstring>

namespace trainrun::detail::mesh_handshake {
namespace {

std::string signed_text(std::string_view challenge, std::uint32_t rank, int peer, Channel channel) {
  return "trainrun-mesh\n" + std::string(challenge) + "\n" + std::to_string(rank) + "\n" + std::to_string(peer) + "\n" +
         std::to_string(static_cast<int>(channel));
}

}  // namespace

std::string make_challenge() { return rendezvous::random_hex(kChallengeBytes / 2); }

std::string make_reply(const rendezvous::Secret& secret, std::string_view challenge, int rank, int peer,
                       Channel channel) {
  const auto me = static_cast<std::uint32_t>(rank);
  std::string reply(5, '\0');
  std::memcpy(reply.data(), &me, 4);
  reply[4] = static_cast<char>(channel);
  return reply + rendezvous::hmac_sha256_hex(secret, signed_text(challenge, me, peer, channel));
}

std::optional<Claim> verify_reply(const rendezvous::Secret& secret, std::string_view challenge, std::string_view reply,
                                  int rank, int size) {
  if (reply.size() != kReplyBytes) return std::nullopt;
  std::uint32_t claimed = 0;
  std::memcpy(&claimed, reply.data(), 4);
  const auto channel_byte = static_cast<std::uint8_t>(reply[4]);
  if (claimed == static_cast<std::uint32_t>(rank) || claimed >= static_cast<std::uint32_t>(size) ||
      channel_byte >= kChannels) {
    return std::nullopt;
  }
  const auto channel = static_cast<Channel>(channel_byte);
  const std::string expected = rendezvous::hmac_sha256_hex(secret, signed_text(challenge, claimed, rank, channel));
  if (!rendezvous::constant_time_equal(expected, reply.substr(5))) return std::nullopt;
  return Claim{static_cast<int>(claimed), channel};
}

}  // namespace trainrun::detail::mesh_handshake
