#include "cli/job/job_signals.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "trainrun/error.h"

namespace trainrun::cli {

sigset_t job_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT}) sigaddset(&set, sig);
  return set;
}

BlockedJobSignals::BlockedJobSignals() {
  ::signal(SIGPIPE, SIG_IGN);
  const sigset_t set = job_signals();
  if (::sigprocmask(SIG_BLOCK, &set, &previous_) != 0) {
    throw Error(Error::Code::Io, std::string("cannot block the job's signals (sigprocmask): ") + std::strerror(errno));
  }
}

BlockedJobSignals::~BlockedJobSignals() { ::sigprocmask(SIG_SETMASK, &previous_, nullptr); }

namespace {

std::vector<int> take_pending(const sigset_t& set) {
  std::vector<int> taken;
  const timespec now{0, 0};
  for (int sig; (sig = ::sigtimedwait(&set, nullptr, &now)) > 0;) taken.push_back(sig);
  return taken;
}

}  // namespace

std::vector<int> take_pending_signals(std::initializer_list<int> which) {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : which) sigaddset(&set, sig);
  return take_pending(set);
}

void discard_pending_job_signals() { take_pending(job_signals()); }

}  // namespace trainrun::cli
