#include "cli/node/node_agent_link.h"

#include <sys/socket.h>

#include "os/net.h"

namespace trainrun::cli::node {

void NodeAgentLink::close_write() {
  if (closed_) return;
  ::shutdown(socket_.get(), SHUT_WR);  // EOF to the node's agent: it ends what it started
  closed_ = true;
}

std::optional<std::string> NodeAgentLink::failure() {
  int error = 0;
  socklen_t length = sizeof error;
  ::getsockopt(socket_.get(), SOL_SOCKET, SO_ERROR, &error, &length);
  return "lost " + node_ + ": " + (error ? net::errno_text(error) : "the connection to its trainrun closed");
}

}  // namespace trainrun::cli::node
