// The worker's ResponseParser fed a byte stream in the chunks the input's
// first bytes choose: it never reads out of bounds, and the responses it
// yields do not depend on where the stream was split.
#include <string>

#include "rendezvous/http_message.h"
#include "tests/fuzz/fuzz_input.h"

using namespace trainrun::rendezvous;

namespace {

struct Outcome {
  std::vector<std::pair<int, std::string>> responses;  // status, body
  bool error = false;
};

// Small limits so that the oversize paths are reachable with small inputs.
constexpr std::size_t kMaxHeader = 512, kMaxBody = 1024;

template <typename Chunks>
Outcome parse(Chunks&& for_each_chunk) {
  Outcome out;
  ResponseParser parser(kMaxHeader, kMaxBody);
  auto drain = [&](ResponseParser::State state) {
    // A finished response may leave the next one buffered: take, then feed nothing.
    while (state == ResponseParser::State::Done) {
      HttpResponse r = parser.take();
      FUZZ_CHECK(r.status >= 100 && r.status <= 599);
      FUZZ_CHECK(r.body.size() <= kMaxBody);
      out.responses.emplace_back(r.status, std::move(r.body));
      state = parser.feed({});
    }
    if (state == ResponseParser::State::Error) {
      FUZZ_CHECK(!parser.error().empty());
      out.error = true;
      return false;
    }
    return true;
  };
  for_each_chunk([&](std::string_view chunk) { return drain(parser.feed(chunk)); });
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto input = trainrun::fuzz::chunked(data, size);
  const Outcome split = parse([&](auto feed) { input.for_each_chunk(feed); });
  const Outcome whole = parse([&](auto feed) {
    if (!input.payload.empty()) feed(input.payload);
  });
  FUZZ_CHECK(split.error == whole.error);
  FUZZ_CHECK(split.responses == whole.responses);
  return 0;
}
