// An in-memory rendezvous Store for unit tests: get() waits for the key like
// the real server's long-poll, and fails with Error(Timeout) like HttpStore.
// Thread-safe (a test thread publishes while the library waits).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "rendezvous/store.h"
#include "trainrun/error.h"

namespace trainrun::testing {

class MemoryStore : public rendezvous::Store {
 public:
  void set(std::string_view scope, std::string_view key, std::string_view value) override {
    {
      std::lock_guard lock(mutex_);
      values_[path(scope, key)] = std::string(value);
    }
    changed_.notify_all();
  }
  std::string get(std::string_view scope, std::string_view key, std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mutex_);
    const std::string p = path(scope, key);
    if (!changed_.wait_for(lock, timeout, [&] { return values_.count(p) > 0; })) {
      throw Error(Error::Code::Timeout, "key " + p + " not set");
    }
    ++gets_;
    return values_.at(p);
  }
  std::int64_t add(std::string_view, std::string_view, std::int64_t) override {
    throw Error(Error::Code::Unsupported, "add");
  }
  bool has(std::string_view scope, std::string_view key) {
    std::lock_guard lock(mutex_);
    return values_.count(path(scope, key)) > 0;
  }

 private:
  static std::string path(std::string_view scope, std::string_view key) {
    return std::string(scope) + "/" + std::string(key);
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
  int gets_ = 0;
};

}  // namespace trainrun::testing
