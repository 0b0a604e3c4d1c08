// The launcher<->agent byte stream: FrameReader fed in the chunks the
// input's first bytes choose yields the same frames as when fed at once,
// every frame re-encodes to itself, job payloads that decode re-encode
// to the same bytes, and a Stacks payload's ranks survive a round trip.
#include <stdexcept>

#include "cli/agent/agent_protocol.h"
#include "tests/fuzz/fuzz_input.h"

using namespace trainrun::cli;

namespace {

struct Outcome {
  std::vector<std::string> frames;  // re-encoded
  bool error = false;
};

bool drain(FrameReader& reader, Outcome& out) {
  try {
    while (auto frame = reader.next()) {
      FUZZ_CHECK(frame->payload.size() <= kMaxFramePayload);
      out.frames.push_back(encode_frame(*frame));
      FrameReader again;
      again.feed(out.frames.back());
      const auto copy = again.next();
      FUZZ_CHECK(copy && copy->type == frame->type && copy->rank == frame->rank && copy->stream == frame->stream &&
                 copy->payload == frame->payload);
      FUZZ_CHECK(again.buffered() == 0);
      if (frame->type == FrameType::Job) {
        if (const auto job = decode_job(frame->payload)) {
          FUZZ_CHECK(encode_job(*job) == frame->payload);
          for (const RankSpec& rank : job->ranks) FUZZ_CHECK(!rank.argv.empty());
        }
      }
      if (frame->type == FrameType::Stacks) {  // what decodes re-decodes the same
        const std::vector<std::uint32_t> skip = decode_stack_skips(frame->payload);
        FUZZ_CHECK(skip.size() <= frame->payload.size() / 2 + 1);
        std::vector<int> as_int;
        for (std::uint32_t rank : skip) {
          if (rank <= 0x7fffffffu) as_int.push_back(static_cast<int>(rank));
        }
        if (as_int.size() == skip.size()) FUZZ_CHECK(decode_stack_skips(encode_stack_skips(as_int)) == skip);
      }
    }
  } catch (const std::runtime_error&) {
    out.error = true;
    return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto input = trainrun::fuzz::chunked(data, size);
  Outcome split, whole;
  FrameReader split_reader, whole_reader;
  input.for_each_chunk([&](std::string_view chunk) {
    split_reader.feed(chunk);
    return drain(split_reader, split);
  });
  whole_reader.feed(input.payload);
  drain(whole_reader, whole);
  FUZZ_CHECK(split.error == whole.error);
  FUZZ_CHECK(split.frames == whole.frames);
  if (!whole.error) FUZZ_CHECK(split_reader.buffered() == whole_reader.buffered());
  return 0;
}
