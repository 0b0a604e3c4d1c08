// What trainrun says when something is wrong, exactly as a user reads it:
// a rank count that is not a number, a number glued to -np, a host that
// cannot be resolved among good ones, and a rank that exits with a code
// trainrun also uses for its own errors (2, 124-127).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;

namespace {

const char* kNotRanks = " is not a number of ranks: give a whole number from 1 to 1048576 (see trainrun --help)\n";

}  // namespace

TEST_CASE("a rank count that is not a number: one line naming the option and the value, exit 2") {
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"-np", "two"}, std::string("trainrun: error: --np: 'two'") + kNotRanks},
      {{"--np", "0"}, std::string("trainrun: error: --np: '0'") + kNotRanks},
      {{"-np", "2.5"}, std::string("trainrun: error: --np: '2.5'") + kNotRanks},
      {{"-n", "two"}, std::string("trainrun: error: -n: 'two'") + kNotRanks},
      {{"--num-proc", "x"}, std::string("trainrun: error: --num-proc: 'x'") + kNotRanks},
      {{"-np2"},
       "trainrun: error: unknown option '-np2'; did you mean -np 2? (a space between the option and "
       "its value)\n"},
      {{"--np4"},
       "trainrun: error: unknown option '--np4'; did you mean --np 4? (a space between the option and "
       "its value)\n"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.push_back("/bin/true");
    const ProcessResult r = run_trainrun(args);
    INFO(c.args[0]);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == c.err);
  }
}

TEST_CASE("a host name that does not resolve, next to this machine: counted among all hosts and named") {
  const ProcessResult r = run_trainrun({"-H", "localhost:1,nosuchhost.invalid:1", "/bin/true"});
  if (contains(r.err, "libssh")) {
    MESSAGE("skipped: built without libssh");
    return;
  }
  CHECK(r.exit_code == 125);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("trainrun: pre-flight checks failed on 1 of 2 host(s) (nosuchhost.invalid); nothing was "
                    "started\n",
                    0) == 0);
  CHECK(contains(r.err, "  nosuchhost.invalid  connect  cannot resolve the host name nosuchhost.invalid ("));
  CHECK(contains(r.err, "): a typo in -H/--hostfile, or DNS\n"));
}

TEST_CASE("a rank that exits 2: the summary and the report say the 2 is the rank's, not a usage error") {
  char path[] = "/tmp/trainrun-messages-report.XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  std::string tag;
  const ProcessResult r = run_trainrun({"--report", path, "-np", "2", rank_program(), "init", "exit:1:2"}, &tag);
  CHECK(r.exit_code == 2);
  const std::regex summary(
      R"(trainrun: job failed: rank 1 \(host [^,]+, pid \d+\) exited with code 2; trainrun exits 2 with it: )"
      R"(the program's code, not a trainrun error)");
  std::smatch m;
  CHECK_MESSAGE(std::regex_search(r.err, m, summary), r.err);
  CHECK_FALSE(contains(r.err, "trainrun: error:"));
  const std::string report = read_file(path);
  CHECK(contains(report, "\"outcome\": \"rank_failed\""));
  CHECK(contains(report, "exited with code 2; trainrun exits 2 with it: the program's code, not a trainrun error"));
  std::remove(path);
  CHECK(nothing_left(tag, std::chrono::seconds(5)));

  // Another code is not one of trainrun's: no note.
  const ProcessResult three = run_trainrun({"-np", "2", rank_program(), "init", "exit:1:3"});
  CHECK(three.exit_code == 3);
  CHECK_FALSE(contains(three.err, "with it"));
}

TEST_CASE("under --launcher mpirun too: mpirun's 2 is the program's") {
  if (::access("/usr/bin/mpirun", X_OK) != 0) {
    MESSAGE("skipped: no /usr/bin/mpirun (Debian: openmpi-bin)");
    return;
  }
  const ProcessResult r = run_trainrun({"--mpi", "-np", "2", rank_program(), "exit:1:2"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err,
                 "trainrun: job failed: mpirun exited with code 2 (see its report above); trainrun exits 2 "
                 "with it: the program's code, not a trainrun error\n"));
}
