// The JSON job report (--report FILE, TRAINRUN_REPORT) for every way a job
// ends, validated against cli/report/report.schema.json, and the straggler
// warning and table of real engine jobs. Exits 77 when the schema validator
// (python3-jsonschema) is missing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>

#include "tests/integration/report_check.h"
#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;
using nlohmann::json;
using std::chrono::seconds;

namespace {

std::string engine_program() { return program_path("ENGINE_PROGRAM"); }

// 4 ranks, 200 steps of one engine allreduce; `slow_rank` (-1: none) sleeps
// `ms` before each. Windows of 40 cycles: 5 even on a slow, oversubscribed machine.
ProcessResult training_job(const std::string& report, int slow_rank, int ms) {
  return run_trainrun({"--report", report, "--straggler-warning", "50", "-x", "TRAINRUN_STRAGGLER_WINDOW=40", "-np",
                       "4", engine_program(), "train", "200", std::to_string(slow_rank), std::to_string(ms)});
}

// The last line of `text` that starts with "trainrun: ".
std::string last_trainrun_line(const std::string& text) {
  std::string found;
  for (std::size_t at = text.find("trainrun: "); at != std::string::npos; at = text.find("\ntrainrun: ", at + 1)) {
    const std::size_t start = text[at] == '\n' ? at + 1 : at;
    found = text.substr(start, text.find('\n', start) - start);
  }
  return found;
}

// trainrun's exit status, then the report: valid, with that exit code and
// `outcome` (null when invalid).
json report_after(const ProcessResult& r, const std::string& path, int exit_code, const std::string& outcome) {
  INFO(r.out, r.err);
  CHECK(r.exit_code == exit_code);
  json j = checked_report(path);
  if (!j.is_object()) return j;
  CHECK(j["outcome"] == outcome);
  CHECK(j["exit_code"] == exit_code);
  return j;
}

}  // namespace

TEST_CASE("success: every rank exited 0, with pid, backend, times and resource use") {
  const TempReport report;
  const std::string& path = report.path;
  std::string tag;
  const ProcessResult r =
      run_trainrun({"--report", path, "--local", "-np", "3", rank_program(), "init", "allreduce"}, &tag);
  INFO(r.out, r.err);
  const json j = report_after(r, path, 0, "success");
  REQUIRE(j.is_object());
  CHECK(j["failure"].is_null());
  CHECK(j["launcher"] == "local");
  CHECK(j["size"] == 3);
  CHECK(j["command_line"][0] == trainrun_bin());
  CHECK(j["command_line"].back() == "allreduce");
  CHECK(j["rendezvous_s"].is_number());
  CHECK(j["wall_time_s"].get<double>() >= j["rendezvous_s"].get<double>());
  REQUIRE(j["ranks"].size() == 3);
  for (const json& rank : j["ranks"]) {
    CHECK(rank["state"] == "exited");
    CHECK(rank["exit_code"] == 0);
    CHECK(rank["pid"].get<int>() > 0);
    CHECK(rank["backend"] == "tcp");
    CHECK(rank["max_rss_kb"].get<long>() > 1000);
    CHECK(rank["end_s"].get<double>() >= rank["start_s"].get<double>());
  }
  CHECK(nothing_left(tag));
}

TEST_CASE("a rank exits 3: the report names it with the summary trainrun printed") {
  const TempReport report;
  const std::string& path = report.path;
  const ProcessResult r =
      run_trainrun({"--report", path, "--grace", "1", "-np", "3", rank_program(), "init", "exit:1:3", "sleep:60000"});
  INFO(r.out, r.err);
  const json j = report_after(r, path, 3, "rank_failed");
  REQUIRE(j.is_object());
  CHECK(j["failure"]["rank"] == 1);
  CHECK(j["failure"]["cause"] == last_trainrun_line(r.err));
  CHECK(contains(j["failure"]["cause"].get<std::string>(), "rank 1 (host "));
  CHECK(j["ranks"][1]["exit_code"] == 3);
  // The others were stopped by trainrun's SIGTERM.
  CHECK(j["ranks"][0]["state"] == "killed");
  CHECK(j["ranks"][0]["signal"] == "SIGTERM");
}

TEST_CASE("a rank killed by a signal, and the report path from TRAINRUN_REPORT") {
  const TempReport report;
  const std::string& path = report.path;
  ProcessOptions options;
  options.env.push_back("TRAINRUN_REPORT=" + path);
  const ProcessResult r =
      run_trainrun({"--grace", "1", "-np", "2", rank_program(), "init", "raise:0:9", "sleep:60000"}, nullptr, options);
  INFO(r.out, r.err);
  const json j = report_after(r, path, 128 + SIGKILL, "rank_failed");
  REQUIRE(j.is_object());
  CHECK(j["failure"]["rank"] == 0);
  CHECK(j["ranks"][0]["state"] == "killed");
  CHECK(j["ranks"][0]["signal"] == "SIGKILL");
  CHECK(j["ranks"][0]["exit_code"].is_null());
}

TEST_CASE("--timeout: outcome timeout, exit 124") {
  const TempReport report;
  const std::string& path = report.path;
  const ProcessResult r = run_trainrun(
      {"--report", path, "--timeout", "3", "--grace", "1", "-np", "2", rank_program(), "init", "sleep:60000"});
  INFO(r.out, r.err);
  const json j = report_after(r, path, 124, "timeout");
  REQUIRE(j.is_object());
  CHECK(j["failure"]["rank"].is_null());
  CHECK(contains(j["failure"]["cause"].get<std::string>(), "--timeout 3"));
  CHECK(j["rendezvous_s"].is_number());
}

TEST_CASE("Ctrl-C: outcome signal, exit 130, every rank stopped") {
  const TempReport report;
  const std::string& path = report.path;
  ProcessOptions options;
  options.env.push_back(unique_tag());
  const std::string tag = options.env.back();
  Child job({trainrun_bin(), "--report", path, "-np", "2", rank_program(), "init", "print:ready", "sleep:60000"},
            options);
  REQUIRE(job.wait_for_output("rank 1: ready", seconds(60)));
  job.signal(SIGINT);
  const ProcessResult r = job.wait();
  INFO(r.out, r.err);
  const json j = report_after(r, path, 130, "signal");
  REQUIRE(j.is_object());
  CHECK(contains(j["failure"]["cause"].get<std::string>(), "SIGINT"));
  for (const json& rank : j["ranks"]) CHECK(rank["state"] == "killed");
  CHECK(nothing_left(tag, seconds(3)));
}

TEST_CASE("pre-flight failure: a missing program; nothing started") {
  const TempReport report;
  const std::string& path = report.path;
  const ProcessResult r = run_trainrun({"--report", path, "-np", "2", "/nonexistent/train"});
  INFO(r.out, r.err);
  const json j = report_after(r, path, 127, "preflight_failed");
  REQUIRE(j.is_object());
  CHECK(contains(j["failure"]["cause"].get<std::string>(), "/nonexistent/train"));
  CHECK(j["ranks"][1]["state"] == "not_started");
}

TEST_CASE("a host list that cannot be used: usage_error, with trainrun's error line as the cause") {
  const TempReport report;
  const std::string& path = report.path;
  const ProcessResult r = run_trainrun({"--report", path, "-H", "bad host!", rank_program()});
  INFO(r.out, r.err);
  const json j = report_after(r, path, 2, "usage_error");
  REQUIRE(j.is_object());
  CHECK(j["failure"]["cause"] == last_trainrun_line(r.err));
  CHECK(j["ranks"].empty());
}

TEST_CASE(
    "usage errors on the command line write the report: --report's file when it was read, else TRAINRUN_REPORT's") {
  const TempReport report, from_env;
  ProcessOptions options;
  options.env.push_back("TRAINRUN_REPORT=" + from_env.path);
  std::string tag;
  // A bad value: CLI11 read every option, --report included.
  const ProcessResult np0 = run_trainrun({"-np", "0", "--report", report.path, rank_program()}, &tag, options);
  INFO(np0.err);
  CHECK(np0.err ==
        "trainrun: error: --np: '0' is not a number of ranks: give a whole number from 1 to 1048576 (see trainrun "
        "--help)\n");
  json j = report_after(np0, report.path, 2, "usage_error");
  REQUIRE(j.is_object());
  CHECK(j["failure"] == json{{"rank", nullptr},
                             {"cause",
                              "trainrun: error: --np: '0' is not a number of ranks: give a whole number from 1 to "
                              "1048576 (see trainrun --help)"},
                             {"stderr_tail", json::array()},
                             {"sigkilled_ranks", json::array()}});
  CHECK(j["size"] == 0);
  CHECK(j["ranks"].empty());
  CHECK(j["command_line"].size() == 6);
  CHECK(::access(from_env.path.c_str(), F_OK) != 0);
  // An unknown option: what follows it may be the program's, so TRAINRUN_REPORT.
  const ProcessResult unknown =
      run_trainrun({"--no-such-option", "--report", report.path, rank_program()}, &tag, options);
  INFO(unknown.err);
  CHECK(unknown.err == "trainrun: error: unknown option '--no-such-option' (trainrun --help lists every option)\n");
  j = report_after(unknown, from_env.path, 2, "usage_error");
  REQUIRE(j.is_object());
  CHECK(j["failure"]["cause"] ==
        "trainrun: error: unknown option '--no-such-option' (trainrun --help lists every option)");
  // No program.
  const ProcessResult none = run_trainrun({"--report", report.path, "-np", "2"}, &tag, options);
  CHECK(none.err == "trainrun: error: no program given (see trainrun --help)\n");
  j = report_after(none, report.path, 2, "usage_error");
  REQUIRE(j.is_object());
  CHECK(j["failure"]["cause"] == "trainrun: error: no program given (see trainrun --help)");
  // The help runs no job: no report.
  ::unlink(from_env.path.c_str());
  CHECK(run_trainrun({"--help"}, &tag, options).exit_code == 0);
  CHECK(::access(from_env.path.c_str(), F_OK) != 0);
  CHECK(nothing_left(tag));
}

TEST_CASE("the failing rank's last 20 lines of stderr are in the report, another rank's are not") {
  const TempReport report;
  std::vector<std::string> args = {"--report", report.path, "--grace", "1", "-np", "2", rank_program(), "init"};
  for (int i = 1; i <= 25; ++i) args.push_back("eprint:line " + std::to_string(i));  // every rank
  args.insert(args.end(), {"exit:1:3", "sleep:60000"});
  std::string tag;
  const ProcessResult r = run_trainrun(args, &tag);
  const json j = report_after(r, report.path, 3, "rank_failed");
  REQUIRE(j.is_object());
  CHECK(j["failure"]["rank"] == 1);
  json expected = json::array();
  for (int i = 6; i <= 25; ++i) expected.push_back("rank 1: line " + std::to_string(i));
  CHECK(j["failure"]["stderr_tail"] == expected);
  CHECK(j["failure"]["sigkilled_ranks"] == json::array());
  CHECK(nothing_left(tag));
}

TEST_CASE("a rank that outlives --grace after a failure: SIGKILL, named in the summary and the report") {
  const TempReport report;
  std::string tag;
  const ProcessResult r = run_trainrun({"--report", report.path, "--grace", "1", "-np", "3", rank_program(),
                                        "ignore-term:0:-", "init", "exit:2:3", "sleep:60000"},
                                       &tag);
  const json j = report_after(r, report.path, 3, "rank_failed");
  REQUIRE(j.is_object());
  const std::string host = j["ranks"][0]["host"];
  const std::string line = "trainrun: job failed: rank 2 (host " + host + ", pid " +
                           std::to_string(j["ranks"][2]["pid"].get<int>()) + ") exited with code 3; rank 0 (host " +
                           host + ") was killed with SIGKILL after the --grace period";
  CHECK(last_trainrun_line(r.err) == line);
  CHECK(j["failure"]["cause"] == line);
  CHECK(j["failure"]["sigkilled_ranks"] == json::array({0}));
  CHECK(j["ranks"][0]["signal"] == "SIGKILL");
  CHECK(j["ranks"][1]["signal"] == "SIGTERM");
  CHECK(nothing_left(tag));
}

TEST_CASE("Ctrl-C and a rank that ignores SIGTERM: \"all ranks were terminated\" says which needed SIGKILL") {
  const TempReport report;
  ProcessOptions options;
  options.env.push_back(unique_tag());
  const std::string tag = options.env.back();
  Child job({trainrun_bin(), "--report", report.path, "--grace", "1", "-np", "2", rank_program(), "ignore-term:1:-",
             "init", "print:ready", "sleep:60000"},
            options);
  REQUIRE(job.wait_for_output("rank 1: ready", seconds(60)));
  job.signal(SIGINT);
  const ProcessResult r = job.wait();
  const json j = report_after(r, report.path, 130, "signal");
  REQUIRE(j.is_object());
  const std::string line = "trainrun: stopped by SIGINT; all ranks were terminated; rank 1 (host " +
                           j["ranks"][1]["host"].get<std::string>() +
                           ") was killed with SIGKILL after the --grace period";
  CHECK(last_trainrun_line(r.err) == line);
  CHECK(j["failure"]["cause"] == line);
  CHECK(j["failure"]["rank"].is_null());
  CHECK(j["failure"]["stderr_tail"] == json::array());
  CHECK(j["failure"]["sigkilled_ranks"] == json::array({1}));
  CHECK(nothing_left(tag, seconds(3)));
}

TEST_CASE("--launcher mpirun: what trainrun knows, and a note on what it does not") {
  if (::access("/usr/bin/mpirun", X_OK) != 0) {
    MESSAGE("skipped: no /usr/bin/mpirun (Debian: openmpi-bin)");
    return;
  }
  const TempReport report;
  const std::string& path = report.path;
  const ProcessResult r =
      run_trainrun({"--report", path, "--launcher", "mpirun", "-np", "2", rank_program(), "init", "exit:1:3"});
  INFO(r.out, r.err);
  CHECK(r.exit_code == 3);
  const json j = checked_report(path);
  REQUIRE(j.is_object());
  CHECK(j["launcher"] == "mpirun");
  CHECK(j["outcome"] == "rank_failed");
  CHECK(j["failure"]["rank"].is_null());
  CHECK(j["failure"]["cause"] == last_trainrun_line(r.err));
  CHECK(j["ranks"][1]["state"] == "unknown");
  CHECK(j["notes"].size() == 1);
}

TEST_CASE("a report that cannot be written is a warning, not a failure") {
  const ProcessResult r = run_trainrun({"--report", "/nonexistent/dir/report.json", "-np", "1", rank_program()});
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.err, "trainrun: warning: cannot write the report /nonexistent/dir/report.json: "));
}

TEST_CASE("a rank slowed by 30 ms per step is the straggler: one warning line, and the table") {
  const TempReport report;
  const std::string& path = report.path;
  const ProcessResult r = training_job(path, 2, 30);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.err, "was last in") == 1);
  CHECK(contains(r.err, "trainrun: rank 2 ("));
  CHECK(contains(r.err, "% of the last 40 cycles, median lag "));
  const json j = checked_report(path);
  REQUIRE(j.is_object());
  REQUIRE(j["stragglers"].is_object());
  CHECK(j["stragglers"]["cycles"].get<int>() >= 200);
  const json& slow = j["stragglers"]["ranks"][2];
  CHECK(slow["last_percent"].get<double>() > 50);
  CHECK(slow["median_lag_ms"].get<double>() > 10);
  for (int other : {0, 1, 3}) CHECK(j["stragglers"]["ranks"][other]["last_percent"].get<double>() < 30);
  CHECK(j["first_op_s"].is_number());
}

TEST_CASE("a balanced job: no straggler line, and the table still comes") {
  const TempReport report;
  const std::string& path = report.path;
  const ProcessResult r = training_job(path, -1, 0);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.err, "was last in") == 0);
  const json j = checked_report(path);
  REQUIRE(j.is_object());
  REQUIRE(j["stragglers"].is_object());
  CHECK(j["stragglers"]["ranks"].size() == 4);
}

int main(int argc, char** argv) {
  if (const std::string why = schema_validator_missing(); !why.empty()) {
    std::cout << "SKIP: " << why << "\n";
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
