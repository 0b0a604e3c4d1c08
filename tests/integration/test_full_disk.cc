// Output on a full disk, for real: a 64 KiB tmpfs mounted by the test. Each
// file that cannot be written is named once on trainrun's stderr, the
// console still gets every line, the report lists it (output_errors), and
// trainrun's exit status stays the job's: rank output files
// (--output-filename), the engine's --timeline, a stack dump and the report
// itself. Needs root (a mount namespace, mount): exits 77 (skip) saying so
// otherwise.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "tests/integration/report_check.h"
#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;
using nlohmann::json;
using std::chrono::seconds;

namespace {

bool is_mounted(const std::string& dir) { return contains(read_file("/proc/self/mounts"), " " + dir + " tmpfs "); }

// A tmpfs of 64 KiB on a fresh directory under /tmp, unmounted and removed
// with whatever is on it when the test case ends, passed or failed.
class TinyTmpfs {
 public:
  TinyTmpfs() {
    char name[] = "/tmp/trainrun-full-XXXXXX";
    if (!::mkdtemp(name)) {
      error_ = errno;
      return;
    }
    dir_ = name;
    error_ = ::mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") == 0 ? 0 : errno;
  }
  ~TinyTmpfs() {
    if (dir_.empty()) return;
    if (error_ == 0 && ::umount2(dir_.c_str(), 0) != 0) ::umount2(dir_.c_str(), MNT_DETACH);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  TinyTmpfs(const TinyTmpfs&) = delete;
  TinyTmpfs& operator=(const TinyTmpfs&) = delete;

  const std::string& dir() const { return dir_; }
  int error() const { return error_; }  // of the mount: 0 when it is mounted

  // Writes a file until the tmpfs is full.
  void fill() const {
    const int fd = ::open((dir_ + "/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    const std::string block(4096, 'x');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    const int error = errno;
    ::close(fd);
    REQUIRE(error == ENOSPC);
  }

 private:
  std::string dir_;
  int error_ = 0;
};

// The console lines of `text` tagged "[rank] ", without the tag.
std::vector<std::string> rank_lines(const std::string& text, int rank) {
  const std::string tag = "[" + std::to_string(rank) + "] ";
  std::vector<std::string> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(tag, 0) == 0) lines.push_back(line.substr(tag.size()));
  }
  return lines;
}

std::vector<std::string> numbers(int first, int last) {
  std::vector<std::string> out;
  for (int i = first; i <= last; ++i) out.push_back(std::to_string(i));
  return out;
}

// The report at `path`: validated against the schema when the validator is here.
json report_at(const std::string& path) {
  if (schema_validator_missing().empty()) return checked_report(path);
  MESSAGE("report not validated: ", schema_validator_missing());
  return json::parse(read_file(path));
}

// output_errors as "kind rank file error" lines, in order.
std::vector<std::string> output_errors(const json& report) {
  std::vector<std::string> out;
  for (const json& e : report.value("output_errors", json::array())) {
    out.push_back(e["kind"].get<std::string>() + " " + (e["rank"].is_null() ? "-" : e["rank"].dump()) + " " +
                  e["file"].get<std::string>() + " " + e["error"].get<std::string>());
  }
  std::sort(out.begin(), out.end());
  return out;
}

constexpr const char* kFull = "No space left on device";

}  // namespace

TEST_CASE("--output-filename on a full disk: one line per file, every line on the console, noted, exit 0") {
  TempReport report;
  std::string dir, tag;
  {
    TinyTmpfs fs;
    REQUIRE(fs.error() == 0);
    dir = fs.dir();
    // 2 ranks x 2 streams x ~108 KB: every file meets the full disk.
    const ProcessResult r = run_trainrun({"-np", "2", "--output-filename", dir + "/out", "--report", report.path,
                                          "/bin/sh", "-c", "seq 1 20000; seq 1 20000 >&2"},
                                         &tag);
    INFO(r.err.substr(0, 4000));
    CHECK(r.exit_code == 0);
    std::vector<std::string> expected_errors;
    for (int rank : {0, 1}) {
      for (const std::string stream : {"stdout", "stderr"}) {
        const std::string file = dir + "/out/rank.0" + std::to_string(rank) + "/" + stream;
        CHECK(count(r.err, "trainrun: warning: cannot write " + file + ": " + kFull + "; rank " + std::to_string(rank) +
                               "'s later " + stream + " goes to the console only\n") == 1);
        expected_errors.push_back(stream + " " + std::to_string(rank) + " " + file + " " + kFull);
      }
      CHECK(rank_lines(r.out, rank) == numbers(1, 20000));  // the console lost nothing
      CHECK(rank_lines(r.err, rank) == numbers(1, 20000));
    }
    CHECK(count(r.err, "cannot write") == 4);
    std::sort(expected_errors.begin(), expected_errors.end());
    const json j = report_at(report.path);
    CHECK(j["outcome"] == "success");
    CHECK(j["exit_code"] == 0);
    CHECK(output_errors(j) == expected_errors);
    CHECK(nothing_left(tag, seconds(5)));
  }
  CHECK_FALSE(is_mounted(dir));
}

TEST_CASE("--output-filename on a full disk with --rank-filter: the line says what is lost") {
  std::string dir, tag;
  {
    TinyTmpfs fs;
    REQUIRE(fs.error() == 0);
    dir = fs.dir();
    const ProcessResult r = run_trainrun(
        {"-np", "2", "--rank-filter", "0", "--output-filename", dir + "/out", "/bin/sh", "-c", "seq 1 20000"}, &tag);
    INFO(r.err.substr(0, 4000));
    CHECK(r.exit_code == 0);
    CHECK(count(r.err, "trainrun: warning: cannot write " + dir + "/out/rank.00/stdout: " + kFull +
                           "; rank 0's later stdout goes to the console only\n") == 1);
    CHECK(count(r.err, "trainrun: warning: cannot write " + dir + "/out/rank.01/stdout: " + kFull +
                           "; rank 1's later stdout is lost (--rank-filter keeps it off the console)\n") == 1);
    CHECK(rank_lines(r.out, 0) == numbers(1, 20000));
    CHECK(rank_lines(r.out, 1).empty());
    CHECK(nothing_left(tag, seconds(5)));
  }
  CHECK_FALSE(is_mounted(dir));
}

TEST_CASE("--timeline on a full disk: rank 0 says so once, the job goes on, the report notes it") {
  TempReport report;
  std::string dir, tag;
  {
    TinyTmpfs fs;
    REQUIRE(fs.error() == 0);
    dir = fs.dir();
    const std::string timeline = dir + "/timeline.json";
    const ProcessResult r = run_trainrun(
        {"-np", "2", "--timeline", timeline, "--report", report.path, program_path("ENGINE_PROGRAM"), "steps", "300"},
        &tag);
    INFO(r.out, r.err);
    CHECK(r.exit_code == 0);
    CHECK(count(r.err, "[0] trainrun: warning: cannot write " + timeline + ": " + kFull) == 1);
    CHECK(count(r.err, "cannot write") == 1);
    const json j = report_at(report.path);
    CHECK(j["outcome"] == "success");
    REQUIRE(j.value("output_errors", json::array()).size() == 1);
    CHECK(j["output_errors"][0]["kind"] == "timeline");
    CHECK(j["output_errors"][0]["rank"] == 0);
    CHECK(j["output_errors"][0]["file"] == timeline);
    CHECK(contains(j["output_errors"][0]["error"].get<std::string>(), kFull));
    CHECK(nothing_left(tag, seconds(5)));
  }
  CHECK_FALSE(is_mounted(dir));
}

TEST_CASE("a stack dump on a full disk: the console has the dump, one line names the file, exit 124 kept") {
  if (run_process({"/bin/sh", "-c", "command -v eu-stack"}).exit_code != 0) {
    MESSAGE("skipped: no eu-stack (Debian: elfutils)");
    return;
  }
  TempReport report;
  std::string dir, tag;
  {
    TinyTmpfs fs;
    REQUIRE(fs.error() == 0);
    dir = fs.dir();
    fs.fill();
    const ProcessResult r =
        run_trainrun({"-np", "2", "--timeout", "5", "--grace", "1", "--output-filename", dir + "/out", "--report",
                      report.path, "/bin/sh", "-c", "echo started; exec sleep 60"},
                     &tag);
    INFO(r.out, r.err);
    CHECK(r.exit_code == 124);
    CHECK(contains(r.err, "trainrun: stacks of every rank (--timeout 5 s expired), "));
    const std::string dump = dir + "/out/stacks.1.txt";
    CHECK(count(r.err, "trainrun: warning: cannot write " + dump + ": " + kFull +
                           "; the dump above is all there is of it\n") == 1);
    CHECK(rank_lines(r.out, 0) == std::vector<std::string>{"started"});
    CHECK(rank_lines(r.out, 1) == std::vector<std::string>{"started"});
    std::vector<std::string> left;  // no half-written dump, no temporary file
    for (const auto& entry : std::filesystem::directory_iterator(dir + "/out")) {
      if (!entry.is_directory()) left.push_back(entry.path().filename());
    }
    CHECK(left.empty());
    const json j = report_at(report.path);
    CHECK(j["outcome"] == "timeout");
    CHECK(j["exit_code"] == 124);
    CHECK(output_errors(j) == std::vector<std::string>{
                                  std::string("stacks - ") + dump + " " + kFull,
                                  "stdout 0 " + dir + "/out/rank.00/stdout " + kFull,
                                  "stdout 1 " + dir + "/out/rank.01/stdout " + kFull,
                              });
    CHECK(nothing_left(tag, seconds(5)));
  }
  CHECK_FALSE(is_mounted(dir));
}

TEST_CASE("--report on a full disk: one line, the older report removed, the job's exit status kept") {
  for (const int code : {0, 3}) {
    std::string dir, tag;
    {
      TinyTmpfs fs;
      REQUIRE(fs.error() == 0);
      dir = fs.dir();
      const std::string path = dir + "/report.json";
      REQUIRE(run_process({"/bin/sh", "-c", "echo '{\"from\": \"an older run\"}' > " + path}).exit_code == 0);
      fs.fill();
      const ProcessResult r = run_trainrun(
          {"-np", "1", "--report", path, "/bin/sh", "-c", "echo done; exit " + std::to_string(code)}, &tag);
      INFO(r.out, r.err);
      CHECK(r.exit_code == code);
      CHECK(count(r.err, "trainrun: warning: cannot write the report " + path + ": " + kFull +
                             "; this run has no report (the older one there was removed) and the exit status, " +
                             std::to_string(code) + ", is the job's\n") == 1);
      CHECK(count(r.err, "cannot write") == 1);
      CHECK(rank_lines(r.out, 0) == std::vector<std::string>{"done"});
      std::vector<std::string> left;  // the filler only: no report, no temporary file
      for (const auto& entry : std::filesystem::directory_iterator(dir)) left.push_back(entry.path().filename());
      CHECK(left == std::vector<std::string>{"filler"});
      CHECK(nothing_left(tag, seconds(5)));
    }
    CHECK_FALSE(is_mounted(dir));
  }
}

int main(int argc, char** argv) {
  // A mount namespace of the test's own (its jobs inherit it): whatever
  // happens to the test, even a crash that skips ~TinyTmpfs, its mounts
  // end with it.
  if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    std::cout << "skipped: cannot make a mount namespace (" << std::strerror(errno)
              << "): the full-disk tests need root (CAP_SYS_ADMIN)\n";
    return 77;
  }
  {
    TinyTmpfs probe;
    if (probe.error() != 0) {
      std::cout << "skipped: cannot mount a tmpfs (" << std::strerror(probe.error())
                << "): the full-disk tests need root (CAP_SYS_ADMIN)\n";
      return 77;
    }
  }
  doctest::Context context(argc, argv);
  return context.run();
}
