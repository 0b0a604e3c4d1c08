// What reaches the console and the files: whole lines, tagged, in order,
// under back-pressure, with progress updates and unfinished last lines.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>

#include "tests/integration/spew.h"
#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;
using std::chrono::seconds;

namespace {

std::string spew_bytes(int rank, std::size_t megabytes) {
  std::string out;
  for (std::size_t i = 0; out.size() < megabytes << 20; ++i) out += spew_line(rank, i);
  return out;
}

struct TempDir {
  TempDir() {
    char templ[] = "/tmp/trainrun-output-XXXXXX";
    path = ::mkdtemp(templ);
  }
  ~TempDir() { (void)!std::system(("rm -rf " + path).c_str()); }
  std::string path;
};

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
constexpr bool kAddressSanitizer = __has_feature(address_sanitizer);
#else
constexpr bool kAddressSanitizer = false;
#endif

}  // namespace

TEST_CASE("8 ranks x 10 MB of lines, progress updates and partial writes through a slow console") {
  TempDir dir;
  ProcessOptions options;
  // ~8 MB/s: slower than 8 ranks write, so trainrun must push back.
  options.read_chunk = 8192;
  options.read_pause = std::chrono::microseconds(1000);
  options.track_rss = true;
  options.timeout = std::chrono::seconds(240);
  std::string tag;
  const ProcessResult r =
      run_trainrun({"-np", "8", "--output-filename", dir.path + "/out", rank_program(), "spew:10"}, &tag, options);
  REQUIRE(r.exit_code == 0);
  // Every console piece (cut at \n and \r) is one line of one rank,
  // prefixed with that rank's tag, and each rank's lines come in order. A
  // line is cut only where its rank paused mid-line for longer than the hold
  // (a loaded machine can deschedule it): then its first part ends in a \n
  // of trainrun's own and the rest follows later under the tag again.
  std::map<int, std::size_t> next;
  std::map<int, std::string> started;  // the part of a cut line seen so far
  std::size_t start = 0, pieces = 0, cut = 0;
  bool whole = true;
  while (start < r.out.size() && whole) {
    const std::size_t end = r.out.find_first_of("\r\n", start);
    if (end == std::string::npos) FAIL("console output ends in the middle of a line");
    const std::string piece = r.out.substr(start, end + 1 - start);
    start = end + 1;
    if (piece == "\n") continue;  // the \n after a \r-terminated update
    const std::size_t close = piece.find("] ");
    const int rank = std::atoi(piece.c_str() + 1);
    const std::string expected = spew_line(rank, next[rank]);
    const std::string text = piece.substr(close == std::string::npos ? 0 : close + 2);
    std::string& so_far = started[rank];
    whole = piece[0] == '[' && close != std::string::npos;
    if (whole && so_far + text == expected) {
      so_far.clear();
      ++next[rank];
    } else if (whole && text.back() == '\n' && expected.rfind(so_far + text.substr(0, text.size() - 1), 0) == 0) {
      so_far += text.substr(0, text.size() - 1);
      ++cut;
    } else {
      whole = false;
      FAIL_CHECK("console piece " << pieces << " is not rank " << rank << "'s next line " << next[rank] << ": "
                                  << piece.substr(0, 80));
    }
    ++pieces;
  }
  MESSAGE(pieces << " console pieces, " << cut << " lines cut by a pause mid-line");
  CHECK(cut * 100 < pieces);
  CHECK(whole);
  for (int rank = 0; rank < 8; ++rank) {
    CAPTURE(rank);
    const std::string expected = spew_bytes(rank, 10);
    CHECK(next[rank] > 40000);
    // The files hold exactly the bytes each rank wrote.
    const std::string file = read_file(dir.path + "/out/rank.0" + std::to_string(rank) + "/stdout");
    CHECK(file.size() == expected.size());
    CHECK(file == expected);
  }
  MESSAGE("trainrun peak RSS " << r.peak_rss_kib / 1024 << " MiB, " << r.seconds << " s");
  CHECK(r.peak_rss_kib > 0);
  // The bound is trainrun's own; under AddressSanitizer (b_sanitize applies
  // to every target of a build dir, so the trainrun measured is instrumented
  // exactly when this test is) its shadow memory and quarantine exceed it.
  if (!kAddressSanitizer) CHECK(r.peak_rss_kib < 64 * 1024);
  CHECK(nothing_left(tag));
}

TEST_CASE("an unfinished last line is printed at exit; --no-tag-output prints bytes as they are") {
  const ProcessResult tagged = run_trainrun({"-np", "1", rank_program(), "raw:first\\nno newline at the end"});
  CHECK(tagged.exit_code == 0);
  CHECK(tagged.out == "[0] first\n[0] no newline at the end\n");
  const ProcessResult plain =
      run_trainrun({"-np", "1", "--no-tag-output", rank_program(), "raw:first\\nno newline at the end"});
  CHECK(plain.out == "first\nno newline at the end\n");
}

TEST_CASE("\\r progress updates reach the console promptly") {
  Child job({trainrun_bin(), "-np", "1", rank_program(), "raw:progress 10%\\r", "sleep:3000", "raw:done\\n"},
            ProcessOptions{});
  // The update shows while the rank is still sleeping.
  CHECK(job.wait_for_output("[0] progress 10%\r", seconds(2)));
  const ProcessResult r = job.wait();
  CHECK(r.exit_code == 0);
  CHECK(r.seconds >= 2.5);
}

TEST_CASE("stdout and stderr stay apart; --rank-filter picks console ranks, files get all") {
  TempDir dir;
  const ProcessResult r = run_trainrun({"-np", "3", "--rank-filter", "0,2", "--output-filename", dir.path,
                                        rank_program(), "print:to stdout", "eprint:to stderr"});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "[0] rank 0: to stdout\n"));
  CHECK(contains(r.out, "[2] rank 2: to stdout\n"));
  CHECK_FALSE(contains(r.out, "rank 1"));
  CHECK_FALSE(contains(r.out, "to stderr"));
  CHECK(contains(r.err, "[2] rank 2: to stderr\n"));
  CHECK(read_file(dir.path + "/rank.01/stdout") == "rank 1: to stdout\n");
  CHECK(read_file(dir.path + "/rank.01/stderr") == "rank 1: to stderr\n");
}

TEST_CASE("stdin goes to rank 0 only") {
  ProcessOptions options;
  options.input = "line one\nline two\n";
  const ProcessResult r = run_trainrun({"-np", "2", rank_program(), "cat"}, nullptr, options);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "[0] rank 0 got: line one\n"));
  CHECK(contains(r.out, "[0] rank 0 got: line two\n"));
  CHECK(contains(r.out, "[1] rank 1: end of input\n"));
  CHECK_FALSE(contains(r.out, "rank 1 got"));
}

TEST_CASE("an unwritable output directory is one clear error") {
  const ProcessResult r = run_trainrun({"-np", "1", "--output-filename", "/proc/no/such/dir", rank_program()});
  CHECK(r.exit_code != 0);
  CHECK(contains(r.err, "--output-filename: cannot create /proc/no"));
}

namespace {

// `shell` run as user nobody (a second real user), as an intruder would.
bool as_nobody(const std::string& shell) {
  return std::system(("runuser -u nobody -- /bin/sh -c '" + shell + "'").c_str()) == 0;
}

std::string contents(const std::string& path) {
  std::string text;
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    char buffer[256];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
    std::fclose(f);
  }
  return text;
}

}  // namespace

TEST_CASE("--output-filename where another user planted links or folders: refused in one line, nothing overwritten") {
  if (::geteuid() != 0 || std::system("command -v runuser >/dev/null") != 0) {
    MESSAGE("skipped: planting files as a second user needs root and runuser");
    return;
  }
  TempDir dir;
  ::chmod(dir.path.c_str(), 01777);  // a folder everyone may write to, as /tmp
  const std::string victim = dir.path + "/victim";
  {
    std::FILE* f = std::fopen(victim.c_str(), "w");
    std::fputs("precious\n", f);
    std::fclose(f);
  }
  REQUIRE(as_nobody("mkdir " + dir.path + "/out && mkdir " + dir.path + "/out/rank.00 && ln -s " + victim + " " +
                    dir.path + "/out/rank.00/stdout"));
  REQUIRE(as_nobody("ln -s " + dir.path + "/out " + dir.path + "/rank.00"));
  std::string tag;
  // The folder named is the intruder's.
  ProcessResult r = run_trainrun({"-np", "2", "--output-filename", dir.path + "/out", rank_program()}, &tag);
  CHECK(r.exit_code != 0);
  CHECK(contains(r.err, "trainrun: error: --output-filename: " + dir.path +
                            "/out belongs to user nobody (uid 65534), not to root (uid 0): refusing to write there\n"));
  CHECK(nothing_left(tag));
  // The folder named is root's, but the intruder planted rank.00 in it.
  r = run_trainrun({"-np", "2", "--output-filename", dir.path, rank_program()}, &tag);
  CHECK(r.exit_code != 0);
  CHECK(contains(r.err, "--output-filename: " + dir.path + "/rank.00 is a symbolic link: refusing to follow it\n"));
  CHECK(nothing_left(tag));
  CHECK(contents(victim) == "precious\n");
}
