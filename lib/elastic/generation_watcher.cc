#include "lib/elastic/generation_watcher.h"

#include <string>

#include "trainrun/error.h"

namespace trainrun::detail {

namespace ep = elastic_protocol;

bool removes_member(const ep::Assignment& joined, const ep::Assignment& next) {
  for (const ep::Slot& slot : joined.slots) {
    if (!next.find(slot.worker)) return true;
  }
  return false;
}

GenerationWatcher::GenerationWatcher(std::unique_ptr<rendezvous::Store> store, ep::Assignment joined, Backend& backend,
                                     int worker, std::unique_ptr<PeerProbe> probe)
    : store_(std::move(store)), joined_(std::move(joined)), backend_(&backend), alive_key_(ep::alive_key(worker)),
      left_key_(ep::left_key(worker)), probe_(std::move(probe)), newest_(joined_.generation),
      thread_([this] { watch(); }) {}

GenerationWatcher::~GenerationWatcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void GenerationWatcher::leave(const std::string& cause) {
  std::lock_guard lock(mutex_);
  backend_ = nullptr;
  left_ = std::to_string(joined_.generation) + " " + cause;
  if (probe_) probe_->hold();
}

bool GenerationWatcher::sleep_unless_stopped(std::chrono::milliseconds pause) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, pause, [&] { return stop_.load(); });
}

// Short waits, so that a stop is noticed within kPoll; a store error (the
// launcher busy or restarting) is no reason to give up watching. Once the
// next generation is seen, only the heartbeat goes on: the worker may run
// in this one until its next commit.
void GenerationWatcher::watch() noexcept {
  bool next_seen = false;
  while (!stop_.load()) {
    try {
      beat();
      tell_left();
      if (probe_) probe_->tick(*store_);
      if (!next_seen) next_seen = wait_for_next();
      else if (!sleep_unless_stopped(ep::kHeartbeat)) return;
      continue;
    } catch (...) {
    }
    if (!sleep_unless_stopped(kRetry)) return;
  }
}

// One short wait for the next generation; true once it came.
bool GenerationWatcher::wait_for_next() {
  try {
    on_next(store_->get(ep::kScope, ep::assignment_key(joined_.generation + 1), kPoll));
    return true;
  } catch (const Error& e) {
    if (e.code() == Error::Code::Timeout) return false;
    throw;
  }
}

// A changing value: this process's steady clock in ms.
void GenerationWatcher::beat() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_beat_) return;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  store_->set(ep::kScope, alive_key_, std::to_string(ms));
  next_beat_ = now + ep::kHeartbeat;
}

void GenerationWatcher::tell_left() {
  std::optional<std::string> value;
  {
    std::lock_guard lock(mutex_);
    value = std::move(left_);
    left_.reset();
  }
  if (!value) return;
  try {
    store_->set(ep::kScope, left_key_, *value);
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (!left_) left_ = std::move(value);  // again on the next tick
    throw;
  }
}

// A malformed assignment still means the membership changed: commit() then
// makes every rank re-form, and init reports the malformed text.
void GenerationWatcher::on_next(const std::string& text) {
  newest_ = joined_.generation + 1;
  const std::optional<ep::Assignment> next = ep::decode_assignment(text);
  if (!next || removes_member(joined_, *next)) {
    member_lost_ = true;
    std::lock_guard lock(mutex_);
    if (backend_) backend_->abort();
  }
}

}  // namespace trainrun::detail
