// FormingStore: the rendezvous store as an elastic generation's backend sees
// it. Its waits are cut into slices, and between slices it asks whether the
// launcher already published the next generation: if so, the one this
// process joined may never form (it can list a member that died meanwhile),
// so the wait fails at once with Error(MembershipChanged) instead of after
// the start timeout, and elastic::run moves on to the newer generation.
// Same thread safety as the store it wraps (HttpStore: one thread).
#pragma once

#include <chrono>
#include <memory>

#include "rendezvous/store.h"

namespace trainrun::detail {

class FormingStore : public rendezvous::Store {
 public:
  static constexpr std::chrono::milliseconds kSlice{500};

  FormingStore(std::shared_ptr<rendezvous::Store> inner, int generation, std::chrono::milliseconds slice = kSlice);

  void set(std::string_view scope, std::string_view key, std::string_view value) override;
  std::string get(std::string_view scope, std::string_view key, std::chrono::milliseconds timeout) override;
  std::vector<std::string> get_range(std::string_view scope, std::string_view prefix, std::uint64_t first,
                                     std::uint64_t count, std::chrono::milliseconds timeout) override;
  std::int64_t add(std::string_view scope, std::string_view key, std::int64_t delta) override;
  void release_connection() override { inner_->release_connection(); }
  // Throws Error(MembershipChanged) when the next generation is published
  // (for the backend's waits outside the store: BackendContext::forming_check).
  void fail_if_superseded();

 private:
  template <typename Wait>
  auto sliced(std::chrono::milliseconds timeout, Wait&& wait) -> decltype(wait(timeout));

  const std::shared_ptr<rendezvous::Store> inner_;
  const int generation_;
  const std::chrono::milliseconds slice_;
};

}  // namespace trainrun::detail
