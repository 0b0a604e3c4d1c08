// RankNames: how the engine's messages name ranks and, on a process set's
// engine, the set. A set's engine numbers its ranks 0..n-1 (its World's
// rank), but users know only job ranks (the numbers trainrun's output tags
// lines with), so every rank an engine message names is a job rank, and a
// set's messages say which set: "process set 1 (ranks 1, 2)". Plain value
// type; pure.
#pragma once

#include <string>
#include <vector>

#include "contract/world.h"

namespace trainrun::detail {

class RankNames {
 public:
  RankNames() = default;  // the whole job: a rank is its job rank
  explicit RankNames(const World& world);

  int job_rank(int rank) const;
  // "rank 2" or "ranks 1, 2" (job ranks of these ranks).
  std::string ranks_text(const std::vector<int>& ranks) const;
  // "process set 1 (ranks 1, 2)", "process set 3 (12 ranks)", "the process
  // set of ranks 1, 2" (no id given); empty for the whole job.
  const std::string& set() const { return set_; }
  // " in process set 1 (ranks 1, 2)", or "" for the whole job.
  std::string where() const { return set_.empty() ? "" : " in " + set_; }

 private:
  std::vector<int> members_;
  std::string set_;
};

}  // namespace trainrun::detail
