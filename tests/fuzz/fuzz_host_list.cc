// -H and --hostfile text: every accepted host is one the launcher can use.
#include "cli/plan/host_list.h"
#include "tests/fuzz/fuzz_input.h"

using namespace trainrun::cli;

namespace {

bool usable_name(const std::string& name) {
  if (name.empty() || name.front() == '-') return false;
  return std::none_of(name.begin(), name.end(), [](unsigned char c) { return c <= ' ' || c == 0x7f; });
}

void check(const HostListResult& r) {
  if (!r.ok()) return;
  FUZZ_CHECK(!r.hosts.empty());
  for (const HostSlots& h : r.hosts) {
    FUZZ_CHECK(usable_name(h.host));
    FUZZ_CHECK(h.user.empty() || usable_name(h.user));
    FUZZ_CHECK(h.slots >= 1);
    FUZZ_CHECK(!display_name(h).empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = trainrun::fuzz::as_text(data, size);
  check(parse_host_option(text));
  check(parse_hostfile(text, "hosts"));
  return 0;
}
