#include "lib/fork_guard.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>

#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

std::atomic<bool> g_live{false};  // a communicator exists in this process
std::atomic<int> g_rank{-1};      // the rank it was
std::atomic<pid_t> g_parent{0};   // the process that ran init()

void in_child() {
  if (g_live.load(std::memory_order_relaxed)) g_forked_after_init.store(true, std::memory_order_relaxed);
}

}  // namespace

std::atomic<bool> g_forked_after_init{false};

void note_initialized(int rank) {
  static std::once_flag registered;
  std::call_once(registered, [] { ::pthread_atfork(nullptr, nullptr, &in_child); });
  g_rank = rank;
  g_parent = ::getpid();
  g_live = true;
}

void note_shut_down() { g_live = false; }

void fail_forked() {
  throw Error(Error::Code::Unsupported,
              "this process (pid " + std::to_string(::getpid()) + ") was forked from rank " +
                  std::to_string(g_rank.load()) + " (pid " + std::to_string(g_parent.load()) +
                  ") after trainrun::init(); collectives are unavailable in a forked child (it shares the "
                  "parent's connections and shared memory, not its threads): call them in the parent, or "
                  "start children before init() or with exec (multiprocessing: 'spawn' or 'forkserver')");
}

}  // namespace trainrun::detail
