// The direct mesh's handshake as a stranger would play it: whatever bytes
// arrive as a reply, only the one made with the job secret for this very
// challenge and these two ranks verifies, and it names a higher rank.
#include "backends/tcp/mesh_handshake.h"
#include "tests/fuzz/fuzz_input.h"

using namespace trainrun::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Byte 0: this rank (mod 16); byte 1: the world size (mod 32, at least 1);
  // then the challenge this rank sent (32 bytes) and the reply that came back.
  if (size < 2) return 0;
  const int rank = data[0] % 16;
  const int world = data[1] % 32 + 1;
  std::string_view rest = trainrun::fuzz::as_text(data + 2, size - 2);
  const std::string_view challenge = rest.substr(0, mesh_handshake::kChallengeBytes);
  rest.remove_prefix(challenge.size());
  trainrun::rendezvous::Secret secret;
  secret.fill(0x5a);

  const auto claimed = mesh_handshake::verify_reply(secret, challenge, rest, rank, world);
  if (claimed) {
    FUZZ_CHECK(*claimed > rank && *claimed < world);
    FUZZ_CHECK(rest == mesh_handshake::make_reply(secret, challenge, *claimed, rank));
  }
  // The genuine reply of every higher rank verifies, and names that rank.
  for (int peer = rank + 1; peer < world; ++peer) {
    const std::string reply = mesh_handshake::make_reply(secret, challenge, peer, rank);
    FUZZ_CHECK(reply.size() == mesh_handshake::kReplyBytes);
    FUZZ_CHECK(mesh_handshake::verify_reply(secret, challenge, reply, rank, world) == peer);
  }
  return 0;
}
