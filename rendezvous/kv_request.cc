#include "rendezvous/kv_request.h"

#include <algorithm>
#include <charconv>

#include "contract/http_scheme.h"
#include "contract/limits.h"

namespace trainrun::rendezvous {
namespace {

namespace p = contract;

KvParse fail(int status, std::string reason) {
  KvParse out;
  out.status = status;
  out.reason = std::move(reason);
  return out;
}

KvParse ok(KvRequest request) {
  KvParse out;
  out.request = std::move(request);
  return out;
}

template <typename Int>
bool parse_uint(std::string_view text, Int& value) {
  if (text.empty()) return false;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  return result.ec == std::errc() && result.ptr == text.data() + text.size();
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

struct Query {
  std::optional<std::string_view> wait_ms, keys, prefix, first, count;
};

// Accepts only the parameters the API knows, each at most once.
std::optional<Query> parse_query(std::string_view text) {
  Query query;
  if (text.empty()) return query;
  for (std::string_view item : split(text, '&')) {
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string_view name = item.substr(0, eq);
    const std::string_view value = item.substr(eq + 1);
    std::optional<std::string_view>* slot = nullptr;
    if (name == p::kQueryWaitMs) slot = &query.wait_ms;
    else if (name == p::kQueryKeys) slot = &query.keys;
    else if (name == p::kQueryPrefix) slot = &query.prefix;
    else if (name == p::kQueryFirst) slot = &query.first;
    else if (name == p::kQueryCount) slot = &query.count;
    if (!slot || slot->has_value()) return std::nullopt;
    *slot = value;
  }
  return query;
}

std::string full_name(std::string_view scope, std::string_view key) {
  std::string name;
  name.reserve(scope.size() + 1 + key.size());
  name.append(scope).append("/").append(key);
  return name;
}

// The keys of a multi-key GET, from either `keys=` or `prefix=&first=&count=`.
KvParse parse_many(std::string_view scope, const Query& query, KvRequest request) {
  request.op = KvOp::GetMany;
  if (query.keys && !query.prefix && !query.first && !query.count) {
    for (std::string_view key : split(*query.keys, ',')) {
      if (!is_valid_name(key)) return fail(400, "invalid key name");
      request.keys.push_back(full_name(scope, key));
    }
  } else if (!query.keys && query.prefix && query.first && query.count) {
    std::uint64_t first = 0, count = 0;
    if (!parse_uint(*query.first, first) || !parse_uint(*query.count, count) || first > (1ull << 40)) {
      return fail(400, "invalid key range");
    }
    if (count > p::kMaxKeysPerGet) return fail(400, "too many keys");
    for (std::uint64_t i = 0; i < count; ++i) {
      std::string key = std::string(*query.prefix) + std::to_string(first + i);
      if (!is_valid_name(key)) return fail(400, "invalid key name");
      request.keys.push_back(full_name(scope, key));
    }
  } else {
    return fail(400, "multi-key GET needs keys= or prefix=, first= and count=");
  }
  if (request.keys.empty() || request.keys.size() > p::kMaxKeysPerGet) {
    return fail(400, "too many or too few keys");
  }
  return ok(std::move(request));
}

std::string wait_suffix(std::chrono::milliseconds wait) {
  return wait.count() > 0 ? std::string("wait_ms=") + std::to_string(wait.count()) : "";
}

}  // namespace

bool is_valid_name(std::string_view name) {
  if (name.empty() || name.size() > p::kMaxNameBytes || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

KvParse parse_kv_request(std::string_view method, std::string_view target) {
  const std::size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const std::string_view query_text =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
  const auto query = parse_query(query_text);
  if (!query) return fail(400, "malformed query");

  if (path == p::kHealthPath) {
    if (method != "GET") return fail(405, "health is GET only");
    if (!query_text.empty()) return fail(400, "health takes no query");
    return ok(KvRequest{KvOp::Health, {}, {}});
  }
  if (path.substr(0, p::kKvPrefix.size()) != p::kKvPrefix) return fail(404, "no such path");

  KvRequest request;
  if (query->wait_ms) {
    std::uint64_t wait_ms = 0;
    if (!parse_uint(*query->wait_ms, wait_ms)) return fail(400, "invalid wait_ms");
    request.wait =
        std::chrono::milliseconds(std::min<std::uint64_t>(wait_ms, static_cast<std::uint64_t>(p::kMaxWait.count())));
  }
  const auto parts = split(path.substr(p::kKvPrefix.size()), '/');
  for (std::string_view part : parts) {
    if (!is_valid_name(part)) return fail(400, "invalid scope or key name");
  }
  const bool has_key_query = query->keys || query->prefix || query->first || query->count;
  if (parts.size() == 1) {
    if (method != "GET") return fail(405, "multi-key access is GET only");
    return parse_many(parts[0], *query, std::move(request));
  }
  if (has_key_query) return fail(400, "key selection applies to a scope only");
  request.keys.push_back(full_name(parts[0], parts[1]));
  if (parts.size() == 2) {
    if (method == "PUT") {
      if (query->wait_ms) return fail(400, "PUT takes no wait_ms");
      request.op = KvOp::Put;
    } else if (method == "GET") {
      request.op = KvOp::Get;
    } else {
      return fail(405, "a key takes GET or PUT");
    }
    return ok(std::move(request));
  }
  if (parts.size() == 3 && "/" + std::string(parts[2]) == p::kAddSuffix) {
    if (method != "POST") return fail(405, "add is POST only");
    if (query->wait_ms) return fail(400, "add takes no wait_ms");
    request.op = KvOp::Add;
    return ok(std::move(request));
  }
  return fail(404, "no such path");
}

std::string kv_target(std::string_view scope, std::string_view key) {
  return std::string(p::kKvPrefix) + full_name(scope, key);
}

std::string kv_add_target(std::string_view scope, std::string_view key) {
  return kv_target(scope, key) + std::string(p::kAddSuffix);
}

std::string kv_get_target(std::string_view scope, std::string_view key, std::chrono::milliseconds wait) {
  std::string target = kv_target(scope, key);
  if (wait.count() > 0) target += "?" + wait_suffix(wait);
  return target;
}

std::string kv_get_many_target(std::string_view scope, const std::vector<std::string>& keys,
                               std::chrono::milliseconds wait) {
  std::string target = std::string(p::kKvPrefix) + std::string(scope) + "?keys=";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i) target += ',';
    target += keys[i];
  }
  if (wait.count() > 0) target += "&" + wait_suffix(wait);
  return target;
}

std::string kv_get_range_target(std::string_view scope, std::string_view prefix, std::uint64_t first,
                                std::uint64_t count, std::chrono::milliseconds wait) {
  std::string target = std::string(p::kKvPrefix) + std::string(scope) + "?prefix=" + std::string(prefix) +
                       "&first=" + std::to_string(first) + "&count=" + std::to_string(count);
  if (wait.count() > 0) target += "&" + wait_suffix(wait);
  return target;
}

std::string encode_frames(const std::vector<std::string>& values) {
  std::size_t total = 0;
  for (const auto& v : values) total += p::kFrameLengthBytes + v.size();
  std::string body;
  body.reserve(total);
  for (const auto& v : values) {
    std::uint64_t length = v.size();
    for (std::size_t i = 0; i < p::kFrameLengthBytes; ++i) {
      body.push_back(static_cast<char>(length & 0xff));
      length >>= 8;
    }
    body.append(v);
  }
  return body;
}

std::optional<std::vector<std::string>> decode_frames(std::string_view body, std::size_t count) {
  std::vector<std::string> values;
  values.reserve(count);
  std::size_t pos = 0;
  for (std::size_t n = 0; n < count; ++n) {
    if (body.size() - pos < p::kFrameLengthBytes) return std::nullopt;
    std::uint64_t length = 0;
    for (std::size_t i = 0; i < p::kFrameLengthBytes; ++i) {
      length |= static_cast<std::uint64_t>(static_cast<unsigned char>(body[pos + i])) << (8 * i);
    }
    pos += p::kFrameLengthBytes;
    if (length > body.size() - pos) return std::nullopt;
    values.emplace_back(body.substr(pos, length));
    pos += length;
  }
  if (pos != body.size()) return std::nullopt;
  return values;
}

}  // namespace trainrun::rendezvous
