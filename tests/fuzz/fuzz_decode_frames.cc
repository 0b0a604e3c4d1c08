// decode_frames on a multi-key answer: the first two bytes are the number
// of keys asked for. Whatever decodes re-encodes to the same body.
#include "rendezvous/kv_request.h"
#include "tests/fuzz/fuzz_input.h"

using namespace trainrun::rendezvous;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t count = std::size_t{data[0]} | std::size_t{data[1]} << 8;
  const std::string_view body = trainrun::fuzz::as_text(data + 2, size - 2);
  const auto values = decode_frames(body, count);
  if (values) {
    FUZZ_CHECK(values->size() == count);
    FUZZ_CHECK(encode_frames(*values) == body);
  }
  return 0;
}
