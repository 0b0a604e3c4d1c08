// The records ranks put in the store's scope "job" (contract/job_records.h):
// what init writes, the launcher's report and a tcp rank read back.
#include <doctest/doctest.h>

#include "contract/job_records.h"

using namespace trainrun::detail;

TEST_CASE("a rank record round-trips and its text is the one the launcher has always read") {
  const std::string text = encode_rank_record({"node-3", 4242, "tcp"});
  CHECK(text == "node-3 4242 tcp");
  const auto record = decode_rank_record(text);
  REQUIRE(record);
  CHECK(record->host == "node-3");
  CHECK(record->pid == 4242);
  CHECK(record->backend == "tcp");
}

TEST_CASE("a malformed rank record decodes to nothing") {
  for (const char* text : {"", "node", "node 12", "node x tcp", "node 12 tcp extra", " 12 tcp", "node 12x tcp"}) {
    CAPTURE(text);
    CHECK_FALSE(decode_rank_record(text));
  }
}

TEST_CASE("a timeline error splits at its first newline") {
  CHECK(encode_timeline_error({"/tmp/t.json", "No space left on device"}) == "/tmp/t.json\nNo space left on device");
  const TimelineError failure = decode_timeline_error("/tmp/t.json\nline 1\nline 2");
  CHECK(failure.path == "/tmp/t.json");
  CHECK(failure.error == "line 1\nline 2");
  CHECK(decode_timeline_error("/only/a/path").error.empty());
}
