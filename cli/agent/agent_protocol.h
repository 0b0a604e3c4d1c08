// The byte protocol between the launcher and a host agent (`trainrun
// agent`), spoken over the agent's stdin/stdout: a local pipe or an SSH
// channel. Frames are a 12-byte little-endian header (type, stream, rank,
// length) and a payload. The job description travels in the first frame,
// so neither the secret nor the per-rank environment is ever on a command
// line. Pure encoding and incremental decoding; no I/O; not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainrun::cli {

enum class FrameType : std::uint8_t {
  // launcher -> agent
  Job = 1,        // payload: encoded JobSpec with some of the host's ranks;
                  // stream 1: more Job frames follow, 0: the last one
  Stdin = 2,      // rank, payload: bytes for its stdin
  StdinEof = 3,   // rank
  Signal = 4,     // payload: signal number (decimal); delivered to every rank
  Terminate = 5,  // SIGTERM to every rank, SIGKILL after the job's grace
  Kill = 6,       // SIGKILL to every rank and everything they started
  Ping = 7,       // payload: ms (decimal); the launcher is alive, and the
                  // agent ends the job if no frame comes for that long
  Probe = 8,      // payload: encoded ProbeRequest (cli/agent/host_probe.h)
  Reach = 9,      // payload: "address port" lines to try to connect to
  Stacks = 10,    // capture the stacks of every rank (cli/report/stack_capture.h)
                  // but those in the payload (encode_stack_skips)
  AddRanks = 11,  // payload: encoded JobSpec whose ranks start now, after the job's
                  // last Job frame (elastic jobs grow; cwd, grace and stdin are the job's)
  KillRank = 12,  // rank: SIGKILL to that rank and everything it started (an elastic
                  // job removes a hung worker; the others run on)
  // a tree of agents (cli/tree): an agent that relays for the hosts below it
  Relay = 13,    // payload: encoded RelayRequest (cli/tree/relay_protocol.h): start
                 // the agents of these hosts and answer RelayReady
  ToChild = 14,  // rank: the relay's child; payload: one whole frame for it, or
                 // empty: EOF to it (it ends its job and exits)
  // agent -> launcher
  Hello = 20,        // payload: the agent's version
  Started = 21,      // rank, payload: pid (decimal)
  Output = 22,       // rank, stream (1 stdout, 2 stderr), payload: bytes
  Exited = 23,       // rank, payload: raw wait status (decimal)
  Fatal = 24,        // payload: why the agent cannot go on (bad job, ...)
  ProbeResult = 25,  // payload: encoded ProbeAnswer
  ReachResult = 26,  // payload: one line per Reach target, empty when reached
  StackTrace = 27,   // rank, stream 0: eu-stack text of its processes, 1: why none
  StacksDone = 28,   // the answer to Stacks is complete; payload: a host-wide note or empty
  Pong = 29,         // the answer to Ping: the agent itself is alive (an SSH link counts it as
                     // hearing from the host while the ranks there are silent)
  RelayReady = 30,   // the answer to Relay: encoded RelayReport (every host's checks)
  FromChild = 31,    // rank: the relay's child; payload: one whole frame from it
  ChildGone = 32,    // rank: the relay's child, whose agent ended; payload: why the
                     // connection was lost, or empty when it ended after its EOF
  // a per-node launch: node 0's trainrun <-> each node's (cli/node/node_protocol.h)
  NodeChallenge = 40,  // node 0 -> node: node 0's nonce, which the node's join must sign
  NodeJoin = 41,       // node -> node 0: key=value lines: who joins, and its proof
  NodeWelcome = 42,    // node 0 -> node: key=value lines: its node rank, node 0's proof
  NodeRefused = 43,    // node 0 -> node: one line saying why
  NodeAttempt = 44,    // node 0 -> node: start an agent for run N of the job (decimal)
  NodeSignal = 45,     // node -> node 0: a signal this node's trainrun received (decimal)
  NodeEnd = 46,        // node 0 -> node: the job is over: key=value lines (status, outcome, summary)
};

struct Frame {
  FrameType type = FrameType::Hello;
  std::uint8_t stream = 0;
  std::uint32_t rank = 0;
  std::string payload;
};

inline constexpr std::size_t kFrameHeaderBytes = 12;
inline constexpr std::size_t kMaxFramePayload = 64u << 20;
// A host's job travels in Job frames of about this size (one rank each at
// least), so that no -np is too large for one frame and Pings go in between.
inline constexpr std::size_t kJobFrameBytes = 1u << 20;
inline constexpr std::size_t kOutputChunkBytes = 64u << 10;  // agent reads rank output in these

std::string encode_frame(const Frame& frame);
void append_frame(std::string& out, FrameType type, std::uint32_t rank, std::uint8_t stream, std::string_view payload);

// Incremental decoder: feed bytes as they arrive, take frames as they complete.
class FrameReader {
 public:
  void feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next complete frame, or nullopt. Throws std::runtime_error on a
  // malformed header (unknown type or oversized payload).
  std::optional<Frame> next();
  std::size_t buffered() const { return buffer_.size() - consumed_; }
  // The bytes the next frame still needs (0: next() has it): a caller that
  // reads no more than this never takes a byte past it.
  std::size_t missing() const;

 private:
  std::string buffer_;
  std::size_t consumed_ = 0;
};

// One rank of the job, as its agent starts it.
struct RankSpec {
  std::uint32_t rank = 0;
  std::vector<std::string> argv;  // argv[0] is resolved against PATH of `env`
  std::vector<std::string> env;   // NAME=VALUE added to the agent's environment
};

struct JobSpec {
  std::string cwd;
  std::uint32_t grace_ms = 5000;
  std::int64_t stdin_rank = -1;  // the rank that gets the launcher's stdin, or -1
  std::vector<RankSpec> ranks;
};

std::string encode_job(const JobSpec& job);
// nullopt when the payload is malformed.
std::optional<JobSpec> decode_job(std::string_view payload);
// `job` as Job frames appended to `out`: each holds cwd, grace and stdin
// rank and as many whole ranks as fit in kJobFrameBytes (at least one).
void append_job_frames(std::string& out, const JobSpec& job);

// The Stacks payload: ranks whose stacks are not taken, decimal, one space
// apart. Decoding skips what is not a rank number.
std::string encode_stack_skips(const std::vector<int>& ranks);
std::vector<std::uint32_t> decode_stack_skips(std::string_view payload);

}  // namespace trainrun::cli
