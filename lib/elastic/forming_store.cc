#include "lib/elastic/forming_store.h"

#include <algorithm>
#include <string>

#include "contract/decimal.h"
#include "contract/elastic_protocol.h"
#include "trainrun/error.h"

namespace trainrun::detail {

namespace ep = elastic_protocol;
using std::chrono::milliseconds;

FormingStore::FormingStore(std::shared_ptr<rendezvous::Store> inner, int generation, milliseconds slice)
    : inner_(std::move(inner)), generation_(generation), slice_(slice) {}

void FormingStore::fail_if_superseded() {
  try {
    inner_->get(ep::kScope, ep::assignment_key(generation_ + 1), milliseconds(1));
  } catch (const Error& e) {
    if (e.code() == Error::Code::Timeout) return;  // not published: keep waiting
    throw;
  }
  throw Error(Error::Code::MembershipChanged, "elastic generation " + std::to_string(generation_ + 1) +
                                                  " was published while generation " + std::to_string(generation_) +
                                                  " formed");
}

// The last slice's Timeout names the keys; it is told the whole wait.
template <typename Wait>
auto FormingStore::sliced(milliseconds timeout, Wait&& wait) -> decltype(wait(timeout)) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    try {
      return wait(std::clamp(left, milliseconds(0), slice_));
    } catch (const Error& e) {
      if (e.code() != Error::Code::Timeout) throw;
      if (Clock::now() >= deadline) {
        throw Error(Error::Code::Timeout,
                    std::string(e.what()) + " (" + shortest_decimal(timeout.count() / 1000.0) + " s in all)");
      }
    }
    fail_if_superseded();
  }
}

void FormingStore::set(std::string_view scope, std::string_view key, std::string_view value) {
  inner_->set(scope, key, value);
}

std::string FormingStore::get(std::string_view scope, std::string_view key, milliseconds timeout) {
  return sliced(timeout, [&](milliseconds t) { return inner_->get(scope, key, t); });
}

std::vector<std::string> FormingStore::get_range(std::string_view scope, std::string_view prefix, std::uint64_t first,
                                                 std::uint64_t count, milliseconds timeout) {
  return sliced(timeout, [&](milliseconds t) { return inner_->get_range(scope, prefix, first, count, t); });
}

std::int64_t FormingStore::add(std::string_view scope, std::string_view key, std::int64_t delta) {
  return inner_->add(scope, key, delta);
}

}  // namespace trainrun::detail
