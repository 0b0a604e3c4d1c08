#include "rendezvous/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <charconv>
#include <chrono>
#include <stdexcept>
#include <vector>

namespace trainrun::rendezvous {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_lower_hex(std::string_view s, std::size_t length) {
  if (s.size() != length) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Library threads (the elastic generation watcher, the engine's straggler
// report) may still talk to the rendezvous while a program that did not call
// trainrun::shutdown() exits. OpenSSL's atexit cleanup, registered after the
// library's statics, ran first and freed its locks under them: a SIGSEGV in
// RAND_bytes at exit instead of the program's exit code. The kernel frees
// what OpenSSL holds anyway.
[[maybe_unused]] const bool kOpenSslKeptUntilExit = OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr) == 1;

void fill_random(void* out, std::size_t size) {
  if (RAND_bytes(static_cast<unsigned char*>(out), static_cast<int>(size)) != 1) {
    throw std::runtime_error("OpenSSL RAND_bytes failed: no entropy for the job secret");
  }
}

}  // namespace

Secret generate_secret() {
  Secret secret;
  fill_random(secret.data(), secret.size());
  return secret;
}

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> buffer(bytes);
  fill_random(buffer.data(), buffer.size());
  return to_hex(buffer.data(), buffer.size());
}

std::string to_hex(const void* data, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string out(size * 2, '\0');
  for (std::size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return out;
}

std::string to_hex(const Secret& secret) { return to_hex(secret.data(), secret.size()); }

std::optional<Secret> secret_from_hex(std::string_view hex) {
  Secret secret;
  if (hex.size() != secret.size() * 2) return std::nullopt;
  for (std::size_t i = 0; i < secret.size(); ++i) {
    const int hi = hex_value(hex[2 * i]);
    const int lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    secret[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return secret;
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return to_hex(digest, sizeof digest);
}

std::string sign(const Secret& secret, const SignedRequest& request) {
  std::string message;
  message.reserve(request.method.size() + request.target.size() + 64 + 40);
  for (std::string_view part :
       {request.method, request.target, request.body_sha256, request.timestamp_ms, request.nonce}) {
    message.append(part);
    message.push_back('\n');
  }
  return hmac_sha256_hex(secret, message);
}

std::string hmac_sha256_hex(const Secret& secret, std::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &mac_size);
  return to_hex(mac, mac_size);
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

const char* to_string(AuthResult result) {
  switch (result) {
    case AuthResult::Ok: return "ok";
    case AuthResult::Malformed: return "malformed credentials";
    case AuthResult::BadSignature: return "bad signature";
    case AuthResult::Stale: return "stale timestamp";
    case AuthResult::Replayed: return "replayed nonce";
  }
  return "?";
}

AuthResult Authenticator::check(const SignedRequest& request, std::string_view signature, std::int64_t now_ms) {
  std::int64_t timestamp = 0;
  const auto* ts_end = request.timestamp_ms.data() + request.timestamp_ms.size();
  const auto parsed = std::from_chars(request.timestamp_ms.data(), ts_end, timestamp);
  if (parsed.ec != std::errc() || parsed.ptr != ts_end || !is_lower_hex(request.nonce, contract::kNonceBytes * 2) ||
      !is_lower_hex(request.body_sha256, SHA256_DIGEST_LENGTH * 2) || signature.size() != SHA256_DIGEST_LENGTH * 2) {
    return AuthResult::Malformed;
  }
  if (!constant_time_equal(sign(secret_, request), signature)) {
    return AuthResult::BadSignature;
  }
  const std::int64_t skew = contract::kMaxClockSkew.count();
  if (timestamp < now_ms - skew || timestamp > now_ms + skew) return AuthResult::Stale;

  std::lock_guard lock(mutex_);
  prune(now_ms);
  if (!seen_nonces_.emplace(std::string(request.nonce), timestamp).second) {
    return AuthResult::Replayed;
  }
  return AuthResult::Ok;
}

void Authenticator::prune(std::int64_t now_ms) {
  // A remembered nonce can be forgotten once its timestamp alone would
  // make the request stale; amortised over one clock-skew period.
  const std::int64_t skew = contract::kMaxClockSkew.count();
  if (now_ms - last_prune_ms_ < skew) return;
  last_prune_ms_ = now_ms;
  for (auto it = seen_nonces_.begin(); it != seen_nonces_.end();) {
    it = (it->second < now_ms - skew) ? seen_nonces_.erase(it) : std::next(it);
  }
}

std::int64_t now_unix_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace trainrun::rendezvous
