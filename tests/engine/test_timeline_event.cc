#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "lib/engine/timeline_event.h"

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
  const auto parsed = nlohmann::json::parse(to_json({TimelineEvent::Phase::Metadata, "process_name", 0, 1, {{"name", nasty}}}));
  CHECK(parsed["args"]["name"] == nasty);
  CHECK(json_escape("\x1f") == "\\u001f");
  CHECK(upper_case("gloo_allreduce") == "GLOO_ALLREDUCE");
}
