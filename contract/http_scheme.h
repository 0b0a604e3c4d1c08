// The launcher <-> rank contract: the rendezvous store's HTTP URL scheme
// and the framing of multi-key answers (rendezvous/http_store.h speaks it,
// rendezvous/http_server.h answers it). Constants only; safe from any thread.
#pragma once

#include <cstddef>
#include <string_view>

namespace trainrun::contract {

// ---- URL scheme (docs/design.md §4) ---------------------------------------
//   PUT  /v1/kv/{scope}/{key}                      body = opaque bytes
//   GET  /v1/kv/{scope}/{key}?wait_ms=N            200 + bytes, or 404 at timeout
//   GET  /v1/kv/{scope}?keys=a,b,c&wait_ms=N       all keys, framed (see below)
//   GET  /v1/kv/{scope}?prefix=P&first=A&count=N   keys P{A} .. P{A+N-1}, framed
//   POST /v1/kv/{scope}/{key}/add                  body = int64 text -> new value
//   GET  /v1/health
// A multi-key answer is, per requested key in order, an 8-byte little-endian
// length followed by that many bytes. A multi-key 404 lists the missing keys,
// one per line. Scope and key names: 1..kMaxNameBytes of [A-Za-z0-9._-],
// other than "." and "..".
inline constexpr std::string_view kKvPrefix = "/v1/kv/";
inline constexpr std::string_view kHealthPath = "/v1/health";
inline constexpr std::string_view kAddSuffix = "/add";
inline constexpr std::string_view kQueryWaitMs = "wait_ms";
inline constexpr std::string_view kQueryKeys = "keys";
inline constexpr std::string_view kQueryPrefix = "prefix";
inline constexpr std::string_view kQueryFirst = "first";
inline constexpr std::string_view kQueryCount = "count";
inline constexpr std::size_t kFrameLengthBytes = 8;

}  // namespace trainrun::contract
