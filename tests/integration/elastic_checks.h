// The checks every "kill -9 of one elastic worker" test makes on what the
// user saw: the job exits 0, one line names the killed worker and its
// signal, the survivors re-form within a loose bound (the benchmark
// tests/bench/elastic_recovery_bench measures it; this only catches a hang)
// and each of them finishes the last step with correct results.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "tests/integration/elastic_steps.h"
#include "tests/integration/trainrun_runner.h"

namespace trainrun::test {

// `before`: the world's size when the worker was killed; `last_step`: the
// step every survivor prints "done at step" for.
inline void check_survivors_finished(const ProcessResult& r, int victim, int before, long long last_step) {
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.err, "trainrun: elastic: worker " + std::to_string(victim) + " (host "));
  CHECK(contains(r.err, "was killed by SIGKILL"));
  const std::vector<ElasticStep> steps = elastic_steps(r.out);
  REQUIRE(!steps.empty());
  CHECK(steps.back().step == last_step);
  CHECK(steps.back().size == before - 1);
  const long long recovery = recovery_ms(steps, before);
  CHECK(recovery >= 0);
  CHECK(recovery < 20'000);
  CHECK(count(r.out, "done at step " + std::to_string(last_step) + " size " + std::to_string(before - 1)) ==
        before - 1);
  CHECK(!contains(r.out, "wrong result"));
}

}  // namespace trainrun::test
