#include "backends/core_call.h"

#include <atomic>

namespace trainrun::detail {
namespace {

thread_local const CoreCall* t_current = nullptr;
std::atomic<int> g_waiting{0};
std::atomic<std::uint64_t> g_finished{0};

}  // namespace

const CoreCall* current_core_call() { return t_current; }

CoreCallScope::CoreCallScope(CoreOp op, std::uint64_t number, CallDescriptor descriptor)
    : call_{op, number, descriptor}, outer_(t_current) {
  t_current = &call_;
}

CoreCallScope::~CoreCallScope() { t_current = outer_; }

CollectiveWait::CollectiveWait() { g_waiting.fetch_add(1, std::memory_order_relaxed); }

CollectiveWait::~CollectiveWait() {
  g_finished.fetch_add(1, std::memory_order_relaxed);
  g_waiting.fetch_sub(1, std::memory_order_relaxed);
}

CollectiveProgress collective_progress() {
  return {g_waiting.load(std::memory_order_relaxed), g_finished.load(std::memory_order_relaxed)};
}

std::string core_wait_message(int rank, const std::string& host, const CoreCall& call, int peer,
                              const std::string& peer_host, std::chrono::seconds waited) {
  return "trainrun: rank " + std::to_string(rank) + " (" + host + "): waiting: " + to_string(call.op) +
         " (core call #" + std::to_string(call.number) + ") has waited " + std::to_string(waited.count()) +
         " s for rank " + std::to_string(peer) + " (" + peer_host + "); still waiting";
}

}  // namespace trainrun::detail
