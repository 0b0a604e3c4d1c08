// What node 0's trainrun and each node's say to each other in a per-node
// launch (cli/node), in frames of the agent protocol's shape
// (cli/agent/agent_protocol.h, FrameType::Node*) whose payloads are
// key=value lines. Each connection opens with a handshake: node 0 sends a
// fresh challenge, the node joins, node 0 welcomes or refuses it. With a
// shared secret each side proves it holds the secret: the join carries
// HMAC-SHA256 over node 0's challenge and the join, the welcome an HMAC over
// the node's nonce and the welcome, so neither can be replayed and neither
// side can be impersonated. What follows the handshake is not signed, as
// the ranks' own TCP traffic is not. Pure; no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rendezvous/auth.h"

namespace trainrun::cli::node {

using Fields = std::vector<std::pair<std::string, std::string>>;
using SharedSecret = std::optional<rendezvous::Secret>;  // nullopt: the job has none

// "key=value\n" per field; a value's newlines become spaces.
std::string encode_fields(const Fields& fields);
// nullopt when a line has no '=' or the payload is over 64 KiB.
std::optional<Fields> decode_fields(std::string_view payload);
// The value of `key`, or "".
std::string field(const Fields& fields, std::string_view key);

// The secret every node derives from the text it was given (a file's
// contents or TRAINRUN_RDZV_SECRET); "" on success, else why the text is
// no secret (shorter than 16 characters).
std::string derive_secret(std::string_view text, rendezvous::Secret& secret);
// The ranks' TRAINRUN_SECRET in a job with a shared secret: one per run of
// the job (its id), which every node derives and none sends.
rendezvous::Secret ranks_secret(const rendezvous::Secret& shared, std::string_view job_id);

enum class ConnectionKind { Control, Agent };

struct Join {
  ConnectionKind kind = ConnectionKind::Control;
  std::string job;      // --rdzv-id
  int node_rank = -1;   // -1: node 0 assigns one
  int nproc = 1;        // the node's ranks
  std::string host;     // its host name
  std::string version;  // its trainrun's
  int attempt = 0;      // an agent connection: the run of the job it serves
  std::string token;    // an agent connection: its node's, from the welcome
  std::string nonce;    // fresh, for node 0's proof
};

// The join's payload answering `challenge`, signed when `secret` is set.
std::string encode_join(const Join& join, const SharedSecret& secret, std::string_view challenge);

struct JoinCheck {
  std::optional<Join> join;
  std::string refusal;  // when !join: one line for the node (and node 0's --verbose)
};
// The join read and its proof checked against `challenge` (constant time).
JoinCheck check_join(std::string_view payload, const SharedSecret& secret, std::string_view challenge);

struct Welcome {
  int node_rank = 0;
  int nodes = 1;      // how many the job waits for (MIN of MIN:MAX)
  std::string token;  // the node's agent connections name it
};

std::string encode_welcome(const Welcome& welcome, const SharedSecret& secret, std::string_view node_nonce);
// nullopt with `*error` set when malformed or node 0's proof is missing or wrong.
std::optional<Welcome> check_welcome(std::string_view payload, const SharedSecret& secret, std::string_view node_nonce,
                                     std::string* error);

// NodeEnd: how the job ended, as node 0 decided it.
struct JobEnd {
  int status = 0;       // trainrun's exit status on node 0
  std::string outcome;  // the report's outcome
  std::string summary;  // the summary line node 0 printed, or ""
};
std::string encode_end(const JobEnd& end);
std::optional<JobEnd> decode_end(std::string_view payload);

}  // namespace trainrun::cli::node
