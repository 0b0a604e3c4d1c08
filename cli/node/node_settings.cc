#include "cli/node/node_settings.h"

#include <charconv>

#include "cli/plan/printable.h"
#include "contract/environment.h"

namespace trainrun::cli::node {
namespace {

constexpr std::uint16_t kStaticPort = 29500;  // torchrun's --master-port
constexpr std::uint16_t kC10dPort = 29400;    // torchrun's c10d endpoint

bool parse_int(std::string_view text, long long& value) {
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size();
}

// "HOST", "HOST:PORT", "[V6]:PORT" into host and port (kept when absent);
// why not, or "".
std::string parse_endpoint(const std::string& text, std::string& host, std::uint16_t& port) {
  const std::string bad = "--rdzv-endpoint " + quoted(text) + " is not HOST[:PORT]";
  std::string rest;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string::npos) return bad;
    host = text.substr(1, close - 1);
    rest = text.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return bad;
  } else {
    const std::size_t colon = text.find(':');
    host = text.substr(0, colon);
    if (colon != std::string::npos) rest = text.substr(colon);
  }
  if (host.empty()) return bad;
  if (rest.empty()) return "";
  long long value = 0;
  if (!parse_int(std::string_view(rest).substr(1), value) || value < 1 || value > 65535) return bad;
  port = static_cast<std::uint16_t>(value);
  return "";
}

// --rdzv-conf KEY=VALUE,...: the timeouts it sets; notes for the rest.
std::string read_rdzv_conf(const std::string& text, NodeSettings& s) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    at = end + 1;
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return "--rdzv-conf " + quoted(item) + " is not KEY=VALUE";
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    long long seconds = 0;
    if (key == "join_timeout" || key == "last_call_timeout") {
      if (!parse_int(value, seconds) || seconds < 1 || seconds > 86400 * 30) {
        return "--rdzv-conf " + key + "=" + quoted(value) + " is not a number of seconds from 1";
      }
      (key == "join_timeout" ? s.join_timeout : s.last_call) = std::chrono::seconds(seconds);
    } else {
      s.notes.push_back("--rdzv-conf " + key + ": no effect (trainrun reads join_timeout and last_call_timeout)");
    }
  }
  return "";
}

bool set(const GetEnv& getenv, const char* name) {
  const char* value = getenv(name);
  return value && *value;
}

// A scheduler's world for a plain `python train.py` (Kubeflow's
// PyTorchJob): node RANK of WORLD_SIZE nodes, node 0 at MASTER_ADDR.
bool from_scheduler_env(const GetEnv& getenv, NodeSettings& s, std::string& error) {
  for (const char* name : {contract::kEnvTorchMasterAddr, contract::kEnvTorchMasterPort, contract::kEnvTorchRank,
                           contract::kEnvTorchWorldSize}) {
    if (!set(getenv, name)) return false;
  }
  long long rank = 0, size = 0, port = 0;
  if (!parse_int(getenv(contract::kEnvTorchWorldSize), size) || size < 2) return false;
  if (!parse_int(getenv(contract::kEnvTorchRank), rank) || rank < 0 || rank >= size ||
      !parse_int(getenv(contract::kEnvTorchMasterPort), port) || port < 1 || port > 65535) {
    error = std::string("MASTER_PORT=") + getenv(contract::kEnvTorchMasterPort) +
            ", RANK=" + getenv(contract::kEnvTorchRank) + ", WORLD_SIZE=" + getenv(contract::kEnvTorchWorldSize) +
            ": not a node rank below WORLD_SIZE and a port (a per-node launch reads them; --local runs every "
            "rank here instead)";
    return true;
  }
  s.nnodes = s.max_nnodes = static_cast<int>(size);
  s.node_rank = static_cast<int>(rank);
  s.master_host = getenv(contract::kEnvTorchMasterAddr);
  s.master_port = static_cast<std::uint16_t>(port);
  s.source =
      "MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE in the environment (a scheduler's, as PyTorchJob sets "
      "them): node " +
      std::to_string(rank) + " of " + std::to_string(size);
  return true;
}

// What the command line says about hosts that a per-node launch replaces.
std::string hosts_given(const Options& o) {
  if (!o.hosts.empty()) return "-H";
  if (!o.hostfile.empty()) return "--hostfile";
  if (o.local) return "--local (--standalone)";
  if (!o.discovery_script.empty()) return "--host-discovery-script";
  return "";
}

// The settings from torchrun's options; why not, or "".
std::string from_options(const Options& o, NodeSettings& s) {
  const NodeOptions& n = o.node;
  s.nnodes = o.nnodes;
  s.elastic = o.max_nnodes > 0;
  s.max_nnodes = s.elastic ? o.max_nnodes : o.nnodes;
  s.node_rank = n.node_rank;
  s.source = "--nnodes " + std::to_string(o.nnodes) + (s.elastic ? ":" + std::to_string(o.max_nnodes) : "");
  if (!n.rdzv_endpoint.empty()) {
    s.master_port = kC10dPort;
    if (std::string why = parse_endpoint(n.rdzv_endpoint, s.master_host, s.master_port); !why.empty()) return why;
    s.source += ", --rdzv-endpoint " + n.rdzv_endpoint;
  } else {
    s.master_host = n.master_addr.empty() ? "127.0.0.1" : n.master_addr;
    s.master_port = n.master_port > 0 ? static_cast<std::uint16_t>(n.master_port) : kStaticPort;
    s.source += ", node 0 at " + s.endpoint();
  }
  if (s.node_rank >= 0) s.source += ", --node-rank " + std::to_string(s.node_rank);
  if (s.node_rank >= s.max_nnodes) {
    return "--node-rank " + std::to_string(s.node_rank) + " is not below --nnodes " + std::to_string(s.max_nnodes);
  }
  if (n.rdzv_backend == "static" && !n.rdzv_endpoint.empty() && n.master_addr.empty()) {
    s.notes.push_back("--rdzv-backend static: node 0 is at --rdzv-endpoint " + n.rdzv_endpoint);
  }
  return read_rdzv_conf(n.rdzv_conf, s);
}

}  // namespace

std::string NodeSettings::endpoint() const {
  const bool v6 = master_host.find(':') != std::string::npos;
  return (v6 ? "[" + master_host + "]" : master_host) + ":" + std::to_string(master_port);
}

NodeDecision decide_node_mode(const Options& o, const GetEnv& getenv) {
  NodeDecision decision;
  NodeSettings s;
  const std::string hosts = hosts_given(o);
  const bool asked = o.node.given() || (hosts.empty() && (o.nnodes > 1 || o.max_nnodes > 0));
  const auto fail = [&](std::string why) {
    decision.error = std::move(why);
    return decision;
  };
  if (asked) {
    if (!hosts.empty()) {
      return fail("--node-rank, --master-addr and --rdzv-* start one trainrun per node; " + hosts +
                  " starts every host's ranks from this one: give one of them");
    }
    if (o.nnodes < 1) {
      return fail("a per-node launch needs --nnodes N (the number of nodes; torchrun's PET_NNODES)");
    }
    if (std::string why = from_options(o, s); !why.empty()) return fail(why);
  } else {
    std::string error;
    const bool inside_job = set(getenv, contract::kEnvRank);  // a rank of trainrun's own
    if (!hosts.empty() || !o.launcher.empty() || o.elastic() || inside_job || o.nnodes == 1 ||
        !from_scheduler_env(getenv, s, error)) {
      return decision;
    }
    if (!error.empty()) return fail(error);
  }
  if (s.max_nnodes < 2 && !s.elastic) return decision;  // one node: this machine's job
  if (!o.launcher.empty()) return fail("--launcher " + o.launcher + " cannot start a per-node launch's ranks");
  if (o.elastic()) {
    return fail("a per-node launch is elastic with --nnodes MIN:MAX, not --min-np/--max-np/--host-discovery-script");
  }
  if (o.backend == "mpi") return fail("--backend mpi needs ranks that MPI starts itself; a per-node launch gives tcp");
  s.job_id = o.node.rdzv_id.empty() ? "none" : o.node.rdzv_id;
  s.secret_file = o.node.secret_file;
  s.secret_from_env = s.secret_file.empty() && set(getenv, kEnvRdzvSecret);
  decision.settings = std::move(s);
  return decision;
}

}  // namespace trainrun::cli::node
