// Which rank each worker of an elastic job gets in a generation: hosts in
// the order the job first saw them, workers within a host by worker id, so
// survivors keep their relative order and ranks stay dense. Local and cross
// ranks as for any job (cli/plan/rank_plan.h). Pure.
#pragma once

#include <string>
#include <vector>

#include "contract/elastic_protocol.h"

namespace trainrun::cli::elastic {

struct Member {
  int worker = 0;
  std::string host;  // display name; must be in host_order
};

elastic_protocol::Assignment assign(int generation, const std::vector<std::string>& host_order,
                                    std::vector<Member> members);

}  // namespace trainrun::cli::elastic
