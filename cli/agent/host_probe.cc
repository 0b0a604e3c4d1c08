#include "cli/agent/host_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <thread>

#include "cli/plan/program_path.h"
#include "os/interfaces.h"
#include "rendezvous/kv_request.h"
#include "os/net.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

using rendezvous::decode_frames;
using rendezvous::encode_frames;

constexpr std::chrono::seconds kReachTimeout{3};

std::optional<std::uint16_t> parse_port(std::string_view text) {
  unsigned value = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

std::string directory_error(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "no such directory: " + path;
  if (!S_ISDIR(st.st_mode)) return "not a directory: " + path;
  return "";
}

// The program as the rank's execvp will see it: from inside the job's
// directory (relative names) and along the PATH the rank will have.
std::string program_error(const ProbeRequest& request, bool in_cwd) {
  const UniqueFd here(::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (in_cwd && ::chdir(request.cwd.c_str()) != 0) in_cwd = false;
  const char* path = request.path.empty() ? std::getenv("PATH") : request.path.c_str();
  const ProgramLookup lookup = find_program(request.program, path);
  if (in_cwd && here) (void)!::fchdir(here.get());
  return lookup.path ? "" : lookup.error;
}

std::string host_address(const ProbeRequest& request) {
  if (!request.network.empty()) return net::address_in_network(request.network);
  if (!request.interface.empty()) return net::interface_address(request.interface);
  return net::local_address_toward(request.rendezvous_addr);
}

std::string reach_one(const ReachTarget& target) {
  int error = 0;
  std::string resolve_error;
  if (net::connect_tcp(target.address, std::to_string(target.port), std::chrono::steady_clock::now() + kReachTimeout,
                       &error, &resolve_error)) {
    return "";
  }
  if (!resolve_error.empty()) return "cannot resolve " + target.address + ": " + resolve_error;
  return error == ETIMEDOUT ? "timed out" : net::errno_text(error);
}

}  // namespace

std::string encode_probe_request(const ProbeRequest& r) {
  return encode_frames({r.program, r.path, r.cwd, r.rendezvous_addr, r.network, r.interface, r.listen ? "1" : "0"});
}

std::optional<ProbeRequest> decode_probe_request(std::string_view payload) {
  auto f = decode_frames(payload, 7);
  if (!f) return std::nullopt;
  auto& v = *f;
  return ProbeRequest{v[0], v[1], v[2], v[3], v[4], v[5], v[6] == "1"};
}

std::string encode_probe_answer(const ProbeAnswer& a) {
  return encode_frames({a.program_error, a.cwd_error, a.address, a.address_error, std::to_string(a.free_port),
                        std::to_string(a.listen_port)});
}

std::optional<ProbeAnswer> decode_probe_answer(std::string_view payload) {
  auto f = decode_frames(payload, 6);
  if (!f) return std::nullopt;
  auto& v = *f;
  const auto free_port = parse_port(v[4]), listen_port = parse_port(v[5]);
  if (!free_port || !listen_port) return std::nullopt;
  return ProbeAnswer{v[0], v[1], v[2], v[3], *free_port, *listen_port};
}

std::string encode_reach_request(const std::vector<ReachTarget>& targets) {
  std::vector<std::string> fields;
  for (const ReachTarget& t : targets) fields.insert(fields.end(), {t.name, t.address, std::to_string(t.port)});
  return encode_frames({std::to_string(targets.size()), encode_frames(fields)});
}

std::optional<std::vector<ReachTarget>> decode_reach_request(std::string_view payload) {
  const auto outer = decode_frames(payload, 2);
  std::size_t count = 0;
  if (!outer || std::from_chars((*outer)[0].data(), (*outer)[0].data() + (*outer)[0].size(), count).ec != std::errc() ||
      count > payload.size()) {
    return std::nullopt;
  }
  const auto fields = decode_frames((*outer)[1], 3 * count);
  if (!fields) return std::nullopt;
  std::vector<ReachTarget> targets;
  for (std::size_t i = 0; i < count; ++i) {
    const auto port = parse_port((*fields)[3 * i + 2]);
    if (!port) return std::nullopt;
    targets.push_back({(*fields)[3 * i], (*fields)[3 * i + 1], *port});
  }
  return targets;
}

std::string encode_reach_answer(const std::vector<std::string>& errors) { return encode_frames(errors); }

std::optional<std::vector<std::string>> decode_reach_answer(std::string_view payload, std::size_t count) {
  return decode_frames(payload, count);
}

std::string HostProbe::answer(std::string_view payload) {
  const std::optional<ProbeRequest> request = decode_probe_request(payload);
  ProbeAnswer answer;
  if (!request) {
    answer.address_error = "malformed probe request";
    return encode_probe_answer(answer);
  }
  answer.cwd_error = directory_error(request->cwd);
  if (!request->program.empty()) answer.program_error = program_error(*request, answer.cwd_error.empty());
  try {
    answer.address = host_address(*request);
    answer.free_port = net::free_tcp_port(answer.address);
    if (request->listen && !listen_fd_) listen_fd_ = net::listen_tcp(answer.address, &listen_port_);
    answer.listen_port = listen_port_;
  } catch (const Error& e) {
    answer.address_error = e.what();
  }
  return encode_probe_answer(answer);
}

std::string HostProbe::reach(std::string_view payload) {
  const auto targets = decode_reach_request(payload);
  if (!targets) return encode_reach_answer({});
  std::vector<std::string> errors(targets->size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < targets->size(); ++i) {
    threads.emplace_back([&, i] { errors[i] = reach_one((*targets)[i]); });
  }
  for (auto& t : threads) t.join();
  return encode_reach_answer(errors);
}

}  // namespace trainrun::cli
