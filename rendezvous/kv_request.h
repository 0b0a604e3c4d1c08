// The grammar of the rendezvous KV API (docs/design.md §4): building request
// targets on the client, parsing them on the server, and the framing of
// multi-key answers. Pure functions, no I/O, thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainrun::rendezvous {

enum class KvOp { Health, Put, Get, GetMany, Add };

// A parsed request. `keys` hold full table names "scope/key".
struct KvRequest {
  KvOp op = KvOp::Health;
  std::vector<std::string> keys;
  std::chrono::milliseconds wait{0};  // clamped to contract::kMaxWait
};

// Result of parsing: either a request or the HTTP status to answer with
// (400 malformed, 404 unknown path, 405 method not allowed) and a reason.
struct KvParse {
  std::optional<KvRequest> request;
  int status = 0;
  std::string reason;
};

KvParse parse_kv_request(std::string_view method, std::string_view target);

bool is_valid_name(std::string_view name);

// Client-side target builders; names must satisfy is_valid_name.
std::string kv_target(std::string_view scope, std::string_view key);
std::string kv_add_target(std::string_view scope, std::string_view key);
std::string kv_get_target(std::string_view scope, std::string_view key, std::chrono::milliseconds wait);
std::string kv_get_many_target(std::string_view scope, const std::vector<std::string>& keys,
                               std::chrono::milliseconds wait);
std::string kv_get_range_target(std::string_view scope, std::string_view prefix, std::uint64_t first,
                                std::uint64_t count, std::chrono::milliseconds wait);

// Multi-key bodies: per value an 8-byte little-endian length, then bytes.
std::string encode_frames(const std::vector<std::string>& values);
// nullopt unless the body holds exactly `count` well-formed frames.
std::optional<std::vector<std::string>> decode_frames(std::string_view body, std::size_t count);

}  // namespace trainrun::rendezvous
