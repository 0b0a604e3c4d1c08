// Elastic jobs over the TCP mesh (--no-shm): kill -9 of a worker while the
// ranks loop 4 MiB broadcasts or alltoalls. Every wait of the survivors must
// end at once (the peer's closed connection, or the membership change), so
// they re-form and finish; the collective timeout is set to 600 s so that a
// wait nothing wakes shows up as a hang here. The race is in the timing, so
// each case kills several times.
#include <doctest/doctest.h>

#include <csignal>
#include <string>

#include "tests/integration/elastic_checks.h"

using namespace trainrun::test;
using std::chrono::seconds;

namespace {

// A 3-rank job looping `collective` on 4 MiB over TCP; worker `victim`
// (never rank 0, the broadcast's root) is killed once step 100 is done.
// The survivors must run a step in their new world within 60 s.
void kill_during(const std::string& collective, int victim) {
  CAPTURE(collective);
  CAPTURE(victim);
  ProcessOptions options;
  options.env = {unique_tag(), "TRAINRUN_COLLECTIVE_TIMEOUT=600"};
  options.timeout = std::chrono::minutes(8);  // slow sanitizer builds; a hang fails below, long before
  const std::string tag = options.env.front();
  Child job({trainrun_bin(), "--local", "-np", "3", "--min-np", "2", "--no-shm", program_path("ELASTIC_PROGRAM"),
             "--collective", collective, "--steps", "300", "--mb", "4"},
            options);
  REQUIRE(job.wait_for_output("] step 100 size 3", std::chrono::minutes(4)));
  const pid_t pid = worker_pid(tag, victim);
  REQUIRE(pid > 0);
  ::kill(pid, SIGKILL);
  const bool reformed = job.wait_for_output(" size 2 gen 1 ", seconds(60));
  CHECK_MESSAGE(reformed,
                "the survivors did not re-form within 60 s of the kill (TRAINRUN_COLLECTIVE_TIMEOUT is 600 s)");
  if (!reformed) job.signal_group(SIGKILL);
  check_survivors_finished(job.wait(), victim, 3, 300);
  CHECK(nothing_left(tag, seconds(5)));
}

}  // namespace

TEST_CASE("kill -9 of a worker mid-broadcast over TCP: the survivors re-form and finish, every time") {
  for (int round = 0; round < 4; ++round) kill_during("broadcast", 1 + round % 2);
}

TEST_CASE("kill -9 of a worker mid-alltoall over TCP: the survivors re-form and finish, every time") {
  for (int round = 0; round < 3; ++round) kill_during("alltoall", 1 + round % 2);
}
