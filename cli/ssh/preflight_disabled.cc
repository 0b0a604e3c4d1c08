// preflight.h for a trainrun built without libssh: every host that is not
// this machine is refused with one message that says what to rebuild.
#include "cli/plan/host_list.h"
#include "cli/ssh/preflight.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

constexpr const char* kNoSsh = "multi-host launch needs trainrun built with libssh (meson setup -Dssh=enabled)";

}  // namespace

SshDestination ssh_destination(const HostSlots& host, const RemoteOptions&) {
  throw Error(Error::Code::Unsupported, "host '" + display_name(host) + "' is not this machine: " + kNoSsh);
}

std::string ssh_host_name(const HostSlots& host, const RemoteOptions&) { return host.host; }

RemoteAgents start_remote_agents(const std::vector<HostSlots>& hosts, const RemoteOptions&, const ProbeRequest&, bool,
                                 bool) {
  RemoteAgents result;
  for (const HostSlots& host : hosts) result.rows.push_back({display_name(host), "connect", kNoSsh, false});
  return result;
}

}  // namespace trainrun::cli
