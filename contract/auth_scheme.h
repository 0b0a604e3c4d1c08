// The launcher <-> rank contract: how a rank signs its rendezvous requests
// with the job's secret (rendezvous/auth.h implements it): header names,
// the scheme, the sizes of secret and nonce, the clock skew allowed.
// Constants only; safe from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>

namespace trainrun::contract {

// ---- Authentication ------------------------------------------------------
// Signature = hex(HMAC-SHA256(secret, METHOD \n TARGET \n BODY_SHA256_HEX \n
//                              TIMESTAMP_MS \n NONCE_HEX)).
inline constexpr std::string_view kHeaderAuthorization = "Authorization";
inline constexpr std::string_view kHeaderTimestamp = "X-Trainrun-Timestamp";
inline constexpr std::string_view kHeaderNonce = "X-Trainrun-Nonce";
inline constexpr std::string_view kHeaderContentSha256 = "X-Trainrun-Content-Sha256";
inline constexpr std::string_view kAuthScheme = "TRAINRUN-HMAC-SHA256";
inline constexpr std::size_t kSecretBytes = 32;
inline constexpr std::size_t kNonceBytes = 16;
// A request whose timestamp is further than this from the server's clock is
// stale; nonces are remembered for twice this long to refuse replays.
inline constexpr std::chrono::milliseconds kMaxClockSkew{120'000};

}  // namespace trainrun::contract
