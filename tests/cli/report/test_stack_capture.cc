#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "cli/report/stack_capture.h"

using namespace trainrun::cli::report;

TEST_CASE("eu-stack's failures become one line: ptrace refused with the fix, a vanished process") {
  CHECK(capture_failure_note("eu-stack: dwfl_linux_proc_attach pid 42: Operation not permitted\n", 1)
            .find("ptrace was refused (Operation not permitted): ") == 0);
  CHECK(capture_failure_note("eu-stack: dwfl_linux_proc_report pid 42: No such process\n", 1) ==
        "it exited before its stack was taken");
  CHECK(capture_failure_note("", 127) == "eu-stack could not be executed");
  CHECK(capture_failure_note("first\nsecond\n", 1) == "first");
  CHECK(capture_failure_note("", 3) == "eu-stack failed with exit code 3");
}

TEST_CASE("a real process's stack, a rank that is gone, and a host without eu-stack") {
  const pid_t child = ::fork();
  if (child == 0) {
    ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  REQUIRE(child > 0);
  ::usleep(200 * 1000);  // into its sleep
  const std::vector<CaptureTarget> targets = {{4, child}, {5, -1}};
  if (::access("/usr/bin/eu-stack", X_OK) == 0) {
    const CaptureResult result = capture_stacks(targets, std::chrono::seconds(20));
    REQUIRE(result.ranks.size() == 2);
    CHECK(result.host_note.empty());
    CHECK(result.ranks[0].rank == 4);
    CHECK_FALSE(result.ranks[0].note);
    CHECK(result.ranks[0].text.find("PID " + std::to_string(child) + " - process sleep\n") == 0);
    CHECK(result.ranks[0].text.find("nanosleep") != std::string::npos);
    CHECK(result.ranks[1].note);
    CHECK(result.ranks[1].text == "it had exited before the request");
  } else {
    MESSAGE("no /usr/bin/eu-stack: the real capture is not tried");
  }
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", "/nonexistent", 1);
  const CaptureResult missing = capture_stacks(targets, std::chrono::seconds(5));
  ::setenv("PATH", path.c_str(), 1);
  CHECK(missing.host_note == "eu-stack is not installed on this host (Debian/Ubuntu: apt-get install elfutils)");
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}
