// The signals of a job (SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2,
// SIGQUIT): the launcher blocks them for the whole launch and reads them
// synchronously (the supervisor's signalfd), so that none is ever
// delivered with its default action between attempts or as the job ends.
#pragma once

#include <signal.h>

#include <initializer_list>
#include <vector>

namespace trainrun::cli {

// The job's signals, as a set.
sigset_t job_signals();

// Blocks the signals the supervisor takes synchronously (and ignores
// SIGPIPE) for as long as it lives; its destructor restores the previous
// mask, on every way out of the launcher. Create it first, before threads or
// children exist: they inherit the mask. Throws Error(Io) when sigprocmask
// fails, rather than run a job whose Ctrl-C would never be read. One per
// launcher run, on the main thread.
class BlockedJobSignals {
 public:
  BlockedJobSignals();
  ~BlockedJobSignals();
  BlockedJobSignals(const BlockedJobSignals&) = delete;
  BlockedJobSignals& operator=(const BlockedJobSignals&) = delete;

 private:
  sigset_t previous_{};
};

// The signals of `which` that reached this process and wait, blocked and
// unread, taken so that they are never delivered when the mask returns;
// each named once, in signal order.
std::vector<int> take_pending_signals(std::initializer_list<int> which);
// Every job signal (BlockedJobSignals' set) that waits unread, dropped: the job is over.
void discard_pending_job_signals();

}  // namespace trainrun::cli
