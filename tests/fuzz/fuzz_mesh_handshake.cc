// The links' handshake as a stranger would play it: whatever bytes arrive
// as a reply, only the one made with the job secret for this very
// challenge, these two ranks and this channel verifies, and it names
// another rank of the world.
#include "backends/tcp/mesh_handshake.h"
#include "tests/fuzz/fuzz_input.h"

using namespace trainrun::detail;
namespace hs = mesh_handshake;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Byte 0: this rank (mod 16); byte 1: the world size (mod 32, at least 1);
  // then the challenge this rank sent (32 bytes) and the reply that came back.
  if (size < 2) return 0;
  const int rank = data[0] % 16;
  const int world = data[1] % 32 + 1;
  std::string_view rest = trainrun::fuzz::as_text(data + 2, size - 2);
  const std::string_view challenge = rest.substr(0, hs::kChallengeBytes);
  rest.remove_prefix(challenge.size());
  trainrun::rendezvous::Secret secret;
  secret.fill(0x5a);

  const auto claimed = hs::verify_reply(secret, challenge, rest, rank, world);
  if (claimed) {
    FUZZ_CHECK(claimed->rank != rank && claimed->rank >= 0 && claimed->rank < world);
    FUZZ_CHECK(rest == hs::make_reply(secret, challenge, claimed->rank, rank, claimed->channel));
  }
  // The genuine reply of every other rank, on either channel, verifies and names it.
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    for (const hs::Channel channel : {hs::Channel::kMesh, hs::Channel::kP2P}) {
      const std::string reply = hs::make_reply(secret, challenge, peer, rank, channel);
      FUZZ_CHECK(reply.size() == hs::kReplyBytes);
      FUZZ_CHECK((hs::verify_reply(secret, challenge, reply, rank, world) == hs::Claim{peer, channel}));
    }
  }
  return 0;
}
