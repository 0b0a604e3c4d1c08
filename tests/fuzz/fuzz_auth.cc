// Authenticator::check on fuzzed request fields and signatures. Input:
// byte 0 chooses whether the signature is computed correctly (so that the
// freshness and replay checks are reached), byte 1 is a clock offset in
// seconds, then '\n'-separated method, target, body digest, timestamp,
// nonce and signature.
#include "rendezvous/auth.h"
#include "tests/fuzz/fuzz_input.h"

using namespace trainrun::rendezvous;
using trainrun::fuzz::next_field;

namespace {

// A fixed clock (2024-01-01) keeps runs reproducible.
constexpr std::int64_t kNow = 1'704'067'200'000;

const Secret& secret() {
  static const Secret s = *secret_from_hex(std::string(64, 'a'));
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const bool sign_it = data[0] & 1;
  const std::int64_t now = kNow + (static_cast<std::int64_t>(data[1]) - 128) * 1000;
  std::string_view rest = trainrun::fuzz::as_text(data + 2, size - 2);
  SignedRequest request;
  request.method = next_field(rest);
  request.target = next_field(rest);
  request.body_sha256 = next_field(rest);
  request.timestamp_ms = next_field(rest);
  request.nonce = next_field(rest);
  const std::string signature = sign_it ? sign(secret(), request) : std::string(next_field(rest));

  Authenticator auth(secret());
  const AuthResult first = auth.check(request, signature, now);
  FUZZ_CHECK(to_string(first) != nullptr);
  // Only a correct signature gets past Malformed/BadSignature.
  if (first == AuthResult::Ok || first == AuthResult::Stale || first == AuthResult::Replayed) {
    FUZZ_CHECK(constant_time_equal(signature, sign(secret(), request)));
  }
  // A request is accepted at most once.
  const AuthResult second = auth.check(request, signature, now);
  if (first == AuthResult::Ok) FUZZ_CHECK(second == AuthResult::Replayed);
  else FUZZ_CHECK(second == first);
  return 0;
}
