// Request authentication for the rendezvous: the per-job secret, request
// signatures (HMAC-SHA256 under the secret) and the replay guard.
// Pure logic: no sockets. Authenticator is thread-safe (internal mutex);
// the free functions are stateless.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "contract/auth_scheme.h"

namespace trainrun::rendezvous {

using Secret = std::array<std::uint8_t, contract::kSecretBytes>;

// A fresh secret from the OS CSPRNG (OpenSSL RAND_bytes).
Secret generate_secret();
// Random bytes as lower-case hex (nonces, job ids).
std::string random_hex(std::size_t bytes);
std::string to_hex(const void* data, std::size_t size);
std::string to_hex(const Secret& secret);
// Parses exactly 2*kSecretBytes hex digits; nullopt otherwise.
std::optional<Secret> secret_from_hex(std::string_view hex);
std::string sha256_hex(std::string_view data);

// The signed parts of one request.
struct SignedRequest {
  std::string_view method;
  std::string_view target;        // path plus query, exactly as sent
  std::string_view body_sha256;   // hex digest the client declares
  std::string_view timestamp_ms;  // decimal milliseconds since the epoch
  std::string_view nonce;         // hex, kNonceBytes random bytes
};

std::string sign(const Secret& secret, const SignedRequest& request);
// hex(HMAC-SHA256(secret, message)).
std::string hmac_sha256_hex(const Secret& secret, std::string_view message);
// Constant-time comparison of two strings of the same length.
bool constant_time_equal(std::string_view a, std::string_view b);

enum class AuthResult { Ok, Malformed, BadSignature, Stale, Replayed };
const char* to_string(AuthResult result);

// Checks signature (constant time), freshness and uniqueness of requests.
class Authenticator {
 public:
  explicit Authenticator(const Secret& secret) : secret_(secret) {}
  // `signature` is the hex after "TRAINRUN-HMAC-SHA256 ". A nonce is only
  // remembered when the signature is valid, so forgeries cannot fill the cache.
  AuthResult check(const SignedRequest& request, std::string_view signature, std::int64_t now_ms);

 private:
  void prune(std::int64_t now_ms);

  const Secret secret_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::int64_t> seen_nonces_;  // nonce -> timestamp
  std::int64_t last_prune_ms_ = 0;
};

std::int64_t now_unix_ms();

}  // namespace trainrun::rendezvous
