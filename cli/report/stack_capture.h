// The agent's side of a stack request: eu-stack (elfutils) on every process
// of each of its ranks (the rank and everything it started), all at once
// with a time limit, each process stopped only while eu-stack reads it
// (~0.1 s). Runs synchronously in the agent's thread; the ranks keep
// running. I/O only; the text is interpreted by cli/report/stack_text.h.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace trainrun::cli::report {

struct CaptureTarget {
  std::uint32_t rank = 0;
  pid_t pid = -1;  // the rank's process, or -1 when it is no longer running
};

struct CapturedStack {
  std::uint32_t rank = 0;
  std::string text;   // eu-stack's output for the rank's processes
  bool note = false;  // text is instead why there is none (one line)
};

struct CaptureResult {
  std::vector<CapturedStack> ranks;
  std::string host_note;  // why no rank has a stack (eu-stack missing), or empty
};

// `eu_stack` overrides the program (tests); empty: eu-stack from PATH.
CaptureResult capture_stacks(const std::vector<CaptureTarget>& targets, std::chrono::milliseconds limit,
                             const std::string& eu_stack = "");

// The one-line note for eu-stack's failure on a process, from its stderr:
// ptrace refused gets the fix, anything else its first line.
std::string capture_failure_note(const std::string& eu_stack_stderr, int exit_code);

}  // namespace trainrun::cli::report
