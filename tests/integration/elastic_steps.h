// What tests and the recovery benchmark read from tests/integration/
// elastic_program's output: rank 0's "step S size N gen G t_ms T" lines
// (tagged "[W] " by trainrun with the worker id); and how they find the
// process of one worker to kill.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/process_runner.h"

namespace trainrun::test {

// The pid of worker `worker` (TRAINRUN_WORKER_ID) of the job whose
// processes carry `tag`, or -1.
inline pid_t worker_pid(const std::string& tag, int worker) {
  const auto tagged = processes_with_env(tag);
  for (pid_t pid : processes_with_env("TRAINRUN_WORKER_ID=" + std::to_string(worker))) {
    if (std::find(tagged.begin(), tagged.end(), pid) != tagged.end()) return pid;
  }
  return -1;
}

struct ElasticStep {
  long long step = 0;
  int size = 0;
  int generation = 0;
  long long t_ms = 0;  // wall clock when the step's allreduce completed
};

inline std::vector<ElasticStep> elastic_steps(const std::string& out) {
  std::vector<ElasticStep> steps;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    const std::size_t at = line.find("] step ");
    if (at == std::string::npos) continue;
    ElasticStep s;
    std::string word;
    std::istringstream fields(line.substr(at + 2));
    fields >> word >> s.step >> word >> s.size >> word >> s.generation >> word >> s.t_ms;
    if (fields) steps.push_back(s);
  }
  return steps;
}

// Milliseconds from the last step of a world of `before` ranks to the
// first step of the next world (the recovery time); -1 when there is none.
inline long long recovery_ms(const std::vector<ElasticStep>& steps, int before) {
  for (std::size_t i = 1; i < steps.size(); ++i) {
    if (steps[i - 1].size == before && steps[i].size != before) return steps[i].t_ms - steps[i - 1].t_ms;
  }
  return -1;
}

}  // namespace trainrun::test
