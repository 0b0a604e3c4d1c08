#include <doctest/doctest.h>

#include "rendezvous/auth.h"

using namespace trainrun::rendezvous;

namespace {

struct Signed {
  std::string method = "PUT", target = "/v1/kv/s/k", digest = sha256_hex("body");
  std::string timestamp, nonce = random_hex(16);
  explicit Signed(std::int64_t now) : timestamp(std::to_string(now)) {}
  SignedRequest view() const { return {method, target, digest, timestamp, nonce}; }
};

}  // namespace

TEST_CASE("sha256 and HMAC match published test vectors") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // HMAC-SHA256 with a 32-byte key of 0x0b.. over the signing string.
  Secret key;
  key.fill(0x0b);
  const std::string mac = sign(key, {"GET", "/v1/health", sha256_hex(""), "1", std::string(32, 'a')});
  CHECK(mac.size() == 64);
  CHECK(mac == sign(key, {"GET", "/v1/health", sha256_hex(""), "1", std::string(32, 'a')}));
  CHECK(mac != sign(key, {"GET", "/v1/healtH", sha256_hex(""), "1", std::string(32, 'a')}));
}

TEST_CASE("secrets round-trip through hex and are random") {
  const Secret a = generate_secret(), b = generate_secret();
  CHECK(a != b);
  CHECK(to_hex(a).size() == 64);
  CHECK(secret_from_hex(to_hex(a)) == a);
  CHECK_FALSE(secret_from_hex("abc").has_value());
  CHECK_FALSE(secret_from_hex(std::string(63, 'a') + "g").has_value());
  CHECK(random_hex(16).size() == 32);
}

TEST_CASE("authenticator accepts a fresh request once") {
  const Secret secret = generate_secret();
  Authenticator auth(secret);
  const std::int64_t now = 1'700'000'000'000;
  Signed request(now);
  const std::string mac = sign(secret, request.view());
  CHECK(auth.check(request.view(), mac, now) == AuthResult::Ok);
  CHECK(auth.check(request.view(), mac, now + 5) == AuthResult::Replayed);
}

TEST_CASE("authenticator rejects tampering, wrong keys, stale and malformed requests") {
  const Secret secret = generate_secret();
  Authenticator auth(secret);
  const std::int64_t now = 1'700'000'000'000;
  Signed request(now);
  const std::string mac = sign(secret, request.view());

  SUBCASE("wrong secret") {
    CHECK(auth.check(request.view(), sign(generate_secret(), request.view()), now) == AuthResult::BadSignature);
  }
  SUBCASE("tampered target") {
    Signed other = request;
    other.target = "/v1/kv/s/other";
    CHECK(auth.check(other.view(), mac, now) == AuthResult::BadSignature);
  }
  SUBCASE("tampered body digest") {
    Signed other = request;
    other.digest = sha256_hex("other body");
    CHECK(auth.check(other.view(), mac, now) == AuthResult::BadSignature);
  }
  SUBCASE("stale or future timestamp") {
    Signed old(now - 10 * 60 * 1000);
    old.nonce = request.nonce;
    CHECK(auth.check(old.view(), sign(secret, old.view()), now) == AuthResult::Stale);
    Signed future(now + 10 * 60 * 1000);
    CHECK(auth.check(future.view(), sign(secret, future.view()), now) == AuthResult::Stale);
  }
  SUBCASE("malformed fields") {
    CHECK(auth.check(request.view(), "", now) == AuthResult::Malformed);
    CHECK(auth.check(request.view(), mac.substr(1), now) == AuthResult::Malformed);
    Signed bad_nonce = request;
    bad_nonce.nonce = "xyz";
    CHECK(auth.check(bad_nonce.view(), sign(secret, bad_nonce.view()), now) == AuthResult::Malformed);
    Signed bad_time = request;
    bad_time.timestamp = "12a";
    CHECK(auth.check(bad_time.view(), sign(secret, bad_time.view()), now) == AuthResult::Malformed);
  }
  SUBCASE("a forged request does not burn the nonce") {
    CHECK(auth.check(request.view(), std::string(64, '0'), now) == AuthResult::BadSignature);
    CHECK(auth.check(request.view(), mac, now) == AuthResult::Ok);
  }
}

TEST_CASE("remembered nonces are forgotten only once they would be stale anyway") {
  const Secret secret = generate_secret();
  Authenticator auth(secret);
  const std::int64_t now = 1'700'000'000'000;
  Signed request(now);
  const std::string mac = sign(secret, request.view());
  CHECK(auth.check(request.view(), mac, now) == AuthResult::Ok);
  // Long after: the replay is refused as stale, whether or not the nonce was pruned.
  CHECK(auth.check(request.view(), mac, now + 3 * 120'000) == AuthResult::Stale);
}
