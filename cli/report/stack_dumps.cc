#include "cli/report/stack_dumps.h"

#include "cli/report/atomic_file.h"

namespace trainrun::cli::report {

StackDumps::StackDumps(Options options, std::vector<std::string> rank_hosts)
    : options_(std::move(options)), rank_hosts_(std::move(rank_hosts)) {}

bool StackDumps::begin(const Request& request, const std::vector<std::string>& hosts, Clock::time_point now) {
  if (active_ || hosts.empty()) return false;
  active_ = true;
  reason_ = request.reason;
  waiting_for_ = std::set<std::string>(hosts.begin(), hosts.end());
  host_notes_.clear();
  answers_.clear();
  for (int rank : request.skip) {
    add(rank, true, "not taken: it reported the stall shutdown and is on its way out (its line is below)");
  }
  started_ = now;
  return true;
}

std::optional<StackDumps::Request> StackDumps::stderr_bytes(int rank, std::string_view bytes, Clock::time_point now) {
  const StallLine kind = stall_.add(rank, bytes, now);
  if (kind == StallLine::Shutdown) {
    stopped_.insert(rank);
    return Request{"the engine's stall shutdown", {stopped_.begin(), stopped_.end()}};
  }
  if (kind != StallLine::Warning || !options_.on_stall_warning) return std::nullopt;
  // Every waiting rank warns once per interval: one dump per interval is enough.
  const auto interval = std::chrono::duration<double>(options_.stall_warning_s * 0.9);
  if (last_stall_dump_ && now - *last_stall_dump_ < interval) return std::nullopt;
  last_stall_dump_ = now;
  return Request{"a stall warning (--stacks-on-stall)", {}};
}

void StackDumps::add(int rank, bool note, std::string text) {
  if (!active_ || rank < 0 || rank >= static_cast<int>(rank_hosts_.size())) return;
  answers_.push_back(RankStacks{rank, rank_hosts_[rank], std::move(text), note});
}

void StackDumps::host_done(const std::string& host, const std::string& note) {
  if (!active_ || !waiting_for_.erase(host)) return;
  if (!note.empty()) host_notes_[host] = note;
}

bool StackDumps::due(Clock::time_point now) const {
  return active_ && (waiting_for_.empty() || now - started_ >= options_.answer_limit);
}

std::string StackDumps::console_text(const std::vector<StackGroup>& groups, Clock::time_point now) const {
  std::string out = "trainrun: stacks of every rank (" + reason_ + "), " + std::to_string(groups.size()) +
                    (groups.size() == 1 ? " group:\n" : " groups:\n");
  for (const StackGroup& group : groups) out += format_group(group);
  const std::vector<std::string> view = stall_.view(now);
  if (view.empty()) {
    out +=
        "trainrun: engine's view: no rank has reported waiting ops yet (they do after --stall-warning "
        "seconds)\n";
  } else {
    out += "trainrun: engine's view (the last stall line of each rank that printed one):\n";
    for (const std::string& line : view) out += "  " + line + "\n";
  }
  return out;
}

std::string StackDumps::write_file(const std::vector<StackGroup>& groups, Clock::time_point now) {
  const std::string path = options_.output_dir + "/stacks." + std::to_string(dumps_) + ".txt";
  std::string text = console_text(groups, now) + "\nraw eu-stack output by rank:\n";
  for (const RankStacks& r : answers_) {
    text += "\n== rank " + std::to_string(r.rank) + " (" + r.host + ")" + (r.note ? ": no stack: " : " ==\n") + r.text +
            (r.text.empty() || r.text.back() != '\n' ? "\n" : "");
  }
  const std::string error = write_atomically(path, text);
  if (error.empty()) return "trainrun: full dump in " + path + "\n";
  failures_.push_back({path, "stacks", std::nullopt, error});
  return write_failure_line(failures_.back(), "the dump above is all there is of it") + "\n";
}

std::string StackDumps::finish(Clock::time_point now) {
  active_ = false;
  ++dumps_;
  std::vector<bool> answered(rank_hosts_.size(), false);
  for (const RankStacks& r : answers_) answered[r.rank] = true;
  for (std::size_t rank = 0; rank < answered.size(); ++rank) {
    if (answered[rank]) continue;
    const auto note = host_notes_.find(rank_hosts_[rank]);
    answers_.push_back({static_cast<int>(rank), rank_hosts_[rank],
                        note != host_notes_.end() ? note->second : "no answer from its agent", true});
  }
  const std::vector<StackGroup> groups = group_stacks(answers_);
  std::string text = console_text(groups, now);
  if (!options_.output_dir.empty()) text += write_file(groups, now);
  text.pop_back();
  return text;
}

}  // namespace trainrun::cli::report
