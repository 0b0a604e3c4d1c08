#include "cli/ssh/pump_threads.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "os/net.h"
#include "trainrun/error.h"

namespace trainrun::cli {

PumpThread::PumpThread() : wake_(make_pipe(O_CLOEXEC | O_NONBLOCK)) {
  if (!wake_.read) {
    throw Error(Error::Code::Io, std::string("cannot create a pipe for the SSH pump thread: ") + std::strerror(errno));
  }
  thread_ = std::thread([this] { run(); });
}

PumpThread::~PumpThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake();
  thread_.join();
}

void PumpThread::add(std::shared_ptr<Pumped> link) {
  ++links_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    incoming_.push_back(std::move(link));
  }
  wake();
}

void PumpThread::wake() { (void)!::write(wake_.write.get(), "x", 1); }

void PumpThread::run() {
  std::vector<std::shared_ptr<Pumped>> links;
  std::vector<pollfd> fds;
  std::vector<std::size_t> first;  // where each link's descriptors start in fds
  while (true) {
    std::vector<std::shared_ptr<Pumped>> fresh;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fresh.swap(incoming_);
      if (quit_ && links.empty() && fresh.empty()) return;
    }
    for (auto& link : fresh) {  // a first step before any poll, as each link's own loop had
      if (link->step(nullptr)) links.push_back(std::move(link));
      else --links_;
    }
    fds.clear();
    first.clear();
    auto next = Pumped::Clock::now() + std::chrono::hours(1);
    for (auto& link : links) {
      first.push_back(fds.size());
      next = std::min(next, link->arm(fds));
    }
    fds.push_back({wake_.read.get(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), net::milliseconds_until(next));
    if (fds.back().revents & POLLIN) {
      char drain[64];
      while (::read(wake_.read.get(), drain, sizeof drain) > 0) {
      }
    }
    std::size_t kept = 0;
    for (std::size_t i = 0; i < links.size(); ++i) {
      if (links[i]->step(&fds[first[i]])) links[kept++] = std::move(links[i]);
      else --links_;
    }
    links.resize(kept);
  }
}

std::shared_ptr<PumpThread> pump_thread_for_new_link() {
  static std::mutex mutex;
  static std::vector<std::weak_ptr<PumpThread>> threads;
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<PumpThread> least;
  std::size_t alive = 0;
  for (auto it = threads.begin(); it != threads.end();) {
    if (auto thread = it->lock()) {
      ++alive;
      if (!least || thread->links() < least->links()) least = thread;
      ++it;
    } else {
      it = threads.erase(it);
    }
  }
  if (least && (least->links() < kLinksPerPumpThread || alive >= kMaxPumpThreads)) return least;
  auto thread = std::make_shared<PumpThread>();
  threads.push_back(thread);
  return thread;
}

}  // namespace trainrun::cli
