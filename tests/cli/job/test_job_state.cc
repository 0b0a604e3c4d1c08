#include <doctest/doctest.h>
#include <sys/wait.h>

#include <csignal>

#include "cli/job/job_state.h"

using namespace trainrun::cli;
using Action = JobState::Action;

namespace {

int exit_status(int code) { return code << 8; }
int signal_status(int sig) { return sig; }

JobState four() {
  JobState s(4, {"h1", "h1", "h2", "h2"});
  for (int r = 0; r < 4; ++r) s.started(r, 100 + r);
  return s;
}

}  // namespace

TEST_CASE("all ranks exit 0: exit 0, no summary") {
  JobState s = four();
  for (int r = 0; r < 4; ++r) CHECK(s.exited(r, exit_status(0)) == Action::None);
  CHECK(s.all_exited());
  CHECK(s.exit_code() == 0);
  CHECK(s.summary() == "");
}

TEST_CASE("the first failure wins; ranks stopped afterwards are not blamed") {
  JobState s = four();
  CHECK(s.exited(2, exit_status(7)) == Action::Teardown);
  CHECK(s.exited(0, signal_status(SIGTERM)) == Action::None);
  CHECK(s.exited(1, exit_status(1)) == Action::None);
  CHECK(s.exit_code() == 7);
  CHECK(s.summary() == "trainrun: job failed: rank 2 (host h2, pid 102) exited with code 7");
}

TEST_CASE("signals: 128+N, named, SIGKILL with an out-of-memory hint") {
  JobState s = four();
  CHECK(s.exited(1, signal_status(SIGSEGV)) == Action::Teardown);
  CHECK(s.exit_code() == 139);
  CHECK(s.describe(1) == "rank 1 (host h1, pid 101) was killed by SIGSEGV (Segmentation fault)");
  JobState k = four();
  k.exited(3, signal_status(SIGKILL));
  CHECK(k.exit_code() == 137);
  CHECK(k.describe(3) == "rank 3 (host h2, pid 103) was killed by SIGKILL (out of memory? check dmesg on h2)");
}

TEST_CASE("Ctrl-C: teardown, then kill on the second; exit 130") {
  JobState s = four();
  CHECK(s.stop_signal(SIGINT) == Action::Teardown);
  CHECK(s.exited(0, signal_status(SIGTERM)) == Action::None);
  CHECK(s.stop_signal(SIGINT) == Action::Kill);
  CHECK(s.stop_signal(SIGTERM) == Action::None);
  CHECK(s.exit_code() == 130);
  CHECK(s.summary() == "trainrun: stopped by SIGINT; all ranks were terminated");
}

TEST_CASE("ranks that needed SIGKILL after --grace are named in the summary, never those that died of it alone") {
  JobState failed = four();
  failed.exited(2, exit_status(7));
  failed.exited(0, signal_status(SIGKILL));
  failed.exited(1, signal_status(SIGTERM));
  failed.exited(3, signal_status(SIGKILL));
  CHECK(failed.sigkilled() == std::vector<int>{0, 3});
  CHECK(failed.summary() ==
        "trainrun: job failed: rank 2 (host h2, pid 102) exited with code 7; ranks 0, 3 (hosts h1, h2) were killed "
        "with SIGKILL after the --grace period");
  JobState stopped = four();
  stopped.stop_signal(SIGTERM);
  stopped.exited(1, signal_status(SIGKILL));
  CHECK(stopped.summary() ==
        "trainrun: stopped by SIGTERM; all ranks were terminated; rank 1 (host h1) was killed with SIGKILL after the "
        "--grace period");
  JobState timed = four();
  timed.timed_out(3);
  timed.exited(3, signal_status(SIGKILL));
  CHECK(timed.summary() ==
        "trainrun: the job ran longer than --timeout 3 s; all ranks were terminated; rank 3 (host h2) was killed "
        "with SIGKILL after the --grace period");
  // The cause itself, and a host's ranks lost with it, are not "stopped by trainrun".
  JobState oom = four();
  oom.exited(0, signal_status(SIGKILL));
  oom.abandon("h2");
  CHECK(oom.sigkilled().empty());
}

TEST_CASE("a second Ctrl-C: the ranks it killed are named, without a grace period") {
  JobState s = four();
  s.stop_signal(SIGINT);
  s.exited(0, signal_status(SIGTERM));
  CHECK(s.stop_signal(SIGINT) == Action::Kill);
  s.exited(1, signal_status(SIGKILL));
  CHECK(s.summary() ==
        "trainrun: stopped by SIGINT; all ranks were terminated; rank 1 (host h1) was killed with SIGKILL at once "
        "(SIGINT during the teardown)");
}

TEST_CASE("a Ctrl-C during a failure's teardown kills, and the failure stays the cause") {
  JobState s = four();
  s.exited(0, exit_status(3));
  CHECK(s.stop_signal(SIGINT) == Action::Kill);
  CHECK(s.exit_code() == 3);
}

TEST_CASE("a SIGTERM during a failure's teardown is kept: it ends the job when a restart would follow") {
  JobState s = four();
  s.exited(1, exit_status(3));
  CHECK(s.stop_signal(SIGTERM) == Action::None);
  CHECK(s.stop_signal(SIGHUP) == Action::None);
  CHECK(s.late_signal() == SIGTERM);  // the first one
  CHECK(s.exit_code() == 3);          // unless the launcher says the signal ends it
  CHECK(s.outcome() == "rank_failed");
  s.end_by_late_signal();
  CHECK(s.exit_code() == 143);
  CHECK(s.outcome() == "signal");
  CHECK(s.summary() == "trainrun: stopped by SIGTERM; all ranks were terminated");
  JobState stopped = four();
  stopped.stop_signal(SIGINT);
  stopped.stop_signal(SIGTERM);
  CHECK_FALSE(stopped.late_signal());  // a signal's own teardown has its cause
}

TEST_CASE("timeout: 124; start timeout and lost hosts: 125, naming ranks and hosts") {
  JobState t = four();
  CHECK(t.timed_out(90) == Action::Teardown);
  CHECK(t.exit_code() == kExitTimeout);
  CHECK(t.summary() == "trainrun: the job ran longer than --timeout 90 s; all ranks were terminated");
  JobState st = four();
  CHECK(st.start_timeout({}, 30) == Action::None);
  CHECK(st.start_timeout({1, 3}, 30) == Action::Teardown);
  CHECK(st.exit_code() == kExitLaunch);
  CHECK(st.summary() ==
        "trainrun: ranks 1, 3 (hosts h1, h2) did not reach the rendezvous within 30 s (--start-timeout)");
  JobState lost = four();
  CHECK(lost.running_on("h2") == 2);
  lost.abandon("h2");
  CHECK(lost.running_on("h2") == 0);
  CHECK(lost.host_lost("lost connection to h2") == Action::Teardown);
  CHECK(lost.exit_code() == kExitLaunch);
  CHECK(lost.summary() == "trainrun: lost connection to h2");
}

TEST_CASE("elastic: retired workers are no failure; added workers are tracked; a give-up names its reason") {
  JobState s = four();
  s.name_ranks_workers();
  s.retired(2, signal_status(SIGKILL));
  CHECK(s.describe(2) == "worker 2 (host h2, pid 102) was killed by SIGKILL (out of memory? check dmesg on h2)");
  CHECK(s.add_rank("h3") == 4);
  CHECK(s.size() == 5);
  s.started(4, 104);
  CHECK(s.running_on("h3") == 1);
  for (int r : {0, 1, 3, 4}) CHECK(s.exited(r, exit_status(0)) == Action::None);
  CHECK(s.all_exited());
  CHECK(s.exit_code() == 0);
  CHECK(s.summary() == "");
}

TEST_CASE("elastic give-up: with a failed worker its status, without one exit 125") {
  JobState limit = four();
  limit.name_ranks_workers();
  limit.retired(1, exit_status(9));
  CHECK(limit.elastic_failure("elastic: reset limit 0 (--reset-limit) exceeded: worker 1 failed", 1) ==
        Action::Teardown);
  CHECK(limit.exit_code() == 9);
  CHECK(limit.summary() == "trainrun: elastic: reset limit 0 (--reset-limit) exceeded: worker 1 failed");
  CHECK(limit.outcome() == "rank_failed");

  JobState slots = four();
  CHECK(slots.elastic_failure("elastic: 1 slot(s) available, 2 required (--min-np)", std::nullopt) == Action::Teardown);
  CHECK(slots.exit_code() == kExitLaunch);
  CHECK(slots.summary() == "trainrun: elastic: 1 slot(s) available, 2 required (--min-np)");
  CHECK(slots.elastic_failure("again", std::nullopt) == Action::None);
}
