// Every output option under `trainrun --launcher mpirun`, on Open MPI for
// real: --output-filename writes DIR/rank.NN/{stdout,stderr} as under
// trainrun's own launcher, --rank-filter filters, [rank] tags and
// --timestamp-output prefix whole lines, and lines of different ranks never
// interleave mid-line even when ranks print half a line, wait, and finish it.
// Exits 77 (skip) when mpirun is missing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/plan/program_path.h"
#include "tests/integration/process_runner.h"

using namespace trainrun::test;

namespace {

std::string g_dir;  // a temporary directory for this run

std::string trainrun_bin() { return program_path("TRAINRUN_BIN"); }

// Each rank prints half a line, waits so that the other rank's half lands in
// between, finishes it, writes a line to stderr and ends without a newline.
std::string half_lines_program() {
  const std::string path = g_dir + "/half_lines.sh";
  std::ofstream(path) << "#!/bin/sh\n"
                         "r=$OMPI_COMM_WORLD_RANK\n"
                         "printf 'partial-%s' $r; sleep 0.3; echo ' done'\n"
                         "echo \"err $r\" >&2\n"
                         "printf 'noeol-%s' $r\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

ProcessResult run_trainrun(std::vector<std::string> args, std::string* tag) {
  args.insert(args.begin(), {trainrun_bin(), "--mpi", "-np", "2"});
  args.push_back(half_lines_program());
  ProcessOptions options;
  options.env.push_back(unique_tag());
  *tag = options.env.back();
  return run_process(args, options);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

void check_nothing_left(const std::string& tag) {
  for (int i = 0; i < 50 && !processes_with_env(tag).empty(); ++i) ::usleep(100'000);
  CHECK(processes_with_env(tag).empty());
}

// Each console line carries one rank's text only, and each rank's lines,
// put together, are what it printed. (A half line left waiting longer than
// the router's hold is printed as it is and finished on a line of its own,
// as under trainrun's own launcher, so the split depends on timing.)
void check_tagged(const std::string& out, const std::vector<int>& ranks, const std::string& format) {
  std::map<int, std::string> text;
  const std::regex line_re(R"(\[(\d)\] (.*))");
  for (const std::string& line : lines(out)) {
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_match(line, m, line_re), line);
    const int rank = std::stoi(m[1]);
    CHECK_MESSAGE(m[2].str().find(std::to_string(1 - rank)) == std::string::npos, line);
    text[rank] += m[2].str();
  }
  std::map<int, std::string> expected;
  for (int rank : ranks) {
    std::string want = format;
    for (std::size_t at; (at = want.find('R')) != std::string::npos;) want.replace(at, 1, std::to_string(rank));
    expected[rank] = want;
  }
  CHECK(text == expected);
}

// stdout holds exactly these lines, in any order (ranks run side by side).
void check_lines(const std::string& out, std::vector<std::string> expected) {
  std::vector<std::string> got = lines(out);
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  CHECK(got == expected);
}

}  // namespace

TEST_CASE("tags: whole lines, each with its rank, never two ranks on one line") {
  std::string tag;
  const ProcessResult r = run_trainrun({}, &tag);
  CHECK(r.exit_code == 0);
  check_tagged(r.out, {0, 1}, "partial-R donenoeol-R");
  check_lines(r.err, {"[0] err 0", "[1] err 1"});
  check_nothing_left(tag);
}

TEST_CASE("--no-tag-output: whole lines without tags") {
  std::string tag;
  const ProcessResult r = run_trainrun({"--no-tag-output"}, &tag);
  CHECK(r.exit_code == 0);
  const std::regex plain(R"(partial-\d done|partial-\d| done|noeol-\d)");
  int noeol = 0;
  for (const std::string& line : lines(r.out)) {
    CHECK_MESSAGE(std::regex_match(line, plain), line);
    noeol += line.rfind("noeol-", 0) == 0;
  }
  CHECK(noeol == 2);
  check_lines(r.err, {"err 0", "err 1"});
}

TEST_CASE("--rank-filter 1: only rank 1 reaches the console") {
  std::string tag;
  const ProcessResult r = run_trainrun({"--rank-filter", "1"}, &tag);
  CHECK(r.exit_code == 0);
  check_tagged(r.out, {1}, "partial-R donenoeol-R");
  check_lines(r.err, {"[1] err 1"});
}

TEST_CASE("--timestamp-output: the time, then the tag, on every line") {
  std::string tag;
  const ProcessResult r = run_trainrun({"--timestamp-output"}, &tag);
  CHECK(r.exit_code == 0);
  const std::regex stamped(
      R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \[[01]\] (partial-\d done|partial-\d| done|noeol-\d|err \d))");
  const std::vector<std::string> all = lines(r.out + r.err);
  CHECK(all.size() >= 6);
  for (const std::string& line : all) CHECK_MESSAGE(std::regex_match(line, stamped), line);
}

TEST_CASE("--output-filename DIR: each rank's bytes in DIR/rank.NN/{stdout,stderr}") {
  const std::string dir = g_dir + "/out";
  std::string tag;
  const ProcessResult r = run_trainrun({"--output-filename", dir}, &tag);
  CHECK(r.exit_code == 0);
  CHECK(read_file(dir + "/rank.00/stdout") == "partial-0 done\nnoeol-0");
  CHECK(read_file(dir + "/rank.01/stdout") == "partial-1 done\nnoeol-1");
  CHECK(read_file(dir + "/rank.00/stderr") == "err 0\n");
  CHECK(read_file(dir + "/rank.01/stderr") == "err 1\n");
  check_tagged(r.out, {0, 1}, "partial-R donenoeol-R");
}

TEST_CASE("--output-filename that cannot be created: one line, exit 1, nothing started") {
  std::string tag;
  const ProcessResult r = run_trainrun({"--output-filename", "/proc/no/such"}, &tag);
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK(lines(r.err).size() == 1);
  CHECK(r.err.rfind("trainrun: error: ", 0) == 0);
  check_nothing_left(tag);
}

int main(int argc, char** argv) {
  const auto mpirun = trainrun::cli::find_program("mpirun", std::getenv("PATH"));
  if (!mpirun.path) {
    std::printf("SKIP: mpirun not found in PATH (Debian: apt-get install openmpi-bin)\n");
    return 77;
  }
  char dir[] = "/tmp/trainrun-mpirun-output.XXXXXX";
  if (!::mkdtemp(dir)) return 1;
  g_dir = dir;
  doctest::Context context(argc, argv);
  const int code = context.run();
  std::filesystem::remove_all(g_dir);
  return code;
}
