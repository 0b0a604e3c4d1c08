// The rendezvous store as backends see it: a blocking key-value store shared
// by all ranks of one job, with waits bounded by a timeout. Implemented by
// HttpStore (the launcher's server) and by tests. Implementations document
// their own thread safety; values are opaque bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainrun::rendezvous {

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(std::string_view scope, std::string_view key, std::string_view value) = 0;
  // Waits until the key exists; throws Error(Timeout) naming it after `timeout`.
  virtual std::string get(std::string_view scope, std::string_view key, std::chrono::milliseconds timeout) = 0;
  // Keys prefix{first} .. prefix{first+count-1}, fetched and waited for as one
  // request, so an N-rank exchange costs N requests, not N^2 (HttpStore);
  // a store without such a read gets them one by one.
  virtual std::vector<std::string> get_range(std::string_view scope, std::string_view prefix, std::uint64_t first,
                                             std::uint64_t count, std::chrono::milliseconds timeout) {
    std::vector<std::string> values;
    for (std::uint64_t i = first; i < first + count; ++i) {
      values.push_back(get(scope, std::string(prefix) + std::to_string(i), timeout));
    }
    return values;
  }
  virtual std::int64_t add(std::string_view scope, std::string_view key, std::int64_t delta) = 0;
  // The caller expects no request for a while (a rank's init is done): a
  // store that keeps a connection open closes it, and the next request
  // opens one. The server then holds no descriptor for an idle rank.
  virtual void release_connection() {}
};

}  // namespace trainrun::rendezvous
