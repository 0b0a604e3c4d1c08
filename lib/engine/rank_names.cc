#include "lib/engine/rank_names.h"

namespace trainrun::detail {
namespace {

// A set of more ranks is named by its size: its line must stay a line.
constexpr std::size_t kMaxListed = 8;

std::string list(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

std::string set_text(const std::vector<int>& members, int id) {
  const std::string n = std::to_string(members.size());
  if (id < 0)
    return members.size() > kMaxListed ? "a process set of " + n + " ranks"
                                       : "the process set of ranks " + list(members);
  return "process set " + std::to_string(id) + " (" +
         (members.size() > kMaxListed ? n + " ranks" : "ranks " + list(members)) + ")";
}

}  // namespace

RankNames::RankNames(const World& world) : members_(world.members) {
  if (!members_.empty()) set_ = set_text(members_, world.set_id);
}

int RankNames::job_rank(int rank) const {
  return members_.empty() || rank < 0 || rank >= static_cast<int>(members_.size())
             ? rank
             : members_[static_cast<std::size_t>(rank)];
}

std::string RankNames::ranks_text(const std::vector<int>& ranks) const {
  std::vector<int> job;
  for (int r : ranks) job.push_back(job_rank(r));
  return (job.size() == 1 ? "rank " : "ranks ") + list(job);
}

}  // namespace trainrun::detail
