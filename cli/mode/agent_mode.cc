#include "cli/mode/agent_mode.h"

namespace trainrun::cli {

rendezvous::Secret AgentMode::job_secret(const std::string&) const { return rendezvous::generate_secret(); }

}  // namespace trainrun::cli
