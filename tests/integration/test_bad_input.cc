// Bad input to the real trainrun: every case ends in exit 2 (usage error)
// and one line "trainrun: error: ..." naming the bad token, file:line or
// value, escaped; never a hang, a crash, unbounded memory or anything left
// running. And the inputs next to them that must keep working.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;

namespace {

// A file that is removed when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    char name[] = "/tmp/trainrun-bad-input-XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    path_ = name;
    REQUIRE(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
    ::close(fd);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// trainrun ARGS must exit 2 with exactly `message` as its only output.
void check_usage_error(const std::vector<std::string>& args, const std::string& message, ProcessOptions options = {}) {
  std::string tag;
  const ProcessResult r = run_trainrun(args, &tag, options);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 2);
  CHECK(r.err == "trainrun: error: " + message + "\n");
  CHECK(r.out.empty());
  CHECK(nothing_left(tag));
}

}  // namespace

TEST_CASE("--hostfile /dev/zero: refused past 1 MiB, in bounded memory") {
  ProcessOptions options;
  options.track_rss = true;
  options.timeout = std::chrono::seconds(60);  // a hang, not slowness, would reach this
  check_usage_error({"--hostfile", "/dev/zero", "true"},
                    "--hostfile /dev/zero: larger than 1 MiB (the most trainrun reads)", options);
  const ProcessResult r = run_trainrun({"--hostfile", "/dev/zero", "true"}, nullptr, options);
  CHECK(r.peak_rss_kib > 0);
  CHECK(r.peak_rss_kib < 128 * 1024);
}

TEST_CASE("--hostfile: a directory, a FIFO nobody writes to, a line too long, an empty name") {
  check_usage_error({"--hostfile", "/tmp", "true"}, "--hostfile /tmp: is a directory");
  char fifo[] = "/tmp/trainrun-fifo-XXXXXX";
  REQUIRE(::mkdtemp(fifo));
  const std::string path = std::string(fifo) + "/hosts";
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  check_usage_error({"--hostfile", path, "true"}, path + ": no hosts");
  ::unlink(path.c_str());
  ::rmdir(fifo);
  const TempFile long_name("localhost\n" + std::string(1000000, 'a') + "\n");
  check_usage_error({"--hostfile", long_name.path(), "true"},
                    long_name.path() + ":2: line longer than 4096 bytes (the limit for a hostfile)");
  check_usage_error({"--hostfile", "", "true"}, "--hostfile: empty file name");
}

TEST_CASE("-H: odd tokens are refused before any SSH code sees them") {
  const std::string colons =
      "not a host name or an IPv6 address (one ':' comes before the slots; an IPv6 address "
      "with slots is written [addr]:slots)";
  const std::string characters = "host name may contain only letters, digits, '-', '.' and '_', not ";
  struct Case {
    std::string hosts;
    std::string message;
  };
  const Case cases[] = {
      {"h:2:3", "-H: host 1 'h:2:3': " + colons},
      {"a:b:c:1", "-H: host 1 'a:b:c:1': " + colons},
      {"fe80::1%lo:2", "-H: host 1 'fe80::1%lo:2': not an IPv6 address; did you mean '[fe80::1%lo]:2'?"},
      {"=x", "-H: host 1 '=x': " + characters + "'='"},
      {"x]:2", "-H: host 1 'x]:2': " + characters + "']'"},
      {"", "-H: host 1 '': empty host name"},
      {"h,,h2", "-H: host 2 '': empty host name"},
      {"a\nb", "-H: host 1 'a\\nb': host name contains whitespace or a control character"},
      {"a\x1b[31mred", "-H: host 1 'a\\x1b[31mred': host name contains whitespace or a control character"},
      {std::string(100000, 'h'),
       "-H: host 1 '" + std::string(80, 'h') + "... (100000 bytes)': host name longer than 253 characters"},
      {"b@d@h", "-H: host 1 'b@d@h': " + characters + "'@'"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.message);
    check_usage_error({"-H", c.hosts, "true"}, c.message);
  }
}

TEST_CASE("hostfile: a UTF-8 BOM and Open MPI's max_slots work; bad keys and counts are named") {
  const TempFile bom("\xEF\xBB\xBFlocalhost slots=2 max_slots=4\n");
  const ProcessResult r = run_trainrun({"--hostfile", bom.path(), rank_program(), "allreduce"});
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "sum=1") == 2);
  const TempFile over("localhost slots=8 max_slots=4\n");
  check_usage_error({"--hostfile", over.path(), "true"}, over.path() + ":1: slots=8 is more than max_slots=4");
  const TempFile unknown("localhost\n# two\n127.0.0.1 foo=1\n");
  check_usage_error({"--hostfile", unknown.path(), "true"},
                    unknown.path() + ":3: unknown key 'foo=1' (expected slots=N or max_slots=N)");
  const TempFile bad_name("localhost\nh\x01x slots=2\n");
  check_usage_error({"--hostfile", bad_name.path(), "true"},
                    bad_name.path() + ":2: 'h\\x01x': host name contains whitespace or a control character");
}

TEST_CASE("every float option refuses nan and inf, naming the option and the value") {
  for (const char* option :
       {"--timeout", "--grace", "--fusion-threshold-mb", "--cycle-time-ms", "--stall-warning", "--stall-shutdown"}) {
    for (const char* value : {"nan", "inf"}) {
      CAPTURE(option);
      std::string tag;
      const ProcessResult r = run_trainrun({option, value, "-np", "1", "true"}, &tag);
      CHECK(r.exit_code == 2);
      CHECK(r.err.rfind(std::string("trainrun: error: ") + option + ": Value " + value +
                            " is not a finite number (see trainrun --help)\n",
                        0) == 0);
      CHECK(nothing_left(tag));
    }
  }
}

TEST_CASE("-x cannot forward what trainrun sets for every rank") {
  check_usage_error({"-np", "1", "-x", "TRAINRUN_RANK=7", "true"},
                    "-x TRAINRUN_RANK: trainrun sets this variable for every rank; it cannot be forwarded");
  ProcessOptions options;
  options.env = {"MASTER_PORT=1234"};
  check_usage_error({"-np", "1", "-x", "MASTER_PORT", "true"},
                    "-x MASTER_PORT: trainrun sets this variable for every rank; it cannot be forwarded", options);
  check_usage_error({"-np", "1", "--backend", "gloo", "-x", "TRAINRUN_BACKEND=mpi", "true"},
                    "-x TRAINRUN_BACKEND: trainrun sets this variable for every rank from --backend; it cannot be "
                    "forwarded (use --backend)");
  // Job-wide settings stay the user's.
  const ProcessResult r = run_trainrun(
      {"-np", "1", "-x", "TRAINRUN_COLLECTIVE_TIMEOUT=9", rank_program(), "env:TRAINRUN_COLLECTIVE_TIMEOUT"});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "TRAINRUN_COLLECTIVE_TIMEOUT=9"));
}

TEST_CASE("a host's job larger than one agent frame (64 MiB) starts every rank") {
  // 70 ranks with 1 MB of forwarded variables each: 70 MB of job description
  // for one host agent, which used to end in "agent protocol: oversized frame".
  std::vector<std::string> args = {"--local", "-np", "70"};
  for (int i = 0; i < 10; ++i) {
    args.push_back("-x");
    args.push_back("BIG" + std::to_string(i) + "=" + std::string(100000, 'v'));
  }
  args.push_back("true");
  std::string tag;
  const ProcessResult r = run_trainrun(args, &tag);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());  // the OMP_NUM_THREADS note is --verbose's
  CHECK(nothing_left(tag));
}

TEST_CASE("a setting the ranks would refuse is refused before anything starts: exit 2, one line") {
  const std::string config = "/tmp/trainrun-bad-setting-" + std::to_string(::getpid()) + ".yaml";
  {
    std::FILE* f = std::fopen(config.c_str(), "w");
    REQUIRE(f);
    std::fputs("library_options:\n  gloo_timeout_seconds: 1e400\n", f);
    std::fclose(f);
  }
  const struct {
    std::vector<std::string> args;
    std::string line;
  } cases[] = {
      {{"-x", "TRAINRUN_COLLECTIVE_TIMEOUT=2.5"},
       "TRAINRUN_COLLECTIVE_TIMEOUT='2.5' is not an integer (a setting for the ranks, which would refuse it)"},
      {{"--env", "TRAINRUN_SHM=2"},
       "TRAINRUN_SHM='2' is out of range [0, 1] (a setting for the ranks, which would refuse it)"},
      {{"--config-file", config},
       "--config-file " + config + ": library_options.gloo_timeout_seconds: Value 1e400 not in range 1 to 2592000"},
      {{"--gloo-timeout-seconds", "0.5"},
       "--gloo-timeout-seconds: Value 0.5 not in range 1 to 2592000 (see trainrun --help)"},
      {{"--gloo-timeout-seconds", "5000000"},
       "--gloo-timeout-seconds: Value 5000000 not in range 1 to 2592000 (see trainrun --help)"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    for (const char* a : {"-np", "2", "true"}) args.push_back(a);
    CAPTURE(c.line);
    check_usage_error(args, c.line);
  }
  ::unlink(config.c_str());
}

TEST_CASE("--elastic-hang-timeout or --elastic-timeout on a job that is not elastic: a note, the job runs") {
  for (const char* option : {"--elastic-hang-timeout", "--elastic-timeout"}) {
    CAPTURE(option);
    std::string tag;
    const ProcessResult r = run_trainrun({option, "5", "-np", "1", "true"}, &tag);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.err, std::string("trainrun: note: ") + option +
                              ": only elastic jobs (--min-np, --max-np, --host-discovery-script) use it; no effect\n"));
    CHECK(nothing_left(tag));
  }
}

TEST_CASE("a config file with a key given twice or a second YAML document: exit 2, one line") {
  const std::string base = "/tmp/trainrun-config-" + std::to_string(::getpid());
  const struct {
    const char* text;
    const char* why;
  } cases[] = {
      {"params:\n  fusion_threshold_mb: 1\n  fusion_threshold_mb: 2\n",
       "the key 'params.fusion_threshold_mb' is given twice"},
      {"params:\n  fusion_threshold_mb: 1\nparams:\n  cycle_time_ms: 2\n", "the key 'params' is given twice"},
      {"params:\n  fusion_threshold_mb: 1\n---\nparams:\n  cycle_time_ms: 2\n",
       "holds 2 YAML documents; one is read, so one may be given"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.why);
    const std::string path = base + ".yaml";
    std::FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f);
    std::fputs(c.text, f);
    std::fclose(f);
    check_usage_error({"--config-file", path, "-np", "1", "true"}, "--config-file " + path + ": " + c.why);
    ::unlink(path.c_str());
  }
}

TEST_CASE("too low a limit of open files for the job: exit 125 before anything starts, with the numbers") {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  const std::string tag = options.env.back();
  const ProcessResult r = run_process(
      {"/bin/sh", "-c", "ulimit -n 20 && exec '" + trainrun_bin() + "' -np 8 '" + rank_program() + "'"}, options);
  CHECK(r.exit_code == 125);
  CHECK(contains(r.err,
                 "trainrun: error: a job of 8 rank(s) (8 here, 0 remote host(s)) needs about 24 open files, "
                 "but this process may open 20 (ulimit -n; hard limit 20): raise it, e.g. ulimit -n 24\n"));
  CHECK_FALSE(contains(r.err, "Too many open files"));
  CHECK(nothing_left(tag));
}
