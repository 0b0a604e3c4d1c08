// elastic::run and its helpers (trainrun/elastic.h): the recovery loop.
// The only place the library prints on its own: one line per re-form,
// which is what a user (and the launcher's tests) read to follow the job.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lib/api/membership.h"
#include "contract/environment.h"
#include "trainrun/communicator.h"
#include "trainrun/elastic.h"

namespace trainrun::elastic {
namespace {

// What a lost member looks like from the survivors: their collectives fail.
bool recoverable(Error::Code code) {
  return code == Error::Code::Io || code == Error::Code::Timeout || code == Error::Code::Backend ||
         code == Error::Code::MembershipChanged;
}

// init(), for as many generations as it takes: one that fails to form
// (superseded by a newer one while its members met: FormingStore) is
// skipped for the next. `cause`, when not empty, is why the world re-forms.
void join_world(const std::string& cause) {
  for (;;) {
    const int before = detail::last_joined_generation();
    try {
      init();
      return;
    } catch (const Error& e) {
      if (detail::last_joined_generation() > before && recoverable(e.code())) continue;
      if (cause.empty()) throw;
      throw Error(e.code(), std::string(e.what()) + " (while re-forming after: " + cause + ")");
    }
  }
}

// Leaves the broken world (still beating: detail::leave_generation) and
// joins the next generation.
void reform(const std::string& cause) {
  detail::leave_generation(cause);
  join_world(cause);
}

void announce() {
  const detail::Membership m = detail::membership();
  Communicator& comm = init();
  std::fprintf(stderr, "trainrun: worker %d: joined generation %d as rank %d of %d\n", m.worker_id, m.generation,
               comm.rank(), comm.size());
  std::fflush(stderr);
}

}  // namespace

void run(State& state, const std::function<void()>& fn) {
  if (!enabled()) {
    init();
    state.sync();
    fn();
    return;
  }
  join_world("");
  for (bool reformed = false;; reformed = true) {
    std::string cause;
    try {
      state.sync();
      if (reformed) state.reset();
      fn();
      return;
    } catch (const HostsUpdated& e) {
      cause = e.what();
    } catch (const Error& e) {
      if (!recoverable(e.code())) throw;
      state.restore();
      cause = e.what();
    }
    reform(cause);
    announce();
  }
}

bool enabled() {
  const char* value = std::getenv(contract::kEnvElastic);
  return value && std::strcmp(value, "1") == 0;
}

int generation() { return detail::membership().generation; }

}  // namespace trainrun::elastic
