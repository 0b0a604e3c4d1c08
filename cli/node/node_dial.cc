#include "cli/node/node_dial.h"

#include <thread>

#include "cli/node/node_io.h"
#include "rendezvous/auth.h"

namespace trainrun::cli::node {
namespace {

constexpr std::chrono::seconds kHandshake{10};
constexpr std::chrono::milliseconds kRetry{500};
constexpr int kKeepaliveS = 15;

// One try: connect, challenge, join, welcome.
Dialed try_once(const NodeSettings& s, const Join& join, const SharedSecret& secret, net::Deadline deadline) {
  Dialed d;
  const std::string where = "node 0 at " + s.endpoint();
  int err = 0;
  std::string resolve;
  UniqueFd fd = net::connect_tcp(s.master_host, std::to_string(s.master_port),
                                 std::min(deadline, net::Deadline::clock::now() + kHandshake), &err, &resolve);
  if (!fd) {
    d.error = "cannot connect to " + where + ": " + (resolve.empty() ? net::errno_text(err) : resolve);
    return d;
  }
  net::set_keepalive(fd.get(), kKeepaliveS);
  const net::Deadline handshake = net::Deadline::clock::now() + kHandshake;
  std::string why;
  const std::optional<Frame> challenge = receive_frame(fd.get(), d.reader, handshake, &why);
  if (!challenge || challenge->type != FrameType::NodeChallenge) {
    d.error = where + " did not answer as a trainrun node 0" + (challenge ? "" : " (" + why + ")");
    return d;
  }
  if (!send_frame(fd.get(), FrameType::NodeJoin, encode_join(join, secret, challenge->payload), handshake, &why)) {
    d.error = "cannot join " + where + ": " + why;
    return d;
  }
  const std::optional<Frame> answer = receive_frame(fd.get(), d.reader, handshake, &why);
  if (answer && answer->type == FrameType::NodeRefused) {
    d.error = where + " refused this node: " + answer->payload;
    d.refused = true;
    return d;
  }
  if (!answer || answer->type != FrameType::NodeWelcome) {
    d.error = where + " did not welcome this node" + (answer ? "" : " (" + why + ")");
    return d;
  }
  std::optional<Welcome> welcome = check_welcome(answer->payload, secret, join.nonce, &why);
  if (!welcome) {
    d.error = where + ": " + why;
    d.refused = true;
    return d;
  }
  d.welcome = std::move(*welcome);
  d.fd = std::move(fd);
  return d;
}

}  // namespace

Dialed dial_node0(const NodeSettings& settings, Join join, const SharedSecret& secret, net::Deadline deadline,
                  const std::function<void(const std::string&)>& waiting, const std::function<bool()>& stop) {
  while (true) {
    join.nonce = rendezvous::random_hex(16);  // fresh for each try: node 0's proof answers this one
    Dialed d = try_once(settings, join, secret, deadline);
    if (d.fd || d.refused || join.kind == ConnectionKind::Agent) return d;
    if (net::Deadline::clock::now() + kRetry >= deadline || stop()) return d;
    waiting(d.error);
    std::this_thread::sleep_for(kRetry);
  }
}

}  // namespace trainrun::cli::node
