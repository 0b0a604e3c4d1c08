#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lib/engine/timeline.h"
#include "lib/engine/timeline_event.h"
#include "trainrun/error.h"

using namespace trainrun::detail;

TEST_CASE("events are Chrome-trace JSON objects") {
  TimelineEvent begin{TimelineEvent::Phase::Begin, "ALLREDUCE", 1500, 3, {{"dtype", "float32"}, {"shape", "[2,3]"}}};
  CHECK(to_json(begin) ==
        R"({"name":"ALLREDUCE","ph":"B","ts":1500,"pid":3,"tid":0,"args":{"dtype":"float32","shape":"[2,3]"}})");
  const auto mark = nlohmann::json::parse(to_json({TimelineEvent::Phase::Instant, "rank 1 ready", 7, 2, {}}));
  CHECK(mark["ph"] == "i");
  CHECK(mark["s"] == "p");
  CHECK_FALSE(mark.contains("args"));
}

TEST_CASE("any tensor name stays valid JSON") {
  const std::string nasty = std::string("a\"b\\c\nd\te") + '\x01' + "é";
  const auto parsed =
      nlohmann::json::parse(to_json({TimelineEvent::Phase::Metadata, "process_name", 0, 1, {{"name", nasty}}}));
  CHECK(parsed["args"]["name"] == nasty);
  CHECK(json_escape("\x1f") == "\\u001f");
  CHECK(upper_case("tcp_allreduce") == "TCP_ALLREDUCE");
}

namespace {

// A scratch file, removed at the end of the test.
struct TempFile {
  TempFile() {
    const int fd = ::mkstemp(path);
    ::close(fd);
  }
  ~TempFile() { std::remove(path); }
  nlohmann::json json() const {
    std::ifstream in(path);
    return nlohmann::json::parse(in, nullptr, false);
  }
  char path[40] = "/tmp/trainrun-timeline-unit-XXXXXX";
};

nlohmann::json written(const std::function<void(Timeline&)>& record) {
  TempFile file;
  {
    Timeline timeline;
    timeline.start(file.path);
    record(timeline);
  }
  return file.json();
}

// "B:NAME" / "E:" / "i:NAME" of one tensor's row, in order.
std::vector<std::string> phases_of(const nlohmann::json& trace, const std::string& tensor) {
  int pid = -1;
  std::vector<std::string> phases;
  for (const auto& e : trace) {
    if (e["ph"] == "M") {
      if (e["name"] == "process_name" && e["args"].value("name", "") == tensor) pid = e["pid"];
    } else if (e["pid"] == pid) {
      phases.push_back(e["ph"].get<std::string>() + ":" + (e["ph"] == "E" ? "" : e["name"].get<std::string>()));
    }
  }
  return phases;
}

}  // namespace

TEST_CASE("the file is a complete JSON array once the timeline is gone, even an empty one") {
  CHECK(written([](Timeline&) {}) == nlohmann::json::array());
}

TEST_CASE("a file opens with Horovod's start_time_since_epoch_in_micros, the wall-clock time of ts 0") {
  auto wall_us = [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const auto before = wall_us();
  const auto trace = written([](Timeline& t) { t.mark("x", "rank 0 ready"); });
  const auto after = wall_us();
  REQUIRE(trace.is_array());
  REQUIRE(trace.size() >= 2);
  const auto start = trace[0]["args"]["start_time_since_epoch_in_micros"];
  REQUIRE(start.is_number_integer());
  CHECK(start.get<std::int64_t>() >= before - 1000);  // clocks read a little apart
  CHECK(start.get<std::int64_t>() <= after + 1000);
}

TEST_CASE("one row per tensor; numbered engine names share a row") {
  const auto trace = written([](Timeline& t) {
    t.begin("fc.weight", "ALLREDUCE", {{"dtype", "float32"}});
    t.end("fc.weight", "ALLREDUCE");
    t.mark("#core.1", "rank 0 ready");
    t.mark("#core.2", "rank 1 ready");
    t.mark("#group.fc.bias", "rank 0 ready");
  });
  std::map<std::string, int> rows;
  int events = 0;
  for (const auto& e : trace) {
    if (e["name"] == "process_name" && e["args"].contains("name")) rows[e["args"]["name"]] = e["pid"];
    else if (e["ph"] != "M") ++events;
  }
  CHECK(rows.size() == 3);
  CHECK(rows.count("#core") == 1);
  CHECK(rows.count("#group.fc.bias") == 1);
  CHECK(events == 5);
  CHECK(trace.back()["pid"] == rows["#group.fc.bias"]);
}

TEST_CASE("a path that cannot be written is an Io error naming it") {
  try {
    Timeline timeline;
    timeline.start("/nonexistent/dir/t.json");
    FAIL("opened");
  } catch (const trainrun::Error& e) {
    CHECK(e.code() == trainrun::Error::Code::Io);
    CHECK(std::string(e.what()) ==
          "timeline: cannot write '/nonexistent/dir/t.json': No such file or directory (ENOENT)");
  }
}

TEST_CASE("a failed write (/dev/full) is reported once, with the error, and later events are dropped") {
  if (::access("/dev/full", W_OK) != 0) {
    MESSAGE("skipped: no writable /dev/full");
    return;
  }
  std::vector<std::string> failures;
  {
    Timeline timeline(
        [&](const std::string& path, const std::string& error) { failures.push_back(path + ": " + error); });
    timeline.start("/dev/full");
    for (int i = 0; i < 2000; ++i) {  // more than stdio buffers: the writer thread meets the error
      timeline.begin("grad." + std::to_string(i), "ALLREDUCE");
      timeline.end("grad." + std::to_string(i), "ALLREDUCE");
    }
  }
  REQUIRE(failures.size() == 1);
  CHECK(failures[0] == "/dev/full: No space left on device (ENOSPC)");
}

TEST_CASE("nothing is written before start; start, switch and stop at run time leave complete files") {
  TempFile first, second;
  Timeline t;
  CHECK_FALSE(t.active());
  t.begin("early", "ALLREDUCE");  // before start: dropped
  t.start(first.path);
  CHECK(t.active());
  t.begin("grad", "ALLREDUCE");
  t.begin("grad", "QUEUE");
  t.start(second.path);  // the first file is closed, complete, before start returns
  const auto one = first.json();
  REQUIRE(one.is_array());
  // Spans still open end with their file.
  CHECK(phases_of(one, "grad") == std::vector<std::string>{"B:ALLREDUCE", "B:QUEUE", "E:", "E:"});
  CHECK(phases_of(one, "early").empty());
  t.end("grad", "QUEUE");  // begun in the first file: dropped from the second
  t.end("grad", "ALLREDUCE");
  t.begin("bias", "BROADCAST");
  t.end("bias", "BROADCAST");
  t.stop();  // closed, complete, before stop returns
  CHECK_FALSE(t.active());
  const auto two = second.json();
  REQUIRE(two.is_array());
  CHECK(phases_of(two, "grad").empty());
  CHECK(phases_of(two, "bias") == std::vector<std::string>{"B:BROADCAST", "E:"});
  t.begin("late", "ALLREDUCE");  // after stop: dropped
  t.stop();                      // stopping a stopped timeline does nothing
  CHECK(second.json() == two);
}

TEST_CASE("start on the path being written keeps the file and changes only mark_cycles") {
  TempFile file;
  Timeline t;
  t.start(file.path);
  t.mark("grad", "rank 0 ready");
  t.start(file.path, true);
  CHECK(t.marking_cycles());
  t.mark_cycle();
  t.stop();
  CHECK_FALSE(t.marking_cycles());
  const auto trace = file.json();
  REQUIRE(trace.is_array());
  CHECK(phases_of(trace, "grad") == std::vector<std::string>{"i:rank 0 ready"});
  // CYCLE_START is drawn across the whole trace, as Horovod's.
  CHECK(trace.back()["name"] == "CYCLE_START");
  CHECK(trace.back()["s"] == "g");
}

TEST_CASE("a start that cannot open its file changes nothing") {
  TempFile file;
  Timeline t;
  t.start(file.path);
  CHECK_THROWS_AS(t.start("/nonexistent/dir/t.json"), trainrun::Error);
  CHECK(t.active());
  t.mark("grad", "rank 0 ready");
  t.stop();
  CHECK(phases_of(file.json(), "grad") == std::vector<std::string>{"i:rank 0 ready"});
}
