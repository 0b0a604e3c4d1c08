#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>

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
  CHECK(upper_case("gloo_allreduce") == "GLOO_ALLREDUCE");
}

namespace {

nlohmann::json written(const std::function<void(Timeline&)>& record) {
  char path[] = "/tmp/trainrun-timeline-unit-XXXXXX";
  const int fd = ::mkstemp(path);
  ::close(fd);
  {
    Timeline timeline(path);
    record(timeline);
  }
  std::ifstream in(path);
  auto json = nlohmann::json::parse(in, nullptr, false);
  std::remove(path);
  return json;
}

}  // namespace

TEST_CASE("the file is a complete JSON array once the timeline is gone, even an empty one") {
  CHECK(written([](Timeline&) {}) == nlohmann::json::array());
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
    if (e["name"] == "process_name") rows[e["args"]["name"]] = e["pid"];
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
    Timeline timeline("/nonexistent/dir/t.json");
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
    Timeline timeline("/dev/full", [&](const std::string& error) { failures.push_back(error); });
    for (int i = 0; i < 2000; ++i) {  // more than stdio buffers: the writer thread meets the error
      timeline.begin("grad." + std::to_string(i), "ALLREDUCE");
      timeline.end("grad." + std::to_string(i), "ALLREDUCE");
    }
  }
  REQUIRE(failures.size() == 1);
  CHECK(failures[0] == "No space left on device (ENOSPC)");
}
