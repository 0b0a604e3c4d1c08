// StackDumps: the launcher's side of "every rank's stack": when to take a
// dump (SIGQUIT, --timeout, the engine's stall shutdown, and with
// --stacks-on-stall every stall warning, at most one per warning interval),
// gathering the agents' answers (StackTrace / StacksDone frames), and the
// result: grouped stacks and the engine's view (cli/report/stall_lines.h)
// for the console, and with --output-filename DIR the full dump, raw
// eu-stack text included, in DIR/stacks.N.txt (written whole or not at all:
// a file that cannot be written is named in the dump's last line and listed
// by write_failures()). The supervisor sends the
// requests and prints; this class decides and formats. Single-threaded.
//
// At the stall shutdown, the ranks that reported it are left alone: their
// ops have failed and they are on their way out, so their stacks would show
// only that, and stopping them with ptrace would race their exit (and make
// LeakSanitizer fail a rank built with it). The dump is for the ranks that
// did not answer.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/output/write_failure.h"
#include "cli/report/stack_text.h"
#include "cli/report/stall_lines.h"

namespace trainrun::cli::report {

class StackDumps {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    bool on_stall_warning = false;                   // --stacks-on-stall
    double stall_warning_s = 60;                     // the ranks' warning interval
    std::string output_dir;                          // --output-filename; empty: no file
    std::chrono::milliseconds answer_limit{20'000};  // then print what came
  };

  // What a dump is for, and the ranks whose stacks it does not take (those
  // that reported the stall shutdown; the dump notes them so).
  struct Request {
    std::string reason;
    std::vector<int> skip;
  };

  StackDumps(Options options, std::vector<std::string> rank_hosts);

  // Starts a dump asking the agents on `hosts` for every rank's stack but
  // `request.skip`'s; false when one is under way.
  bool begin(const Request& request, const std::vector<std::string>& hosts, Clock::time_point now);
  // Rank stderr: the dump that a stall line in it calls for now, else nullopt.
  std::optional<Request> stderr_bytes(int rank, std::string_view bytes, Clock::time_point now);
  void add(int rank, bool note, std::string text);
  // StacksDone from the agent on `host` (note: why it has no stacks), or
  // the agent is gone (note says so).
  void host_done(const std::string& host, const std::string& note);
  bool in_progress() const { return active_; }
  // Every asked agent answered, or the answer limit passed.
  bool due(Clock::time_point now) const;
  // The dump for the console (no final newline); writes the file. Ends the dump.
  std::string finish(Clock::time_point now);
  // The dump files that could not be written.
  const std::vector<WriteFailure>& write_failures() const { return failures_; }

 private:
  std::string console_text(const std::vector<StackGroup>& groups, Clock::time_point now) const;
  std::string write_file(const std::vector<StackGroup>& groups, Clock::time_point now);

  Options options_;
  std::vector<std::string> rank_hosts_;
  StallWatch stall_;
  bool active_ = false;
  std::string reason_;
  std::set<std::string> waiting_for_;              // hosts that have not answered
  std::map<std::string, std::string> host_notes_;  // host: why it has no stacks
  std::vector<RankStacks> answers_;
  Clock::time_point started_;
  std::optional<Clock::time_point> last_stall_dump_;
  std::set<int> stopped_;  // ranks that reported the stall shutdown
  int dumps_ = 0;
  std::vector<WriteFailure> failures_;
};

}  // namespace trainrun::cli::report
