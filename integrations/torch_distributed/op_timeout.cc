#include "integrations/torch_distributed/op_timeout.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <utility>

namespace trainrun::c10d {
namespace {

// Ten years: beyond it a deadline would overflow the clock (timedelta.max).
constexpr std::chrono::milliseconds kLongest = std::chrono::hours(24 * 3650);

// What the woken core call was waiting for ("shared memory: aborted while
// waiting for rank 1 (pid 42)", "... aborted while talking to rank 1
// (10.0.0.1:4312)") as " waiting for rank 1 (pid 42)"; else the core's
// message itself.
std::string waited_for(const std::string& error) {
  for (const char* marker : {"waiting for ", "talking to "}) {
    const std::size_t at = error.rfind(marker);
    if (at != std::string::npos) return " waiting for " + error.substr(at + std::strlen(marker));
  }
  return error.empty() ? "" : "; then: " + error;
}

}  // namespace

OpTimeout::OpTimeout(std::chrono::milliseconds timeout, std::string who, std::function<void()> expire)
    : timeout_(std::min(timeout, kLongest)), who_(std::move(who)), expire_(std::move(expire)) {
  if (timeout_.count() > 0) thread_ = std::thread([this] { watch(); });
}

OpTimeout::~OpTimeout() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_one();
  if (thread_.joinable()) thread_.join();
}

std::string OpTimeout::describe(std::chrono::milliseconds timeout) {
  if (timeout.count() % 1000 == 0) return std::to_string(timeout.count() / 1000) + " s";
  return std::to_string(timeout.count()) + " ms";
}

void OpTimeout::run(const char* name, const std::function<void()>& op) {
  if (timeout_.count() <= 0) return op();
  const std::uint64_t id = start(name);
  try {
    op();
  } catch (const std::exception& e) {
    const bool own = finish(id);
    std::lock_guard lock(mutex_);
    if (expired_.empty()) throw;
    if (!own) fail(name, "group aborted since " + expired_);
    // "Timed out" as Gloo says it, which torch's own tests look for.
    fail(name, "Timed out after " + describe(timeout_) + " (the process group's timeout)" + waited_for(e.what()));
  }
  finish(id);
}

void OpTimeout::fail(const char* name, const std::string& why) const {
  throw std::runtime_error(who_ + ": " + name + ": " + why);
}

std::uint64_t OpTimeout::start(const char* name) {
  std::lock_guard lock(mutex_);
  if (!expired_.empty()) fail(name, "group aborted since " + expired_);
  const std::uint64_t id = ++started_;
  // No wake-up: the watchdog is never asleep past now + timeout_ (below).
  running_[id] = {Clock::now() + timeout_, name};
  return id;
}

bool OpTimeout::finish(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = running_.find(id);
  const bool late = Clock::now() >= it->second.deadline;
  running_.erase(it);
  return late;
}

// Ops start in id order with one timeout, so the first running op has the
// earliest deadline, and an op that starts later has a deadline no earlier
// than the one slept for: at most `timeout_` from when the sleep began.
void OpTimeout::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    Clock::time_point wake = Clock::now() + timeout_;
    if (!running_.empty()) {
      const Running& first = running_.begin()->second;
      if (first.deadline <= Clock::now()) {
        expired_ =
            std::string(first.name) + " timed out after " + describe(timeout_) + " (the process group's timeout)";
        lock.unlock();
        expire_();  // the group is done for: nothing more to watch
        return;
      }
      wake = first.deadline;
    }
    changed_.wait_until(lock, wake, [&] { return stopping_; });
  }
}

}  // namespace trainrun::c10d
