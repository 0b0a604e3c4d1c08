#include "lib/engine/timeline.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "os/net.h"
#include "os/unique_fd.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

std::int64_t epoch_micros_at(Timeline::Clock::time_point at) {
  const auto since = Timeline::Clock::now() - at;
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch() -
                                                               since)
      .count();
}

// The timeline file, for writing from its start, as an intruder cannot
// redirect it (issue 37): never through a symbolic link (a link planted at
// the name in a folder everyone may write to, as /tmp), never a regular
// file of another user's, and truncated only once it proved to be this
// user's own.
std::FILE* open_timeline(const std::string& path) {
  auto fail = [&](const std::string& why) -> std::FILE* {
    throw Error(Error::Code::Io, "timeline: cannot write '" + path + "': " + why);
  };
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644));
  // ELOOP (O_NOFOLLOW), or EACCES where the kernel protects sticky folders
  // from links (fs.protected_symlinks) before O_NOFOLLOW is looked at.
  struct stat link {};
  if (!fd && (errno == ELOOP || errno == EACCES) && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    return fail("it is a symbolic link: refusing to follow it");
  }
  if (!fd) return fail(net::errno_text(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(net::errno_text(errno));
  // A device or a FIFO (/dev/null, a pipe) is written as it is.
  const bool regular = S_ISREG(st.st_mode);
  if (regular && st.st_uid != ::geteuid()) {
    return fail("it belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
                std::to_string(::geteuid()) + "): refusing to overwrite it");
  }
  if ((regular && ::ftruncate(fd.get(), 0) != 0) || ::fcntl(fd.get(), F_SETFL, 0) != 0) {
    return fail(net::errno_text(errno));
  }
  std::FILE* file = ::fdopen(fd.get(), "w");
  if (!file) return fail(net::errno_text(errno));
  (void)fd.release();  // the FILE owns it now
  return file;
}

}  // namespace

Timeline::Timeline(OnFailure on_failure)
    : on_failure_(std::move(on_failure)), start_epoch_us_(epoch_micros_at(start_)) {}

Timeline::~Timeline() {
  std::unique_lock lock(mutex_);
  if (!writer_.joinable()) return;
  if (!path_.empty()) {
    Entry close;
    close.kind = Entry::Kind::Close;
    close.event.ts_us = micros(Clock::now());
    queue_.push_back(std::move(close));
    ++queued_;
  }
  stop_ = true;
  lock.unlock();
  wake_.notify_one();
  writer_.join();
}

std::int64_t Timeline::micros(Clock::time_point at) const {
  return std::chrono::duration_cast<std::chrono::microseconds>(at - start_).count();
}

void Timeline::start(const std::string& path, bool mark_cycles) {
  std::lock_guard calls(calls_);
  {
    std::lock_guard lock(mutex_);
    if (!path_.empty() && path == path_) {
      mark_cycles_ = mark_cycles;
      return;
    }
  }
  std::FILE* file = open_timeline(path);
  Entry open;
  open.kind = Entry::Kind::Open;
  open.event.ts_us = micros(Clock::now());
  open.file = file;
  open.path = path;
  std::unique_lock lock(mutex_);
  path_ = path;
  if (!writer_.joinable()) writer_ = std::thread([this] { write_loop(); });
  queue_.push_back(std::move(open));
  ++queued_;
  active_ = true;
  mark_cycles_ = mark_cycles;
  wake_.notify_one();
  drain(lock);
}

void Timeline::stop() {
  std::lock_guard calls(calls_);
  std::unique_lock lock(mutex_);
  if (path_.empty()) return;
  active_ = false;
  mark_cycles_ = false;
  path_.clear();
  Entry close;
  close.kind = Entry::Kind::Close;
  close.event.ts_us = micros(Clock::now());
  queue_.push_back(std::move(close));
  ++queued_;
  wake_.notify_one();
  drain(lock);
}

void Timeline::drain(std::unique_lock<std::mutex>& lock) {
  const std::uint64_t target = queued_;
  drained_.wait(lock, [&] { return written_ >= target; });
}

void Timeline::begin(const std::string& tensor, const std::string& phase, Args args, Clock::time_point at) {
  record(TimelineEvent::Phase::Begin, tensor, phase, std::move(args), at);
}

void Timeline::end(const std::string& tensor, const std::string& phase, Clock::time_point at) {
  record(TimelineEvent::Phase::End, tensor, phase, {}, at);
}

void Timeline::mark(const std::string& tensor, const std::string& what, Clock::time_point at) {
  record(TimelineEvent::Phase::Instant, tensor, what, {}, at);
}

void Timeline::mark_cycle(Clock::time_point at) { record(TimelineEvent::Phase::Instant, "", "CYCLE_START", {}, at); }

void Timeline::record(TimelineEvent::Phase phase, const std::string& tensor, const std::string& name, Args args,
                      Clock::time_point at) {
  if (!active()) return;
  Entry entry;
  entry.tensor = tensor;
  entry.event = {phase, name, micros(at), 0, std::move(args)};
  if (tensor.empty()) entry.event.scope = 'g';
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(entry));
    ++queued_;
  }
  wake_.notify_one();
}

void Timeline::write_loop() {
  std::vector<Entry> batch;
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    batch.swap(queue_);
    const bool stopping = stop_;
    lock.unlock();
    for (Entry& entry : batch) handle(entry);
    if (file_.handle && !file_.failed && std::fflush(file_.handle) != 0) failed(errno);
    lock.lock();
    written_ += batch.size();
    batch.clear();
    drained_.notify_all();
    if (stopping && queue_.empty()) return;
  }
}

void Timeline::handle(Entry& entry) {
  switch (entry.kind) {
    case Entry::Kind::Open:
      close_file(entry.event.ts_us);
      file_.handle = entry.file;
      file_.path = std::move(entry.path);
      put("[\n");
      return;
    case Entry::Kind::Close: return close_file(entry.event.ts_us);
    case Entry::Kind::Event:
      if (file_.handle) write_event(entry.tensor, std::move(entry.event));
      return;
  }
}

void Timeline::write_event(const std::string& tensor, TimelineEvent event) {
  if (file_.first) {
    file_.first = false;
    put("{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0,\"pid\":0,\"tid\":0,\"args\":"
        "{\"start_time_since_epoch_in_micros\":" +
        std::to_string(start_epoch_us_) + "}}");
  }
  event.pid = tensor.empty() ? 0 : row(tensor);
  int& open = file_.open_spans[event.pid];
  if (event.phase == TimelineEvent::Phase::End) {
    if (open == 0) return;  // begun in an earlier file
    --open;
  }
  if (event.phase == TimelineEvent::Phase::Begin) ++open;
  put(",\n" + to_json(event));
}

int Timeline::row(const std::string& tensor) {
  // Numbered names the engine makes up ("#core.7", "#barrier.2") share a row.
  std::string key = tensor;
  const std::size_t dot = tensor.rfind('.');
  if (tensor[0] == '#' && dot != std::string::npos && dot + 1 < tensor.size() &&
      tensor.find_first_not_of("0123456789", dot + 1) == std::string::npos) {
    key.erase(dot);
  }
  const auto [it, added] = file_.rows.emplace(key, static_cast<int>(file_.rows.size()) + 1);
  if (added) {
    put(",\n" + to_json({TimelineEvent::Phase::Metadata, "process_name", 0, it->second, {{"name", key}}}));
    put(",\n" + to_json({TimelineEvent::Phase::Metadata,
                         "process_sort_index",
                         0,
                         it->second,
                         {{"sort_index", std::to_string(it->second)}}}));
  }
  return it->second;
}

void Timeline::close_file(std::int64_t ts_us) {
  if (!file_.handle) return;
  // Spans still open end with the file, so that it shows them.
  for (const auto& [pid, open] : file_.open_spans) {
    for (int i = 0; i < open; ++i) put(",\n" + to_json({TimelineEvent::Phase::End, "", ts_us, pid, {}}));
  }
  const bool ended = put("\n]\n");
  // The last buffered bytes reach the file only now.
  if (std::fclose(file_.handle) != 0 && ended) failed(errno);
  file_ = File{};
}

bool Timeline::put(const std::string& text) {
  if (file_.failed) return false;
  if (std::fputs(text.c_str(), file_.handle) == EOF) failed(errno);
  return !file_.failed;
}

void Timeline::failed(int error) {
  file_.failed = true;
  const std::string why = net::errno_text(error != 0 ? error : EIO);
  std::fprintf(stderr,
               "trainrun: warning: cannot write %s: %s; the timeline ends there (later engine events are dropped)\n",
               file_.path.c_str(), why.c_str());
  if (on_failure_) on_failure_(file_.path, why);
}

}  // namespace trainrun::detail
