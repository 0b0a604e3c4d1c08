// The engine in real jobs, as a user sees it: the stall warning and the
// stall shutdown (text, timing, exit status), the timeline file (valid JSON
// with every phase), and settings that cannot be used; no process left over.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/process_runner.h"

using namespace trainrun::test;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<std::string> job(int np, std::vector<std::string> program_args) {
  std::vector<std::string> argv = {program_path("TRAINRUN_BIN"), "--local", "-np", std::to_string(np),
                                   program_path("ENGINE_PROGRAM")};
  argv.insert(argv.end(), program_args.begin(), program_args.end());
  return argv;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// "rank R: error after S s: ..." -> S, or -1.
double error_seconds(const std::string& out, int rank) {
  const std::string key = "rank " + std::to_string(rank) + ": error after ";
  const auto at = out.find(key);
  return at == std::string::npos ? -1 : std::stod(out.substr(at + key.size()));
}

}  // namespace

// The late tensor is cached here, as in steady-state training: rank 0's
// request waits on a cache hit and must be negotiated in full before rank 0
// can say which rank is missing.
TEST_CASE("a stall warning names the op and the missing rank, once per interval") {
  ProcessOptions options;
  options.env = {unique_tag(), "TRAINRUN_STALL_WARNING=1"};
  Child child(job(2, {"stall", "1", "2500"}), options);
  REQUIRE(child.wait_for_output("rank 0: submitting", std::chrono::seconds(30)));
  const auto submitted = Clock::now();
  REQUIRE(child.wait_for_output("stall:", std::chrono::seconds(5)));
  const double after = std::chrono::duration<double>(Clock::now() - submitted).count();
  CHECK_MESSAGE(after >= 0.95, after);
  CHECK_MESSAGE(after <= 1.8, after);
  const ProcessResult r = child.wait();
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, ": done, sum 2") == 2);
  const std::string warning = "trainrun: rank 0 (";
  CHECK_MESSAGE(r.err.find("): stall: 1 op(s) waited more than 1 s for other ranks: allreduce 'late.tensor' "
                           "(missing rank 1)") != std::string::npos,
                r.err);
  // Rank 1 arrives 2.5 s late: warnings at about 1 s and 2 s, never more.
  CHECK(count(r.err, warning) >= 1);
  CHECK(count(r.err, warning) <= 2);
  CHECK(processes_with_env(options.env[0]).empty());
}

TEST_CASE("a stall shutdown fails the pending op on every rank, and the job goes on") {
  ProcessOptions options;
  options.env = {unique_tag(), "TRAINRUN_STALL_SHUTDOWN=1.5", "TRAINRUN_STALL_WARNING=0"};
  const ProcessResult r = run_process(job(2, {"stall", "1", "3000", "fresh"}), options);  // not cached
  CHECK(r.exit_code == 3);
  INFO(r.out);
  INFO(r.err);
  // Rank 0 waited 1.5 s (plus a cycle or two); rank 1 came later and was
  // refused at once: the engine had stopped on every rank.
  CHECK(error_seconds(r.out, 0) >= 1.45);
  CHECK(error_seconds(r.out, 0) <= 2.5);
  CHECK(error_seconds(r.out, 1) >= 0);
  CHECK(error_seconds(r.out, 1) <= 0.1);
  const std::string why =
      "stall: an op waited more than 1.5 s (TRAINRUN_STALL_SHUTDOWN), so the engine stopped "
      "and failed every pending op";
  CHECK(count(r.out, why) == 2);
  CHECK(r.out.find("allreduce 'late.tensor': " + why + "; waiting: allreduce 'late.tensor' (missing rank 1)") !=
        std::string::npos);
  CHECK(r.err.find("stall: 1 op(s) waited") == std::string::npos);  // warnings were off
  CHECK(processes_with_env(options.env[0]).empty());
}

// A rank that leaves (exits, often after an error of its own) shuts its
// engine down; its peers' pending ops must name it, not "some rank".
TEST_CASE("a rank that shuts down: the others' pending ops fail naming it") {
  ProcessOptions options;
  options.env = {unique_tag()};
  const ProcessResult r = run_process(job(2, {"leave", "1"}), options);
  CHECK(r.exit_code == 3);  // rank 0's: rank 1 waits until the launcher stops it
  INFO(r.out);
  CHECK(r.out.find("rank 0: error: rank 0 (") != std::string::npos);
  CHECK(count(r.out,
              "): allreduce 'grad': the engine was shut down by rank 1 (trainrun::shutdown(), which a program "
              "calls on its way out, also after an error of its own)") == 1);
  CHECK(processes_with_env(options.env[0]).empty());
}

TEST_CASE("a rank whose engine never starts: warned about, then aborted instead of hanging") {
  ProcessOptions options;
  options.env = {unique_tag(), "TRAINRUN_STALL_WARNING=0.5", "TRAINRUN_STALL_SHUTDOWN=1.5"};
  const ProcessResult r = run_process(job(2, {"stall", "1", "4000", "cold"}), options);
  INFO(r.out);
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("stall: the engine waited more than 0.5 s for the other ranks' engines") != std::string::npos);
  CHECK(r.out.find("rank 0: error after ") != std::string::npos);
  CHECK(error_seconds(r.out, 0) >= 1.45);
  CHECK(error_seconds(r.out, 0) <= 2.5);
  CHECK(r.out.find("stall: the engine waited more than 1.5 s (TRAINRUN_STALL_SHUTDOWN) for the other ranks' "
                   "engines, so it aborted the backend and failed every pending op") != std::string::npos);
  // Rank 0 is on its way out: the launcher's dump does not stop it (under
  // LeakSanitizer that made its exit code 1).
  const std::size_t note = r.err.find("): no stack: not taken: it reported the stall shutdown");
  REQUIRE(note != std::string::npos);
  CHECK(r.err.compare(r.err.rfind('\n', note) + 1, 8, "rank 0 (") == 0);
  CHECK(r.seconds < 10);
  CHECK(processes_with_env(options.env[0]).empty());
}

TEST_CASE("the timeline is Chrome-trace JSON with every phase of every tensor") {
  char path[] = "/tmp/trainrun-timeline-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  ProcessOptions options;
  options.env = {unique_tag(), std::string("TRAINRUN_TIMELINE=") + path};
  const ProcessResult r = run_process(job(2, {"steps", "3"}), options);
  CHECK(r.exit_code == 0);
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in, nullptr, false);
  std::remove(path);
  REQUIRE_MESSAGE(trace.is_array(), "not a JSON array");

  std::map<int, std::string> rows;                         // pid -> tensor
  std::map<std::string, std::vector<std::string>> phases;  // tensor -> "B:NAME", "E:NAME", "i:NAME" in order
  std::map<std::string, std::vector<std::string>> stacks;
  std::map<std::string, std::int64_t> negotiated_at;  // tensor -> ts of its first E:NEGOTIATE_*
  for (const auto& e : trace) {
    REQUIRE(e.contains("ph"));
    const std::string ph = e["ph"];
    if (ph == "M") {
      // pid 0's is the file's header (start_time_since_epoch_in_micros), no tensor's.
      if (e["name"] == "process_name" && e["args"].contains("name")) rows[e["pid"].get<int>()] = e["args"]["name"];
      continue;
    }
    const std::string tensor = rows.at(e["pid"].get<int>()), name = e["name"];
    CHECK(e["ts"].is_number_integer());
    phases[tensor].push_back(ph + ":" + name);
    if (ph == "E" && name.rfind("NEGOTIATE_", 0) == 0 && !negotiated_at.count(tensor)) {
      negotiated_at[tensor] = e["ts"].get<std::int64_t>();
    }
    if (ph == "B") stacks[tensor].push_back(name);
    if (ph == "E") {
      REQUIRE_MESSAGE(!stacks[tensor].empty(), tensor << ": E " << name << " without B");
      CHECK_MESSAGE(stacks[tensor].back() == name, tensor << ": E " << name << " closes " << stacks[tensor].back());
      stacks[tensor].pop_back();
    }
    if (ph == "B" && name == "ALLREDUCE") {
      CHECK(e["args"]["dtype"] == "float32");
      CHECK(e["args"]["shape"] == (tensor == "small.a" ? "[3]" : tensor == "small.b" ? "[5]" : "[100000]"));
    }
  }
  for (const auto& [tensor, stack] : stacks) CHECK_MESSAGE(stack.empty(), tensor << " leaves spans open");
  auto has = [&](const std::string& tensor, const std::string& what) {
    const auto& p = phases[tensor];
    return std::find(p.begin(), p.end(), what) != p.end();
  };
  for (const char* tensor : {"small.a", "small.b", "big", "gathered", "params"}) {
    CHECK_MESSAGE(has(tensor, "i:rank 0 ready"), tensor);  // the first step is negotiated in full
    CHECK_MESSAGE(has(tensor, "i:rank 1 ready"), tensor);
    CHECK_MESSAGE(has(tensor, "E:QUEUE"), tensor);
  }
  // The first step of a fused tensor, ready marks aside (ranks report in any order).
  const std::vector<std::string> fused = {"B:NEGOTIATE_ALLREDUCE",
                                          "E:NEGOTIATE_ALLREDUCE",
                                          "B:ALLREDUCE",
                                          "B:QUEUE",
                                          "E:QUEUE",
                                          "B:MEMCPY_IN_FUSION_BUFFER",
                                          "E:MEMCPY_IN_FUSION_BUFFER",
                                          "B:TCP_ALLREDUCE",
                                          "E:TCP_ALLREDUCE",
                                          "B:MEMCPY_OUT_FUSION_BUFFER",
                                          "E:MEMCPY_OUT_FUSION_BUFFER",
                                          "E:ALLREDUCE"};
  // Both small tensors are fused only when they became ready in the same
  // cycle (one E:NEGOTIATE time). A slow machine (sanitizers, load) may see
  // the first step's small.b submitted after a cycle has begun: small.a then
  // runs alone, in place, and that is what its first step must show.
  const std::vector<std::string> alone = {
      "B:NEGOTIATE_ALLREDUCE", "E:NEGOTIATE_ALLREDUCE", "B:ALLREDUCE", "B:QUEUE", "E:QUEUE",
      "B:TCP_ALLREDUCE",       "E:TCP_ALLREDUCE",       "E:ALLREDUCE"};
  REQUIRE((negotiated_at.count("small.a") && negotiated_at.count("small.b")));
  const bool same_cycle = negotiated_at["small.a"] == negotiated_at["small.b"];
  if (!same_cycle) MESSAGE("small.a and small.b were negotiated in different cycles: small.a ran alone");
  const std::vector<std::string>& first_step = same_cycle ? fused : alone;
  std::vector<std::string> a;
  for (const auto& p : phases["small.a"]) {
    if (p.rfind("i:", 0) != 0) a.push_back(p);
  }
  CHECK((a.size() >= first_step.size() && std::equal(first_step.begin(), first_step.end(), a.begin())));
  CHECK(phases["small.a"][1].rfind("i:rank ", 0) == 0);  // marks sit inside the NEGOTIATE span
  CHECK(phases["small.a"][2].rfind("i:rank ", 0) == 0);
  CHECK(std::count(a.begin(), a.end(), "B:TCP_ALLREDUCE") == 3);  // one per step, cached after the first
  CHECK(has("big", "B:TCP_ALLREDUCE"));
  CHECK_FALSE(has("big", "B:MEMCPY_IN_FUSION_BUFFER"));  // large tensors are reduced in place
  CHECK(has("gathered", "B:TCP_ALLGATHER"));
  CHECK(has("params", "B:TCP_BROADCAST"));
  CHECK(processes_with_env(options.env[0]).empty());
}

namespace {

// A timeline file: its tensors' "B" span names in order, whether it has
// CYCLE_START marks, and whether every span it begins ends in it.
struct TimelineFile {
  std::map<std::string, std::vector<std::string>> begun;
  bool cycles = false;
  bool balanced = true;
};

TimelineFile read_timeline(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in, nullptr, false);
  TimelineFile file;
  REQUIRE_MESSAGE(trace.is_array(), path << " is not a complete JSON array");
  std::map<int, std::string> rows;
  std::map<int, int> depth;
  for (const auto& e : trace) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["args"].contains("name")) rows[e["pid"].get<int>()] = e["args"]["name"];
    if (ph == "i" && e["name"] == "CYCLE_START") file.cycles = true;
    if (ph == "B") file.begun[rows[e["pid"].get<int>()]].push_back(e["name"]);
    if (ph == "B" || ph == "E")
      file.balanced = file.balanced && (depth[e["pid"].get<int>()] += ph == "B" ? 1 : -1) >= 0;
  }
  for (const auto& [pid, open] : depth) file.balanced = file.balanced && open == 0;
  return file;
}

}  // namespace

TEST_CASE("start_timeline switches files at run time, stop_timeline closes the last; each is complete") {
  char dir[] = "/tmp/trainrun-timeline-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  const std::string first = std::string(dir) + "/first.json", second = std::string(dir) + "/second.json";
  ProcessOptions options;
  options.env = {unique_tag()};
  const ProcessResult r = run_process(job(2, {"timeline", first, second}), options);
  CHECK(r.exit_code == 0);
  const TimelineFile one = read_timeline(first), two = read_timeline(second);
  std::remove(first.c_str());
  std::remove(second.c_str());
  ::rmdir(dir);
  // One step in each file: the third step ran after stop_timeline().
  for (const TimelineFile* file : {&one, &two}) {
    CHECK(file->balanced);
    CHECK(std::count(file->begun.at("big").begin(), file->begun.at("big").end(), "ALLREDUCE") == 1);
    CHECK(std::count(file->begun.at("params").begin(), file->begun.at("params").end(), "BROADCAST") == 1);
  }
  CHECK_FALSE(one.cycles);
  CHECK(two.cycles);  // start_timeline(SECOND, mark_cycles = true)
  CHECK(processes_with_env(options.env[0]).empty());
}

// Issue 37: the timeline's name in a folder everyone may write to (as /tmp),
// where another user planted a link to a file of ours, or a file of theirs.
TEST_CASE("a timeline name another user planted a link or a file at: refused in one line, nothing overwritten") {
  if (::geteuid() != 0 || std::system("command -v runuser >/dev/null") != 0) {
    MESSAGE("skipped: planting files as a second user needs root and runuser");
    return;
  }
  char dir[] = "/tmp/trainrun-timeline-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  ::chmod(dir, 01777);
  const std::string victim = std::string(dir) + "/victim", link = std::string(dir) + "/link.json",
                    theirs = std::string(dir) + "/theirs.json";
  std::ofstream(victim) << "precious\n";
  REQUIRE(std::system(
              ("runuser -u nobody -- /bin/sh -c 'ln -s " + victim + " " + link + " && echo theirs > " + theirs + "'")
                  .c_str()) == 0);
  const std::pair<std::string, std::string> cases[] = {
      {link, "timeline: cannot write '" + link + "': it is a symbolic link: refusing to follow it"},
      {theirs, "timeline: cannot write '" + theirs +
                   "': it belongs to uid 65534, not to this user (uid 0): refusing to overwrite it"},
  };
  for (const auto& [path, message] : cases) {
    ProcessOptions options;
    options.env = {unique_tag(), "TRAINRUN_TIMELINE=" + path};
    const ProcessResult r = run_process(job(2, {"steps", "3"}), options);
    INFO(r.out, r.err);
    CHECK(r.exit_code != 0);
    CHECK((r.out + r.err).find(message) != std::string::npos);
    CHECK(processes_with_env(options.env[0]).empty());
  }
  std::ifstream in(victim), other(theirs);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "precious\n");
  CHECK(std::string(std::istreambuf_iterator<char>(other), {}) == "theirs\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("ranks out of step: the op one rank never submits fails after the stall warning time, then all meet") {
  // Rank 0 skips "skipped.op" and waits in a barrier, as after an exception
  // on that rank only; this used to hang for good.
  ProcessOptions options;
  options.env = {unique_tag(), "TRAINRUN_STALL_WARNING=1"};
  options.timeout = std::chrono::seconds(120);
  const ProcessResult r = run_process(job(3, {"outofstep", "0"}), options);
  INFO(r.out);
  INFO(r.err);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  const std::string why =
      "): allreduce 'skipped.op': the ranks are out of step: every rank waited 1 s (TRAINRUN_STALL_WARNING) for ops "
      "that cannot complete, and rank 0 has not submitted this one (rank 0 waits in barrier(): did an error on some "
      "ranks skip ops the others made?)";
  CHECK(count(r.out, why) == 2);
  for (int rank : {1, 2}) {
    CHECK(error_seconds(r.out, rank) >= 0.95);
    CHECK(error_seconds(r.out, rank) <= 30);
  }
  CHECK(count(r.out, "barrier passed") == 3);
  CHECK(r.err.find("stall: ") != std::string::npos);  // rank 0 warned first, naming the op
  CHECK(processes_with_env(options.env[0]).empty());
}

TEST_CASE("unusable engine settings fail with the variable and value, and nothing hangs") {
  for (const char* setting : {"TRAINRUN_CYCLE_TIME_MS=fast", "TRAINRUN_TIMELINE=/nonexistent/dir/t.json"}) {
    ProcessOptions options;
    options.env = {unique_tag(), setting};
    options.timeout = std::chrono::seconds(60);
    const ProcessResult r = run_process(job(2, {"steps", "1"}), options);
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 1);
    const std::string expected = std::string(setting).find("CYCLE") != std::string::npos
                                     ? "allreduce_async: TRAINRUN_CYCLE_TIME_MS='fast' is not a number"
                                     : "allreduce_async: timeline: cannot write '/nonexistent/dir/t.json': No such "
                                       "file or directory";
    // Every rank fails the same way; the first to exit stops the others,
    // so which rank's line comes through is a race.
    CHECK_MESSAGE(r.err.find("engine_program: rank ") != std::string::npos, r.err);
    CHECK_MESSAGE(r.err.find(expected) != std::string::npos, r.err);
    CHECK(processes_with_env(options.env[0]).empty());
  }
}
