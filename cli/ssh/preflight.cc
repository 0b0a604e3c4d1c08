#include "cli/ssh/preflight.h"

#include <libssh/libssh.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <thread>

#include "cli/agent/agent_protocol.h"
#include "cli/plan/host_list.h"
#include "cli/process/self_executable.h"
#include "cli/plan/shell_words.h"
#include "cli/ssh/ssh_agent_link.h"
#include "cli/ssh/ssh_session.h"
#include "trainrun/error.h"
#include "trainrun/version.h"

namespace trainrun::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Hosts checked and connected at once. A check mostly waits on the network
// (TCP, key exchange, the agent's Hello), so 64 in flight start hundreds of
// hosts quickly on a bounded number of threads.
constexpr std::size_t kConnectWorkers = 64;

// Everything one host's checks found; filled by the worker that took it.
struct HostCheck {
  HostSlots host;
  std::string name;  // as in messages: display_name(host)
  std::vector<CheckRow> rows;
  std::unique_ptr<SshSession> session;
  ProbeAnswer answer;
  bool ok = false;
  double seconds = 0;

  void pass(const std::string& check, const std::string& detail = "") {
    rows.push_back({name, check, detail.empty() ? "ok" : "ok: " + detail, true});
  }
  void fail(const std::string& check, const std::string& error) { rows.push_back({name, check, error, false}); }
};

// The agent's side of the conversation before the job: its frames, with
// a deadline, from a blocking channel.
class AgentReply {
 public:
  AgentReply(SshSession& session, Clock::time_point deadline) : session_(session), deadline_(deadline) {}

  // The next frame, or nullopt at EOF (ended() true) or the deadline.
  // Throws std::runtime_error when the bytes are not frames.
  std::optional<Frame> next() {
    char buffer[4096];
    while (true) {
      if (auto frame = reader_.next()) return frame;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      if (left <= 0) return std::nullopt;
      const int n = session_.read(buffer, sizeof buffer, static_cast<int>(left));
      if (n < 0) {
        ended_ = true;
        return std::nullopt;
      }
      reader_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    }
  }
  bool ended() const { return ended_; }

 private:
  SshSession& session_;
  Clock::time_point deadline_;
  FrameReader reader_;
  bool ended_ = false;
};

// Why the remote trainrun said no Hello: its exit status and first line
// of stderr say more than "EOF".
std::string agent_start_error(SshSession& session, const std::string& path, bool ended, int timeout_s) {
  if (!ended) return "no answer from " + path + " agent within " + std::to_string(timeout_s) + " s";
  const int status = session.exit_status();
  if (status == 127) return "no such file: " + path;
  if (status == 126) return "not executable: " + path;
  char buffer[1024];
  const int n = session.read(buffer, sizeof buffer, 200, true);
  std::string message = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
  message = message.substr(0, message.find('\n'));
  return path + " agent exited with code " + std::to_string(status) + (message.empty() ? "" : ": " + message);
}

// The remote trainrun: started, is it ours, and what does it find there.
void check_agent(HostCheck& check, const RemoteOptions& options, const ProbeRequest& request) {
  const std::string path = options.remote_trainrun.empty() ? self_executable() : options.remote_trainrun;
  SshSession& session = *check.session;
  if (auto failure = session.exec(shell_quote(path) + " agent")) return check.fail(failure->check, failure->error);
  AgentReply reply(session, Clock::now() + std::chrono::seconds(options.ssh_connect_timeout_s));
  std::optional<Frame> hello;
  try {
    hello = reply.next();
  } catch (const std::exception&) {
    return check.fail("remote trainrun", path + " is not a trainrun agent (it wrote something else)");
  }
  if (!hello || hello->type != FrameType::Hello) {
    return check.fail("remote trainrun",
                      agent_start_error(session, path, reply.ended(), options.ssh_connect_timeout_s));
  }
  if (hello->payload != kVersion) {
    return check.fail("version", "version mismatch: " + path + " there is trainrun " + hello->payload +
                                     ", this is trainrun " + kVersion);
  }
  check.pass("remote trainrun", path + " " + hello->payload);
  std::optional<Frame> result;
  try {
    std::string frame;
    append_frame(frame, FrameType::Probe, 0, 0, encode_probe_request(request));
    if (session.write_all(frame)) result = reply.next();
  } catch (const std::exception&) {
  }
  std::optional<ProbeAnswer> answer;
  if (result && result->type == FrameType::ProbeResult) answer = decode_probe_answer(result->payload);
  if (!answer) return check.fail("remote trainrun", "the agent did not answer the checks: " + session.last_error());
  check.answer = *answer;
  if (!request.program.empty()) {
    if (answer->program_error.empty()) check.pass("program", request.program);
    else check.fail("program", answer->program_error);
  }
  if (answer->cwd_error.empty()) check.pass("directory", request.cwd);
  else check.fail("directory", answer->cwd_error);
  if (answer->address_error.empty()) check.pass("network", answer->address);
  else check.fail("network", answer->address_error);
  check.ok = std::all_of(check.rows.begin(), check.rows.end(), [](const CheckRow& row) { return row.ok; });
}

void check_host(HostCheck& check, const RemoteOptions& options, const ProbeRequest& request,
                std::mutex& known_hosts_lock) {
  const auto start = Clock::now();
  try {
    check.session = std::make_unique<SshSession>(check.host, options);
    if (auto failure = check.session->open(options.ssh_accept_new, known_hosts_lock)) {
      check.fail(failure->check, failure->error);
    } else {
      check.pass("connect", check.session->destination());
      check.pass("host key");
      check.pass("login");
      check_agent(check, options, request);
    }
  } catch (const std::exception& e) {
    check.fail("connect", e.what());
  }
  check.seconds = std::chrono::duration<double>(Clock::now() - start).count();
}

// Waits for the host threads; a stop signal (blocked, so it stays
// pending for us) ends the wait early. Returns that signal, or 0.
int wait_for(const std::atomic<std::size_t>& finished, std::size_t total) {
  sigset_t stops;
  sigemptyset(&stops);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, sig);
  const timespec tick{0, 5'000'000};
  while (finished < total) {
    const int sig = ::sigtimedwait(&stops, nullptr, &tick);
    if (sig > 0) return sig;
  }
  return 0;
}

}  // namespace

SshDestination ssh_destination(const HostSlots& host, const RemoteOptions& options) {
  const SshSession session(host, options);
  return {session.address(), session.destination()};
}

std::string ssh_host_name(const HostSlots& host, const RemoteOptions& options) {
  try {
    return SshSession(host, options).address();
  } catch (const Error&) {
    return host.host;  // a broken ~/.ssh/config is named if SSH is needed
  }
}

RemoteAgents start_remote_agents(const std::vector<HostSlots>& hosts, const RemoteOptions& options,
                                 const ProbeRequest& request, bool verbose, bool watch_signals) {
  // Shared with the threads, which a stop signal leaves running while
  // trainrun exits at once (see cli/mode/local_ssh_launch_mode.cc).
  struct Shared {
    std::vector<HostCheck> checks;
    std::mutex known_hosts_lock;
    std::atomic<std::size_t> next{0}, finished{0};
  };
  ssh_init();  // before the threads: libssh's one-time setup is not theirs to race
  auto shared = std::make_shared<Shared>();
  for (const HostSlots& host : hosts) {
    shared->checks.push_back(HostCheck{host, display_name(host), {}, {}, {}, false, 0});
  }
  // A fixed pool connects: each worker takes the next host until none is
  // left, so a job of hundreds of hosts starts 64 threads, not hundreds.
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < std::min(hosts.size(), kConnectWorkers); ++w) {
    threads.emplace_back([shared, options, request] {
      for (std::size_t i; (i = shared->next++) < shared->checks.size();) {
        check_host(shared->checks[i], options, request, shared->known_hosts_lock);
        ++shared->finished;
      }
    });
  }
  RemoteAgents result;
  if (watch_signals) result.signal = wait_for(shared->finished, hosts.size());
  for (auto& t : threads) {
    if (result.signal) t.detach();
    else t.join();
  }
  if (result.signal) return result;
  result.ok = true;
  for (HostCheck& check : shared->checks) {
    result.rows.insert(result.rows.end(), check.rows.begin(), check.rows.end());
    result.ok = result.ok && check.ok;
    if (verbose && check.ok) {
      std::cerr << "trainrun: " << check.name << ": " << check.session->destination() << ", address "
                << check.answer.address << ", checked in " << static_cast<int>(check.seconds * 1000) << " ms\n";
    }
  }
  if (!result.ok) return result;
  for (HostCheck& check : shared->checks) {
    result.links.push_back(std::make_unique<SshAgentLink>(check.name, std::move(check.session)));
    result.answers.push_back(check.answer);
  }
  return result;
}

}  // namespace trainrun::cli
