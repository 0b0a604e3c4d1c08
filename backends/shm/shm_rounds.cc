#include "backends/shm/shm_rounds.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>
#include <vector>

#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

using Clock = std::chrono::steady_clock;

// How long one futex sleep lasts before the sleeper checks its peers, the
// deadline and abort(): the bound on noticing a dead peer.
constexpr std::chrono::milliseconds kSleepSlice{20};

// A set_spin() phase that ran out turns it off for this many waits.
constexpr int kBackoffWaits = 256;
// How long a waiter pauses before it starts yielding.
constexpr std::chrono::microseconds kPauseTime{3};

// Round numbers wrap; a peer is never 2^31 rounds ahead or behind.
bool reached(std::uint32_t seen, std::uint32_t target) { return static_cast<std::int32_t>(seen - target) >= 0; }

// Shared (not FUTEX_PRIVATE): the words live in memory of several processes.
void futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected, std::chrono::nanoseconds slice) {
  timespec ts{static_cast<time_t>(slice.count() / 1'000'000'000), static_cast<long>(slice.count() % 1'000'000'000)};
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake(std::atomic<std::uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ShmRounds::ShmRounds(ShmControlLine* lines, int index, int count, Options options)
    : lines_(lines), index_(index), count_(count), options_(std::move(options)) {}

std::uint64_t ShmRounds::value(int peer) const {
  return lines_[peer].value[round_ & 1u].load(std::memory_order_acquire);
}

void ShmRounds::sync(std::uint64_t value, CallDescriptor call) {
  const std::uint32_t target = round_ + 1;
  ShmControlLine& mine = lines_[index_];
  mine.value[target & 1u].store(value, std::memory_order_relaxed);
  // A store to this line while a peer spins on it can cost a transfer of
  // the line each: the descriptor is written only when it changed (a
  // training loop repeats its calls).
  if (CallDescriptor& last = posted_[target & 1u]; call != last) {
    mine.call[target & 1u][0].store(call.what, std::memory_order_relaxed);
    mine.call[target & 1u][1].store(call.count, std::memory_order_relaxed);
    last = call;
  }
  // seq_cst store, then the sleepers load: pairs with the sleeper's
  // increment-then-recheck, so a wake-up is never lost.
  mine.round.store(target, std::memory_order_seq_cst);
  if (mine.sleepers.load(std::memory_order_seq_cst) != 0) futex_wake(&mine.round);
  // Each peer's descriptor is read as soon as its round arrived, while the
  // wait's acquire load has just brought its line in; a rank outside a
  // core call (0 0) is not compared. Every wait completes before a
  // mismatch throws, so the ranks stay in step.
  const unsigned p = target & 1u;
  bool differs = false;
  for (int k = 1; k < count_; ++k) {
    const int peer = (index_ + k) % count_;
    wait_for(peer, target);
    if (call.empty()) continue;
    const std::uint64_t what = lines_[peer].call[p][0].load(std::memory_order_relaxed);
    differs |=
        what != 0 && (what != call.what || lines_[peer].call[p][1].load(std::memory_order_relaxed) != call.count);
  }
  round_ = target;
  if (differs) report_mismatch();
}

void ShmRounds::report_mismatch() const {
  const unsigned p = round_ & 1u;
  std::vector<CallDescriptor> all;
  for (int k = 0; k < count_; ++k) {
    all.push_back(
        {lines_[k].call[p][0].load(std::memory_order_relaxed), lines_[k].call[p][1].load(std::memory_order_relaxed)});
  }
  check_calls_agree(all.data(), count_,
                    [this](int k) { return options_.peer_name ? options_.peer_name(k) : "rank " + std::to_string(k); });
}

void ShmRounds::wait_for(int peer, std::uint32_t target) {
  std::atomic<std::uint32_t>& word = lines_[peer].round;
  auto arrived = [&] { return reached(word.load(std::memory_order_acquire), target); };
  if (arrived()) return;
  // A peer running on another CPU posts within a microsecond or so.
  const auto pause_until = Clock::now() + kPauseTime;
  do {
    for (int i = 0; i < 32; ++i) {
      cpu_relax();
      if (arrived()) return;
    }
  } while (Clock::now() < pause_until);
  // A peer sharing this CPU (a busy machine) posts only once it runs:
  // yielding lets it, where pausing would burn the whole time slice.
  // set_spin() lengthens the phase only where Options::spin allows one, and
  // not for a while after one ran out: peers that take that long to post
  // are short of CPU (more ranks than CPUs on a machine that hosts several
  // "hosts": 3 x 2 ranks on 2 CPUs took 1-2 ms per call instead of 0.1).
  const bool extended = options_.spin.count() > 0 && spin_ > options_.spin && backoff_ == 0;
  if (backoff_ > 0) --backoff_;
  const std::chrono::nanoseconds spin = extended ? spin_ : options_.spin;
  if (spin.count() > 0) {
    const auto until = Clock::now() + spin;
    do {
      ::sched_yield();
      if (arrived()) return;
    } while (Clock::now() < until);
    if (extended) backoff_ = kBackoffWaits;
  }
  sleep_on(peer, target);
}

void ShmRounds::sleep_on(int peer, std::uint32_t target) {
  ShmControlLine& line = lines_[peer];
  const auto start = Clock::now();
  const auto deadline = start + options_.timeout;
  const bool warns = options_.warn && options_.warn_interval.count() > 0;
  auto next_warning = start + options_.warn_interval;
  while (true) {
    line.sleepers.fetch_add(1, std::memory_order_seq_cst);
    const std::uint32_t seen = line.round.load(std::memory_order_seq_cst);
    if (!reached(seen, target)) futex_wait(&line.round, seen, kSleepSlice);
    line.sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (reached(line.round.load(std::memory_order_acquire), target)) return;
    if (aborted_.load())
      throw Error(Error::Code::Io, "shared memory: aborted while waiting for " + options_.peer_name(peer));
    for (int k = 0; k < count_ && options_.check_peer; ++k) {
      if (k != index_ && !reached(lines_[k].round.load(std::memory_order_acquire), target)) options_.check_peer(k);
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      throw Error(Error::Code::Timeout, "no progress with " + options_.peer_name(peer) + " for " +
                                            std::to_string(options_.timeout.count() / 1000) + " s (shared memory)");
    }
    if (warns && now >= next_warning) {  // "still waiting": only while it does
      options_.warn(peer, std::chrono::round<std::chrono::seconds>(now - start));
      next_warning += options_.warn_interval;
    }
  }
}

void ShmRounds::abort() noexcept {
  aborted_ = true;
  for (int k = 0; k < count_; ++k) {
    if (k != index_) futex_wake(&lines_[k].round);
  }
}

std::chrono::nanoseconds shm_spin_budget(int ranks) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cpus = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  // Oversubscribed, yielding measured slower than sleeping at once (np=4 on
  // 2 CPUs: 26-33 us against 22 us for a 4-byte allreduce).
  if (ranks > cpus) return std::chrono::nanoseconds(0);
  return std::chrono::microseconds(50);
}

}  // namespace trainrun::detail
