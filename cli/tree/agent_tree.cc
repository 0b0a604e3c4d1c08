#include "cli/tree/agent_tree.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <string>

#include "cli/agent/agent_protocol.h"
#include "cli/plan/host_list.h"
#include "cli/tree/relay_protocol.h"
#include "cli/tree/relayed_agent_link.h"
#include "cli/tree/tree_shape.h"

namespace trainrun::cli {
namespace {

using Clock = std::chrono::steady_clock;

// One relay's answer to its Relay frame, read from its link no further
// than the frame's last byte: what follows is the supervisor's to read.
struct RelayWait {
  std::size_t host = 0;  // the relay's index among the hosts
  std::size_t block_size = 0;
  FrameReader reader;
  std::optional<RelayReport> report;
  std::string error;  // why there is no report
};

// Reads what `wait` may take; true once it has its answer (or none comes).
bool read_reply(RelayWait& wait, AgentLink& link) {
  char buffer[65536];
  const std::size_t want = std::min(sizeof buffer, wait.reader.missing());
  const ssize_t n = ::read(link.read_fd(), buffer, want);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  if (n <= 0) {
    const auto why = link.failure();
    wait.error = "its agent ended before it started the hosts below it" + (why ? ": " + *why : std::string());
    return true;
  }
  wait.reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  try {
    const std::optional<Frame> frame = wait.reader.next();
    if (!frame || frame->type == FrameType::Pong || frame->type == FrameType::Hello) return false;
    if (frame->type != FrameType::RelayReady) {
      wait.error = "its agent did not relay" + (frame->payload.empty() ? std::string() : ": " + frame->payload);
      return true;
    }
    wait.report = decode_relay_report(frame->payload);
    if (!wait.report || (wait.report->ok && wait.report->answers.size() != wait.block_size)) {
      wait.report.reset();
      wait.error = "its answer about the hosts below it is malformed";
    }
  } catch (const std::exception& e) {
    wait.error = e.what();
  }
  return true;
}

bool write_all(int fd, const std::string& bytes, Clock::time_point deadline) {
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR) && Clock::now() < deadline) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 50);
    } else {
      return false;
    }
  }
  return true;
}

int pending_stop_signal() {
  sigset_t stops;
  sigemptyset(&stops);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, sig);
  const timespec now{0, 0};
  const int sig = ::sigtimedwait(&stops, nullptr, &now);
  return sig > 0 ? sig : 0;
}

// Waits for every relay's answer until `deadline`; a stop signal (when
// watched) ends the wait. Returns that signal, or 0.
int wait_for_relays(std::vector<RelayWait>& waits, RemoteAgents& direct, Clock::time_point deadline,
                    bool watch_signals) {
  std::vector<RelayWait*> open;
  for (RelayWait& w : waits) open.push_back(&w);
  while (!open.empty()) {
    if (watch_signals) {
      if (const int sig = pending_stop_signal()) return sig;
    }
    if (Clock::now() >= deadline) {
      for (RelayWait* w : open) w->error = "no answer from its agent about the hosts below it in time";
      return 0;
    }
    std::vector<pollfd> fds;
    for (RelayWait* w : open) fds.push_back({direct.links[w->host]->read_fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 50);
    std::vector<RelayWait*> still;
    for (std::size_t i = 0; i < open.size(); ++i) {
      if (!fds[i].revents || !read_reply(*open[i], *direct.links[open[i]->host])) still.push_back(open[i]);
    }
    open.swap(still);
  }
  return 0;
}

}  // namespace

RemoteAgents start_agent_tree(const std::vector<HostSlots>& hosts, const RemoteOptions& options,
                              const ProbeRequest& request, std::size_t radix, bool verbose, bool watch_signals) {
  const std::vector<TreePlace> shape = tree_shape(hosts.size(), radix);
  const std::size_t direct_count = tree_direct_count(hosts.size(), radix);
  const std::vector<HostSlots> direct_hosts(hosts.begin(), hosts.begin() + static_cast<long>(direct_count));
  RemoteAgents direct = start_remote_agents(direct_hosts, options, request, verbose, watch_signals);
  if (!direct.ok || direct_count == hosts.size()) return direct;

  // Every relay at once: each starts its block while the others do.
  const int depth = tree_depth(hosts.size(), radix) - 1;
  const auto deadline = Clock::now() + depth * std::chrono::seconds(2 * options.ssh_connect_timeout_s + 5);
  std::vector<RelayWait> waits;
  for (std::size_t c = 0; c < direct_count; ++c) {
    const TreePlace& place = shape[c];
    if (place.block_begin == place.block_end) continue;
    RelayRequest relay{options, request, {}, radix};
    relay.hosts.assign(hosts.begin() + static_cast<long>(place.block_begin),
                       hosts.begin() + static_cast<long>(place.block_end));
    std::string frame;
    append_frame(frame, FrameType::Relay, 0, 0, encode_relay_request(relay));
    waits.push_back(RelayWait{c, relay.hosts.size(), {}, std::nullopt, ""});
    if (!write_all(direct.links[c]->write_fd(), frame, deadline)) {
      waits.back().error = "cannot send it the hosts below it";
    }
  }
  RemoteAgents result;
  result.signal = wait_for_relays(waits, direct, deadline, watch_signals);
  if (result.signal) return result;
  result.ok = true;
  result.rows = std::move(direct.rows);
  result.answers.resize(hosts.size());
  for (std::size_t c = 0; c < direct_count; ++c) result.answers[c] = direct.answers[c];
  for (RelayWait& w : waits) {
    const TreePlace& place = shape[w.host];
    const std::string relay_name = display_name(hosts[w.host]);
    if (!w.report) {
      result.ok = false;
      for (std::size_t i = place.block_begin; i < place.block_end; ++i) {
        result.rows.push_back(
            {display_name(hosts[i]), "relay", "not started: " + relay_name + " relays for it, and " + w.error, false});
      }
      continue;
    }
    result.ok = result.ok && w.report->ok;
    result.rows.insert(result.rows.end(), w.report->rows.begin(), w.report->rows.end());
    std::copy(w.report->answers.begin(), w.report->answers.end(),
              result.answers.begin() + static_cast<long>(place.block_begin));
  }
  if (!result.ok) return result;
  result.links = std::move(direct.links);
  for (std::size_t i = direct_count; i < hosts.size(); ++i) {
    const TreePlace& place = shape[i];
    result.links.push_back(std::make_unique<RelayedAgentLink>(
        display_name(hosts[i]), *result.links[static_cast<std::size_t>(place.parent)], place.child));
  }
  return result;
}

}  // namespace trainrun::cli
