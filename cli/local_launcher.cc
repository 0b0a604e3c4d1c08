#include "cli/local_launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <optional>

#include "cli/child_process.h"
#include "cli/program_path.h"
#include "cli/rank_env.h"
#include "cli/rank_plan.h"
#include "rendezvous/auth.h"
#include "rendezvous/http_server.h"

extern char** environ;

namespace trainrun::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string host_name() {
  char buffer[256] = {};
  ::gethostname(buffer, sizeof buffer - 1);
  return buffer;
}

// A port nobody listens on right now, for torch's MASTER_PORT.
std::uint16_t free_port(const char* address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  ::inet_pton(AF_INET, address, &addr.sin_addr);
  socklen_t length = sizeof addr;
  std::uint16_t port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

struct Rank {
  RankSlot slot;
  pid_t pid = -1;
  bool running = false;
  int status = 0;
};

std::string describe(const Rank& r) {
  std::string text = "rank " + std::to_string(r.slot.rank) + " (host " + r.slot.host + ", pid " +
                     std::to_string(r.pid) + ") ";
  if (WIFEXITED(r.status)) return text + "exited with code " + std::to_string(WEXITSTATUS(r.status));
  const int sig = WTERMSIG(r.status);
  text += "was killed by " + signal_name(sig);
  if (sig == SIGKILL) text += " (out of memory? see dmesg)";
  return text;
}

}  // namespace

int run_local(const Options& options) {
  const ProgramLookup program = find_program(options.command.front(), std::getenv("PATH"));
  if (!program.path) {
    std::cerr << "trainrun: error: " << program.error << "\n";
    return program.exit_code;
  }

  const rendezvous::Secret secret = rendezvous::generate_secret();
  rendezvous::HttpServer::Options server_options;
  server_options.bind_address = "127.0.0.1";

  // Signals are taken synchronously with sigtimedwait; block them before the
  // server thread starts so that it inherits the mask.
  sigset_t handled, original;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) sigaddset(&handled, sig);
  ::sigprocmask(SIG_BLOCK, &handled, &original);

  rendezvous::HttpServer server(secret, server_options);
  server.start();

  JobEnv job;
  job.size = options.np;
  job.rendezvous_addr = server_options.bind_address;
  job.rendezvous_port = server.port();
  job.job_id = rendezvous::random_hex(8);
  job.secret_hex = rendezvous::to_hex(secret);
  job.backend = options.backend;
  job.master_addr = server_options.bind_address;
  job.master_port = free_port(server_options.bind_address.c_str());
  job.start_timeout_s = options.start_timeout_s;

  const std::vector<HostSlots> hosts = {{host_name(), options.np}};
  std::vector<Rank> ranks;
  std::vector<std::string> base_env;
  for (char** e = environ; *e; ++e) base_env.emplace_back(*e);
  if (options.verbose) {
    std::cerr << "trainrun: job " << job.job_id << ": " << options.np << " local rank(s), rendezvous "
              << job.rendezvous_addr << ":" << job.rendezvous_port << "\n";
  }
  for (const RankSlot& slot : plan_ranks(hosts, options.np)) {
    Rank rank;
    rank.slot = slot;
    // Own process group, so that teardown reaches the rank's children too.
    rank.pid = spawn_child(*program.path, options.command,
                           merge_environment(base_env, rank_environment(slot, job)), original,
                           /*own_group=*/true);
    rank.running = rank.pid > 0;
    ranks.push_back(rank);
  }

  std::optional<std::size_t> cause;       // index of the rank whose failure ended the job
  std::optional<int> stop_signal;         // signal that made the user stop the job
  std::optional<Clock::time_point> kill_at;
  std::size_t running = ranks.size();
  auto signal_all = [&](int sig) {
    for (const Rank& r : ranks) {
      if (r.running) ::kill(-r.pid, sig);
    }
  };
  auto teardown = [&] {
    if (kill_at) return;
    signal_all(SIGTERM);
    kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(options.grace_s));
  };

  while (running > 0) {
    timespec wait{0, 200'000'000};
    const int sig = ::sigtimedwait(&handled, nullptr, &wait);
    if (sig == SIGCHLD) {
      int status = 0;
      pid_t pid;
      while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
        for (std::size_t i = 0; i < ranks.size(); ++i) {
          if (ranks[i].pid != pid || !ranks[i].running) continue;
          ranks[i].running = false;
          ranks[i].status = status;
          --running;
          // Sweep up whatever the rank left in its process group.
          ::kill(-pid, SIGKILL);
          const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
          if (failed && !cause && !kill_at) {
            cause = i;
            std::cerr << "trainrun: " << describe(ranks[i]) << "; stopping the job\n";
            teardown();
          }
        }
      }
    } else if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      if (stop_signal && sig == SIGINT) {
        signal_all(SIGKILL);  // second Ctrl-C: no more grace
      } else if (!stop_signal) {
        stop_signal = sig;
        std::cerr << "trainrun: received " << signal_name(sig) << ", stopping the job\n";
        teardown();
      }
    } else if (sig == SIGUSR1 || sig == SIGUSR2) {
      signal_all(sig);
    }
    if (kill_at && Clock::now() >= *kill_at) {
      signal_all(SIGKILL);
      kill_at = Clock::now() + std::chrono::hours(24);
    }
  }
  server.stop();
  ::sigprocmask(SIG_SETMASK, &original, nullptr);

  if (stop_signal) return 128 + *stop_signal;
  if (cause) {
    std::cerr << "trainrun: job failed: " << describe(ranks[*cause]) << "\n";
    return shell_status(ranks[*cause].status);
  }
  if (options.verbose) std::cerr << "trainrun: all " << ranks.size() << " rank(s) exited 0\n";
  return 0;
}

}  // namespace trainrun::cli
