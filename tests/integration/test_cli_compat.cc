// The launcher's command line as users of mpirun, horovodrun and torchrun
// type it, through the real trainrun binary: no option but -h/--help ever
// prints the help (exit 0); an unknown option is exit 2 with one line and,
// where one is near, "did you mean"; every compatibility spelling gives
// the same plan and rank environment (--dry-run) as trainrun's own.
#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;

namespace {

bool is_help(const ProcessResult& r) { return contains(r.out, "Usage: trainrun") || contains(r.err, "Usage: trainrun"); }

// Every long option name --help lists ("--np", "--hostfile", ...).
std::set<std::string> long_options() {
  const ProcessResult help = run_trainrun({"--help"});
  REQUIRE(help.exit_code == 0);
  std::set<std::string> names;
  const std::regex option(R"((^|[ ,])--([a-z][a-z0-9-]+))");
  for (std::sregex_iterator it(help.out.begin(), help.out.end(), option), end; it != end; ++it) {
    names.insert((*it)[2]);
  }
  REQUIRE(names.count("hostfile"));
  return names;
}

// trainrun ARGS: exit 2, one line on stderr, nothing on stdout, no help.
void check_one_line_error(const std::vector<std::string>& args, const std::string& expected) {
  CAPTURE(args);
  std::string tag;
  const ProcessResult r = run_trainrun(args, &tag);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(count(r.err, "\n") == 1);
  CHECK(r.err == "trainrun: error: " + expected + "\n");
  CHECK(nothing_left(tag));
}

}  // namespace

TEST_CASE("mpirun's single-dash long options are options, never the help") {
  // Was: "-hostfile" read as "-h ostfile": the whole help, exit 0.
  const ProcessResult hostfile = run_trainrun({"-np", "2", "-hostfile", "/nonexistent/hosts", "true"});
  CHECK(hostfile.exit_code == 2);
  CHECK_FALSE(is_help(hostfile));
  CHECK(hostfile.err == "trainrun: error: --hostfile /nonexistent/hosts: No such file or directory\n");
  const ProcessResult hosts = run_trainrun({"-np", "2", "-hosts", "localhost:2", "--dry-run", "true"});
  CHECK(hosts.exit_code == 0);
  CHECK_FALSE(is_help(hosts));
  CHECK(contains(hosts.out, "2 rank(s) on 1 host(s)"));
}

TEST_CASE("unknown options: exit 2, one line naming the token, did you mean") {
  check_one_line_error({"-np", "2", "-hostfle", "h", "true"},
                       "unknown option '-hostfle'; did you mean --hostfile? (trainrun --help lists every option)");
  check_one_line_error({"--tag-outptu", "-np", "2", "true"},
                       "unknown option '--tag-outptu'; did you mean --tag-output? (trainrun --help lists every option)");
  check_one_line_error({"-np", "2", "--qqqqqqqq", "true"},
                       "unknown option '--qqqqqqqq' (trainrun --help lists every option)");
  check_one_line_error({"-hx", "-np", "1", "true"}, "unknown option '-hx' (trainrun --help lists every option)");
  check_one_line_error({"-ho", "-np", "1", "true"}, "unknown option '-ho' (trainrun --help lists every option)");
}

TEST_CASE("nothing but -h and --help prints the help and exits 0") {
  for (const char* help : {"-h", "--help"}) {
    const ProcessResult r = run_trainrun({help});
    CHECK(r.exit_code == 0);
    CHECK(is_help(r));
  }
  // Every option with one dash and two, with and without a value, and
  // tokens starting with h: none of them is the help.
  std::vector<std::vector<std::string>> cases = {{"-hostfile"}, {"-host"}, {"-help"}, {"-hel"}, {"--hel"},
                                                 {"-hh"}, {"-H"}, {"--help=1"}, {"-h=1"}};
  for (const std::string& name : long_options()) {
    if (name == "help") continue;
    cases.push_back({"-" + name});
    cases.push_back({"--" + name});
    cases.push_back({"-" + name, "1"});
    cases.push_back({"-" + name + "x"});
  }
  for (std::vector<std::string> args : cases) {
    CAPTURE(args);
    args.insert(args.end(), {"--dry-run", "-np", "1", "true"});
    const ProcessResult r = run_trainrun(args);
    CHECK_FALSE(is_help(r));
    if (r.exit_code == 2) CHECK(count(r.err, "\n") == 1);  // a usage error: one line
  }
}

TEST_CASE("the program's own options are never touched") {
  const ProcessResult r = run_trainrun({"-np", "1", "--dry-run", "true", "-hostfile", "x", "-h", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, " true -hostfile x -h --help\n"));
}
