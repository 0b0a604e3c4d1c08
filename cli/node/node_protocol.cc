#include "cli/node/node_protocol.h"

#include <charconv>

namespace trainrun::cli::node {
namespace {

constexpr std::size_t kMaxFieldsBytes = 64u << 10;
constexpr std::size_t kMinSecretText = 16;

bool parse_int(std::string_view text, int& value) {
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size();
}

// The signed text: what it is, the other side's nonce, every field but the proof.
std::string signed_text(std::string_view what, std::string_view nonce, std::string_view body) {
  return "trainrun per-node " + std::string(what) + " v1\n" + std::string(nonce) + "\n" + std::string(body);
}

// The payload's fields but its last ("mac"), and that one's value.
std::pair<std::string_view, std::string> split_proof(std::string_view payload) {
  const std::size_t at = payload.rfind("mac=");
  if (at == std::string_view::npos || (at > 0 && payload[at - 1] != '\n')) return {payload, ""};
  std::string mac(payload.substr(at + 4));
  if (!mac.empty() && mac.back() == '\n') mac.pop_back();
  return {payload.substr(0, at), mac};
}

std::string with_proof(std::string body, const SharedSecret& secret, std::string_view what, std::string_view nonce) {
  if (secret) body += "mac=" + rendezvous::hmac_sha256_hex(*secret, signed_text(what, nonce, body)) + "\n";
  return body;
}

// "" when the proof matches (or neither side has a secret), else why not,
// worded for the node (a refusal node 0 sends, or the node's own error).
std::string proof_problem(std::string_view payload, const SharedSecret& secret, std::string_view what,
                          std::string_view nonce, bool checked_by_node0) {
  const auto [body, mac] = split_proof(payload);
  const bool checker_has = secret.has_value(), sender_has = !mac.empty();
  const bool node0_has = checked_by_node0 ? checker_has : sender_has;
  const bool node_has = checked_by_node0 ? sender_has : checker_has;
  const std::string same = ": give every node the same --rdzv-secret-file (or TRAINRUN_RDZV_SECRET)";
  if (node0_has && !node_has) return "node 0 holds a shared secret and this node none" + same;
  if (!node0_has && node_has) return "node 0 has no shared secret and this node one" + same;
  if (!secret) return "";
  const std::string expected = rendezvous::hmac_sha256_hex(*secret, signed_text(what, nonce, body));
  if (expected.size() != mac.size() || !rendezvous::constant_time_equal(expected, mac)) {
    return "node 0's shared secret differs from this node's" + same;
  }
  return "";
}

}  // namespace

std::string encode_fields(const Fields& fields) {
  std::string out;
  for (const auto& [key, value] : fields) {
    std::string clean = value;
    for (char& c : clean) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    out += key + "=" + clean + "\n";
  }
  return out;
}

std::optional<Fields> decode_fields(std::string_view payload) {
  if (payload.size() > kMaxFieldsBytes) return std::nullopt;
  Fields fields;
  while (!payload.empty()) {
    const std::size_t end = payload.find('\n');
    const std::string_view line = payload.substr(0, end);
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) return std::nullopt;
    fields.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
    payload.remove_prefix(end == std::string_view::npos ? payload.size() : end + 1);
  }
  return fields;
}

std::string field(const Fields& fields, std::string_view key) {
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  return "";
}

std::string derive_secret(std::string_view text, rendezvous::Secret& secret) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  if (text.size() < kMinSecretText) {
    return "is " + std::to_string(text.size()) + " character(s) long; a shared secret needs at least " +
           std::to_string(kMinSecretText) + " (e.g. openssl rand -hex 32)";
  }
  secret = *rendezvous::secret_from_hex(rendezvous::sha256_hex("trainrun per-node secret\n" + std::string(text)));
  return "";
}

rendezvous::Secret ranks_secret(const rendezvous::Secret& shared, std::string_view job_id) {
  return *rendezvous::secret_from_hex(rendezvous::hmac_sha256_hex(shared, "trainrun ranks\n" + std::string(job_id)));
}

std::string encode_join(const Join& join, const SharedSecret& secret, std::string_view challenge) {
  Fields fields = {{"kind", join.kind == ConnectionKind::Agent ? "agent" : "control"},
                   {"job", join.job},
                   {"node", std::to_string(join.node_rank)},
                   {"nproc", std::to_string(join.nproc)},
                   {"host", join.host},
                   {"version", join.version},
                   {"attempt", std::to_string(join.attempt)},
                   {"token", join.token},
                   {"nonce", join.nonce}};
  return with_proof(encode_fields(fields), secret, "join", challenge);
}

JoinCheck check_join(std::string_view payload, const SharedSecret& secret, std::string_view challenge) {
  JoinCheck check;
  const std::optional<Fields> fields = decode_fields(payload);
  Join join;
  const std::string kind = fields ? field(*fields, "kind") : "";
  if (!fields || (kind != "control" && kind != "agent") || !parse_int(field(*fields, "node"), join.node_rank) ||
      !parse_int(field(*fields, "nproc"), join.nproc) || !parse_int(field(*fields, "attempt"), join.attempt) ||
      join.nproc < 1 || join.node_rank < -1) {
    check.refusal = "a malformed join (is it a trainrun of this version?)";
    return check;
  }
  if (std::string why = proof_problem(payload, secret, "join", challenge, true); !why.empty()) {
    check.refusal = why;
    return check;
  }
  join.kind = kind == "agent" ? ConnectionKind::Agent : ConnectionKind::Control;
  join.job = field(*fields, "job");
  join.host = field(*fields, "host");
  join.version = field(*fields, "version");
  join.token = field(*fields, "token");
  join.nonce = field(*fields, "nonce");
  check.join = std::move(join);
  return check;
}

std::string encode_welcome(const Welcome& welcome, const SharedSecret& secret, std::string_view node_nonce) {
  const Fields fields = {
      {"node", std::to_string(welcome.node_rank)}, {"nodes", std::to_string(welcome.nodes)}, {"token", welcome.token}};
  return with_proof(encode_fields(fields), secret, "welcome", node_nonce);
}

std::optional<Welcome> check_welcome(std::string_view payload, const SharedSecret& secret, std::string_view node_nonce,
                                     std::string* error) {
  const std::optional<Fields> fields = decode_fields(payload);
  Welcome welcome;
  if (!fields || !parse_int(field(*fields, "node"), welcome.node_rank) ||
      !parse_int(field(*fields, "nodes"), welcome.nodes)) {
    *error = "node 0 answered with a malformed welcome (is it a trainrun of this version?)";
    return std::nullopt;
  }
  if (std::string why = proof_problem(payload, secret, "welcome", node_nonce, false); !why.empty()) {
    *error = why;
    return std::nullopt;
  }
  welcome.token = field(*fields, "token");
  return welcome;
}

std::string encode_end(const JobEnd& end) {
  return encode_fields({{"status", std::to_string(end.status)}, {"outcome", end.outcome}, {"summary", end.summary}});
}

std::optional<JobEnd> decode_end(std::string_view payload) {
  const std::optional<Fields> fields = decode_fields(payload);
  JobEnd end;
  if (!fields || !parse_int(field(*fields, "status"), end.status)) return std::nullopt;
  end.outcome = field(*fields, "outcome");
  end.summary = field(*fields, "summary");
  return end;
}

}  // namespace trainrun::cli::node
