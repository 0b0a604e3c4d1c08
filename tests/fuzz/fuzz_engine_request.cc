// The engine's negotiation messages (lists of Request): garbage is refused
// with trainrun::Error, never a crash; what decodes re-encodes to the same
// bytes (the encoding round-trips), and everything the coordinator then
// computes from a request (counts, labels, disagreements) is defined.
#include "lib/engine/request.h"
#include "tests/fuzz/fuzz_input.h"
#include "trainrun/error.h"

using namespace trainrun::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = trainrun::fuzz::as_text(data, size);
  std::vector<Request> requests;
  try {
    requests = decode_requests(bytes, 3);
  } catch (const trainrun::Error& e) {
    FUZZ_CHECK(e.code() == trainrun::Error::Code::Internal);
    FUZZ_CHECK(std::string_view(e.what()).find("rank 3") != std::string_view::npos);
    return 0;
  }
  FUZZ_CHECK(encode_requests(requests) == bytes);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    (void)r.bytes();
    FUZZ_CHECK(!op_label(r).empty());
    FUZZ_CHECK(shape_text(r.shape).front() == '[');
    const Request& other = requests[(i + 1) % requests.size()];
    const auto differ = disagreement(r, 0, other, 1);
    if (differ) FUZZ_CHECK(!differ->empty());
    // A request agrees with itself, except with a NaN scale or as an
    // allgather/alltoall of a scalar (shape []), which engine_api.cc refuses
    // before anything is sent: a peer that sends one fails the op as a mismatch.
    const bool self_mismatch_ok =
        r.prescale != r.prescale || r.postscale != r.postscale || (r.first_dim_varies() && r.shape.empty());
    FUZZ_CHECK(!disagreement(r, 0, r, 1) || self_mismatch_ok);
  }
  return 0;
}
