// Stacks as eu-stack prints them (one "PID N - process" block per process,
// one "TID N:" block per thread, "#K  0xADDR symbol" per frame), made
// comparable and grouped: addresses, pids, thread ids and symbol versions
// removed, and identical threads of a process merged, so that ranks stuck in
// the same place print once, with the ranks that share the place. Pure
// text in, text out; no I/O; thread-compatible.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainrun::cli::report {

// One rank's answer to a stack request.
struct RankStacks {
  int rank = 0;
  std::string host;
  std::string text;   // eu-stack's output for the rank's processes
  bool note = false;  // text is instead a one-line reason why there is none
};

// Ranks that share one normalized stack (or one note).
struct StackGroup {
  std::vector<int> ranks;          // ascending
  std::vector<std::string> hosts;  // in rank order, each once
  std::string text;                // normalized stack, or the note
  bool note = false;
};

// The frame as grouping compares it: "clock_nanosleep" for
// "#0  0x00007f0b3407a503 clock_nanosleep@GLIBC_2.2.5"; "??" without a symbol,
// "?? (module)" when eu-stack named the module (-m).
std::string normalize_frame(std::string_view line);

// eu-stack output with nothing process-specific left: threads as indented
// frame lists ("thread 1:", "threads 2-4 (3 alike):"), the first (main)
// thread first, the others sorted so that start-up order does not matter.
std::string normalize_stacks(std::string_view eu_stack_text);

// "0-2,5" for {0, 1, 2, 5}; ranks ascending.
std::string rank_ranges(const std::vector<int>& ranks);

// Ranks with equal normalized stacks (or equal notes) in one group; groups
// ordered by their lowest rank.
std::vector<StackGroup> group_stacks(const std::vector<RankStacks>& ranks);

// "ranks 0-2,5 (h1, h2):" / "rank 3 (h2):", then the stack indented, or the
// note on the same line.
std::string format_group(const StackGroup& group);

}  // namespace trainrun::cli::report
