#include "lib/core_call.h"

#include <atomic>

namespace trainrun::detail {
namespace {

thread_local const CoreCall* t_current = nullptr;
std::atomic<int> g_waiting{0};
std::atomic<std::int64_t> g_progress_ns{0};  // steady clock: the last call to begin or end

std::int64_t now_ns() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

}  // namespace

const CoreCall* current_core_call() { return t_current; }

CoreCallScope::CoreCallScope(const char* op, std::uint64_t number) : call_{op, number}, outer_(t_current) {
  t_current = &call_;
}

CoreCallScope::~CoreCallScope() { t_current = outer_; }

CollectiveWait::CollectiveWait() {
  g_progress_ns = now_ns();
  ++g_waiting;
}

CollectiveWait::~CollectiveWait() {
  --g_waiting;
  g_progress_ns = now_ns();
}

std::chrono::milliseconds collective_stuck_for() {
  if (g_waiting.load() <= 0) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(now_ns() - g_progress_ns.load()));
}

std::string core_wait_message(int rank, const std::string& host, const CoreCall& call, int peer,
                              const std::string& peer_host, std::chrono::seconds waited) {
  return "trainrun: rank " + std::to_string(rank) + " (" + host + "): waiting: " + call.op + " (core call #" +
         std::to_string(call.number) + ") has waited " + std::to_string(waited.count()) + " s for rank " +
         std::to_string(peer) + " (" + peer_host + "); still waiting";
}

}  // namespace trainrun::detail
