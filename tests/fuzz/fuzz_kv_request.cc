// parse_kv_request on "METHOD\nTARGET": an accepted request only names
// valid keys, within the protocol's limits.
#include "rendezvous/kv_request.h"
#include "contract/limits.h"
#include "tests/fuzz/fuzz_input.h"

using namespace trainrun::rendezvous;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest = trainrun::fuzz::as_text(data, size);
  const std::string_view method = trainrun::fuzz::next_field(rest);
  const KvParse parsed = parse_kv_request(method, rest);
  if (!parsed.request) {
    FUZZ_CHECK(parsed.status == 400 || parsed.status == 404 || parsed.status == 405);
    FUZZ_CHECK(!parsed.reason.empty());
    return 0;
  }
  const KvRequest& r = *parsed.request;
  FUZZ_CHECK(r.wait.count() >= 0 && r.wait <= trainrun::contract::kMaxWait);
  FUZZ_CHECK(r.keys.size() <= trainrun::contract::kMaxKeysPerGet);
  FUZZ_CHECK((r.op == KvOp::Health) == r.keys.empty());
  for (const std::string& key : r.keys) {
    const std::size_t slash = key.find('/');
    FUZZ_CHECK(slash != std::string::npos);
    FUZZ_CHECK(is_valid_name(std::string_view(key).substr(0, slash)));
    FUZZ_CHECK(is_valid_name(std::string_view(key).substr(slash + 1)));
  }
  // What the client builds for a single key parses back to the same key.
  if (r.op == KvOp::Put || r.op == KvOp::Get) {
    const std::string_view key = r.keys.front();
    const std::size_t slash = key.find('/');
    const auto wait = r.op == KvOp::Get ? r.wait : std::chrono::milliseconds(0);
    const KvParse again = parse_kv_request(method, kv_get_target(key.substr(0, slash), key.substr(slash + 1), wait));
    FUZZ_CHECK(again.request && again.request->keys == r.keys && again.request->op == r.op);
  }
  return 0;
}
