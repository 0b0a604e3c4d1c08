#include "lib/engine/coordinator.h"

#include <algorithm>

namespace trainrun::detail {
// As in Horovod, only allreduces go on while a rank has joined (it
// contributes the identity): every other op fails on every rank, naming the
// joined rank, rather than give results without that rank's part.
// A joined rank's neutral input is host memory, which cannot join an NCCL
// call: allreduces of CUDA memory fail too.
bool joined_rank_can_take_part(const Request& r, int /*rank*/) { return r.op == OpType::Allreduce && !r.on_cuda(); }

Coordinator::Coordinator(int size, RankNames names)
    : size_(size), names_(std::move(names)), joined_(static_cast<std::size_t>(size), false) {}

void Coordinator::report(int rank, std::vector<Request> requests, Clock::time_point now) {
  for (Request& r : requests) {
    Entry& entry = table_[r.name];
    if (entry.by_rank.empty()) {
      entry.by_rank.resize(static_cast<std::size_t>(size_));
      entry.order = next_order_++;
      entry.since = now;
    }
    if (entry.by_rank[rank]) {
      throw Error(Error::Code::Internal, "engine: rank " + std::to_string(rank) + " reported '" + r.name + "' twice");
    }
    entry.since = std::min(entry.since, now - std::chrono::milliseconds(r.age_ms));
    entry.last_reporter = rank;
    if (r.op == OpType::Join) joined_[rank] = true;
    entry.by_rank[rank] = std::move(r);
  }
}

// Every rank that has not joined reported it; or a rank that joined without
// it cannot take part: that rank will not report it before the join ends, so
// it fails now on the ranks that did. (Waiting would hang: ranks count their
// unnamed ops differently once one of them stops making them to join.)
bool Coordinator::complete(const Entry& entry) const {
  const Request* reference = nullptr;
  bool live_missing = false, joined_missing = false;
  for (int r = 0; r < size_; ++r) {
    if (entry.by_rank[r]) {
      if (!reference) reference = &*entry.by_rank[r];
    } else {
      (joined_[r] ? joined_missing : live_missing) = true;
    }
  }
  if (!live_missing) return true;
  return joined_missing && reference->op != OpType::Join && !joined_rank_can_take_part(*reference, 0);
}

Response Coordinator::respond(const Entry& entry) const {
  Response response;
  int reference = 0;
  while (!entry.by_rank[reference]) ++reference;
  response.request = *entry.by_rank[reference];
  const Request& ref = response.request;
  for (int r = reference + 1; r < size_; ++r) {
    if (!entry.by_rank[r]) continue;
    if (auto why = disagreement(ref, names_.job_rank(reference), *entry.by_rank[r], names_.job_rank(r))) {
      response.error = in_set(ref, *why);
      return response;
    }
  }
  if (ref.op == OpType::Join) {
    response.last_joined = entry.last_reporter;
    return response;
  }
  for (int r = 0; r < size_; ++r) {
    if (entry.by_rank[r] || !joined_[r]) continue;
    const bool root_left = ref.op == OpType::Broadcast && ref.root == r;
    if (!joined_rank_can_take_part(ref, r)) {
      response.error = op_label(ref) + " '" + ref.name + "'" + names_.where() + ": rank " +
                       std::to_string(names_.job_rank(r)) + (root_left ? " (the root)" : "") +
                       " has joined (trainrun::join) and cannot take part" +
                       (ref.on_cuda() ? " in an op on CUDA memory" : "");
      response.error_code = Error::Code::InvalidArgument;
      return response;
    }
  }
  return response;
}

std::vector<Response> Coordinator::take_ready() {
  std::vector<std::map<std::string, Entry>::iterator> done;
  for (auto it = table_.begin(); it != table_.end(); ++it) {
    if (complete(it->second)) done.push_back(it);
  }
  std::sort(done.begin(), done.end(), [](auto a, auto b) { return a->second.order < b->second.order; });

  std::vector<Response> ready;
  bool join_done = false;
  for (auto it : done) {
    ready.push_back(respond(it->second));
    join_done = join_done || (ready.back().request.op == OpType::Join && ready.back().error.empty());
    table_.erase(it);
  }
  if (join_done) std::fill(joined_.begin(), joined_.end(), false);
  return ready;
}

Coordinator::Pending Coordinator::pending_of(const std::string& name, const Entry& entry) const {
  Pending p{name, OpType::Allreduce, entry.since, {}};
  for (int r = 0; r < size_; ++r) {
    if (entry.by_rank[r]) p.op = entry.by_rank[r]->op;
    else if (!joined_[r]) p.missing.push_back(r);
  }
  return p;
}

std::vector<Coordinator::Pending> Coordinator::pending() const {
  std::vector<std::pair<std::uint64_t, Pending>> out;
  for (const auto& [name, entry] : table_) out.emplace_back(entry.order, pending_of(name, entry));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Pending> result;
  for (auto& [order, p] : out) result.push_back(std::move(p));
  return result;
}

std::string Coordinator::in_set(const Request& r, std::string error) const {
  const std::string head = op_label(r) + " '" + r.name + "'";
  if (!names_.set().empty() && error.compare(0, head.size(), head) == 0) error.insert(head.size(), names_.where());
  return error;
}

std::vector<Response> Coordinator::fail_out_of_step(const std::string& waited) {
  std::vector<int> in_barrier;
  bool others = false;
  for (const auto& [name, entry] : table_) {
    for (int r = 0; r < size_; ++r) {
      if (!entry.by_rank[r]) continue;
      if (entry.by_rank[r]->op == OpType::Barrier) in_barrier.push_back(r);
      else others = true;
    }
  }
  std::sort(in_barrier.begin(), in_barrier.end());
  in_barrier.erase(std::unique(in_barrier.begin(), in_barrier.end()), in_barrier.end());
  std::vector<std::pair<std::uint64_t, Response>> failed;
  for (auto it = table_.begin(); it != table_.end();) {
    const Pending p = pending_of(it->first, it->second);
    if (others && p.op == OpType::Barrier) {
      ++it;
      continue;
    }
    Response response = respond(it->second);
    response.error = op_label(response.request) + " '" + p.name + "'" + names_.where() +
                     ": the ranks are out of step: every rank waited " + waited +
                     " for ops that cannot complete, and " + names_.ranks_text(p.missing) +
                     (p.missing.size() == 1 ? " has" : " have") + " not submitted this one" +
                     (in_barrier.empty() || p.op == OpType::Barrier
                          ? ""
                          : " (" + names_.ranks_text(in_barrier) + " wait" + (in_barrier.size() == 1 ? "s" : "") +
                                " in barrier(): did an error on some ranks skip ops the others made?)");
    response.error_code = Error::Code::Mismatch;
    failed.emplace_back(it->second.order, std::move(response));
    it = table_.erase(it);
  }
  std::sort(failed.begin(), failed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Response> out;
  for (auto& [order, response] : failed) out.push_back(std::move(response));
  return out;
}

void Coordinator::clear() {
  table_.clear();
  std::fill(joined_.begin(), joined_.end(), false);
}

}  // namespace trainrun::detail
