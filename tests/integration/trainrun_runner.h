// Helpers for tests that run the built trainrun: start it with a tag its
// ranks inherit, and check that nothing of the job is left afterwards.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/process_runner.h"

namespace trainrun::test {

// What trainrun --verbose prints on stderr, once per job, when several
// ranks share a host and OMP_NUM_THREADS is not set (torchrun's default);
// without --verbose a clean job prints nothing of its own.
inline constexpr const char* kOmpNote =
    "trainrun: note: OMP_NUM_THREADS=1 for every rank, as several share a host (set OMP_NUM_THREADS or -x "
    "OMP_NUM_THREADS=N to choose)\n";

inline std::string trainrun_bin() { return program_path("TRAINRUN_BIN"); }
inline std::string rank_program() { return program_path("RANK_PROGRAM"); }

// Runs trainrun ARGS; `tag` receives the TRAINRUN_TEST_TAG=... its ranks carry.
inline ProcessResult run_trainrun(std::vector<std::string> args, std::string* tag = nullptr,
                                  ProcessOptions options = {}) {
  args.insert(args.begin(), trainrun_bin());
  options.env.push_back(unique_tag());
  if (tag) *tag = options.env.back();
  return run_process(args, options);
}

inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

inline bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// True once no process carrying `tag` is alive, polling up to `within`.
inline bool nothing_left(const std::string& tag, std::chrono::milliseconds within = std::chrono::seconds(1)) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!processes_with_env(tag).empty()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace trainrun::test
