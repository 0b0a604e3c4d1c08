#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>

#include "cli/agent/agent_protocol.h"

using namespace trainrun::cli;

TEST_CASE("frames round-trip, split at any byte") {
  std::string wire;
  append_frame(wire, FrameType::Output, 7, 2, std::string("a\0b\nc", 5));
  append_frame(wire, FrameType::Exited, 3, 0, "256");
  append_frame(wire, FrameType::Hello, 0, 0, "");
  for (std::size_t split = 0; split <= wire.size(); ++split) {
    FrameReader reader;
    std::vector<Frame> frames;
    reader.feed(wire.substr(0, split));
    while (auto f = reader.next()) frames.push_back(*f);
    reader.feed(wire.substr(split));
    while (auto f = reader.next()) frames.push_back(*f);
    REQUIRE(frames.size() == 3);
    CHECK(frames[0].type == FrameType::Output);
    CHECK(frames[0].rank == 7);
    CHECK(frames[0].stream == 2);
    CHECK(frames[0].payload == std::string("a\0b\nc", 5));
    CHECK(frames[1].payload == "256");
    CHECK(frames[2].type == FrameType::Hello);
    CHECK(reader.buffered() == 0);
  }
}

TEST_CASE("missing() says how far a reader may read without taking a byte of the next frame") {
  // A tree of agents reads a relay's answer this way, then hands the link on.
  std::string wire;
  append_frame(wire, FrameType::RelayReady, 0, 0, "report");
  append_frame(wire, FrameType::Pong, 0, 0, "");
  FrameReader reader;
  std::size_t taken = 0;
  while (reader.missing() > 0) {
    const std::size_t step = std::min<std::size_t>(5, reader.missing());
    reader.feed(wire.substr(taken, step));
    taken += step;
  }
  CHECK(taken == kFrameHeaderBytes + 6);
  const std::optional<Frame> frame = reader.next();
  REQUIRE(frame);
  CHECK(frame->type == FrameType::RelayReady);
  CHECK(frame->payload == "report");
  CHECK(reader.missing() == kFrameHeaderBytes);
}

TEST_CASE("a frame carries another whole, for a relay's child") {
  std::string inner;
  append_frame(inner, FrameType::Output, 5, 1, "from h4\n");
  std::string wire;
  append_frame(wire, FrameType::FromChild, 1, 0, inner);
  FrameReader outer;
  outer.feed(wire);
  const std::optional<Frame> carrier = outer.next();
  REQUIRE(carrier);
  CHECK(carrier->type == FrameType::FromChild);
  CHECK(carrier->rank == 1);
  FrameReader unwrap;
  unwrap.feed(carrier->payload);
  const std::optional<Frame> frame = unwrap.next();
  REQUIRE(frame);
  CHECK(frame->type == FrameType::Output);
  CHECK(frame->rank == 5);
  CHECK(frame->payload == "from h4\n");
}

TEST_CASE("malformed headers are errors, never guesses") {
  FrameReader unknown;
  unknown.feed(std::string("\x63\0\0\0\0\0\0\0\0\0\0\0", 12));
  CHECK_THROWS_AS(unknown.next(), std::runtime_error);
  FrameReader huge;
  huge.feed(std::string("\x16\0\0\0\0\0\0\0\xff\xff\xff\x7f", 12));
  CHECK_THROWS_AS(huge.next(), std::runtime_error);
}

TEST_CASE("a job description round-trips, with arguments of any bytes") {
  JobSpec job;
  job.cwd = "/work/dir with space";
  job.grace_ms = 1500;
  job.stdin_rank = 0;
  job.ranks.push_back({0,
                       {"./train", "a b", "$(rm -rf /);", "caf\xc3\xa9", std::string("nul\0in", 6)},
                       {"TRAINRUN_RANK=0", "TRAINRUN_SECRET=abc"}});
  job.ranks.push_back({5, {"./train"}, {}});
  const auto decoded = decode_job(encode_job(job));
  REQUIRE(decoded);
  CHECK(decoded->cwd == job.cwd);
  CHECK(decoded->grace_ms == 1500);
  CHECK(decoded->stdin_rank == 0);
  REQUIRE(decoded->ranks.size() == 2);
  CHECK(decoded->ranks[0].argv == job.ranks[0].argv);
  CHECK(decoded->ranks[0].env == job.ranks[0].env);
  CHECK(decoded->ranks[1].rank == 5);
  job.stdin_rank = -1;
  CHECK(decode_job(encode_job(job))->stdin_rank == -1);
}

TEST_CASE("truncated or padded job descriptions are refused") {
  JobSpec job;
  job.ranks.push_back({0, {"p"}, {"A=1"}});
  const std::string bytes = encode_job(job);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) CHECK_FALSE(decode_job(bytes.substr(0, cut)));
  CHECK_FALSE(decode_job(bytes + "x"));
  JobSpec empty_argv;
  empty_argv.ranks.push_back({0, {}, {}});
  CHECK_FALSE(decode_job(encode_job(empty_argv)));
}

TEST_CASE("a host's job of any size goes in Job frames of about kJobFrameBytes, the last one marked") {
  JobSpec job;
  job.cwd = "/w";
  job.grace_ms = 7;
  job.stdin_rank = 0;
  // 100000 small ranks, then a few ranks larger than a frame on their own.
  for (std::uint32_t r = 0; r < 100000; ++r) job.ranks.push_back({r, {"true"}, {"TRAINRUN_RANK=" + std::to_string(r)}});
  for (std::uint32_t r = 100000; r < 100003; ++r) {
    job.ranks.push_back({r, {"true"}, {"BIG=" + std::string(kJobFrameBytes + 10, 'x')}});
  }
  std::string wire;
  append_job_frames(wire, job);
  FrameReader reader;
  reader.feed(wire);
  std::vector<RankSpec> ranks;
  int frames = 0, last = 0;
  while (auto frame = reader.next()) {
    ++frames;
    REQUIRE(frame->type == FrameType::Job);
    auto part = decode_job(frame->payload);
    REQUIRE(part);
    CHECK((frame->payload.size() <= kJobFrameBytes + 64 || part->ranks.size() == 1));
    CHECK(part->cwd == "/w");
    CHECK(part->grace_ms == 7);
    CHECK(part->stdin_rank == 0);
    CHECK(!part->ranks.empty());
    for (auto& rank : part->ranks) ranks.push_back(std::move(rank));
    if (frame->stream == 0) ++last;
  }
  CHECK(reader.buffered() == 0);
  CHECK(last == 1);
  CHECK(frames > 3);
  REQUIRE(ranks.size() == job.ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].rank != job.ranks[i].rank || ranks[i].env != job.ranks[i].env) FAIL("rank " << i << " differs");
  }
  // A small job stays one frame.
  JobSpec small;
  small.ranks.push_back({0, {"p"}, {"A=1"}});
  std::string one;
  append_job_frames(one, small);
  CHECK(one == encode_frame(Frame{FrameType::Job, 0, 0, encode_job(small)}));
}

TEST_CASE("the Stacks request's ranks to leave alone round-trip; what is not a rank is skipped") {
  CHECK(encode_stack_skips({}).empty());
  CHECK(encode_stack_skips({0, 12, 3}) == "0 12 3");
  CHECK(decode_stack_skips("0 12 3") == std::vector<std::uint32_t>{0, 12, 3});
  CHECK(decode_stack_skips("").empty());
  CHECK(decode_stack_skips("x 1  -2 3y 99999999999 4") == std::vector<std::uint32_t>{1, 4});
}
