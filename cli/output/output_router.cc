#include "cli/output/output_router.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <cstring>

#include "cli/output/owned_files.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

// "2026-11-25 12:47:03.123": local time, milliseconds (--timestamp-output).
std::string timestamp_now() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  tm local{};
  ::localtime_r(&now.tv_sec, &local);
  char text[40];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  std::snprintf(text + n, sizeof text - n, ".%03ld", now.tv_nsec / 1'000'000);
  return text;
}

constexpr const char* kWhat = "--output-filename";

// Writes at most this much after a POLLOUT: a pipe that polls writable has at
// least PIPE_BUF free, so a write this size does not block.
constexpr std::size_t kConsoleChunk = 4096;

// 0, or the errno of the write that failed.
int write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

}  // namespace

OutputRouter::OutputRouter(Options options) : options_(std::move(options)) {
  if (options_.directory.empty()) return;
  make_user_directory(options_.directory, kWhat);
  for (int rank = 0; rank < options_.size; ++rank) open_files(rank);
}

void OutputRouter::open_files(int rank) {
  const int width = std::max<int>(2, static_cast<int>(std::to_string(options_.size - 1).size()));
  std::string number = std::to_string(rank);
  if (number.size() < static_cast<std::size_t>(width)) number.insert(0, width - number.size(), '0');
  const std::string folder = options_.directory + "/rank." + number;
  make_own_directory(folder, kWhat);
  const bool append = !options_.attempt_banner.empty();
  for (int stream : {1, 2}) {
    const std::string file = folder + (stream == 1 ? "/stdout" : "/stderr");
    UniqueFd fd = open_own_file(file, append, kWhat);
    if (append) write_all(fd.get(), options_.attempt_banner + "\n");
    files_[{rank, stream}] = {std::move(fd), file};
  }
}

OutputRouter::~OutputRouter() = default;

int OutputRouter::file_for(int rank, int stream) {
  auto it = files_.find({rank, stream});
  if (it != files_.end()) return it->second.fd.get();
  // An elastic job's workers started later get their files on first output.
  if (options_.directory.empty() || rank < options_.size || !late_.insert(rank).second) return -1;
  try {
    open_files(rank);
  } catch (const Error& e) {
    note(std::string("trainrun: ") + e.what());
    return -1;
  }
  return file_for(rank, stream);
}

bool OutputRouter::on_console(int rank) const {
  return options_.console_ranks.empty() || options_.console_ranks.count(rank) > 0;
}

void OutputRouter::file_failed(int rank, int stream, int error) {
  File& file = files_[{rank, stream}];
  file.fd.reset();  // written no more: the message below is the only one for it
  const std::string kind = stream == 1 ? "stdout" : "stderr";
  failures_.push_back({file.path, kind, rank, std::strerror(error)});
  const std::string whose = "rank " + std::to_string(rank) + "'s later " + kind;
  note(write_failure_line(failures_.back(), on_console(rank)
                                                ? whose + " goes to the console only"
                                                : whose + " is lost (--rank-filter keeps it off the console)"));
}

void OutputRouter::add(int rank, int stream, std::string_view bytes, Clock::time_point now) {
  if (stream != 1 && stream != 2) return;
  if (options_.merge_stderr) stream = 1;  // as if the rank ran with 2>&1
  if (const int fd = file_for(rank, stream); fd >= 0) {
    if (const int error = write_all(fd, bytes)) file_failed(rank, stream, error);
  }
  if (!on_console(rank)) return;
  assemblers_[{rank, stream}].feed(
      bytes, now, [&](std::string_view piece, bool continues) { to_console(rank, stream, piece, continues); });
}

void OutputRouter::to_console(int rank, int stream, std::string_view piece, bool continues) {
  std::string& queue = queue_[stream - 1];
  auto& [open_rank, open] = open_line_[stream - 1];
  // Someone else's line is open on this console: end it before ours.
  if (open && open_rank != rank) queue.push_back('\n');
  const bool same_line = open && open_rank == rank && continues;
  if (options_.timestamp && !same_line) queue += timestamp_now() + " ";
  if (options_.tag && !same_line) queue += "[" + std::to_string(rank) + "] ";
  queue.append(piece);
  open = !piece.empty() && piece.back() != '\n' && piece.back() != '\r';
  open_rank = rank;
}

void OutputRouter::flush_stale(Clock::time_point now) {
  for (auto& [key, assembler] : assemblers_) {
    const auto [rank, stream] = key;
    assembler.flush(now, kHold, [&, rank = rank, stream = stream](std::string_view piece, bool continues) {
      to_console(rank, stream, piece, continues);
    });
  }
}

void OutputRouter::finish() {
  flush_stale(Clock::now() + kHold);
  for (int stream : {1, 2}) {
    auto& [rank, open] = open_line_[stream - 1];
    if (open) queue_[stream - 1].push_back('\n');
    open = false;
  }
}

void OutputRouter::note(const std::string& line) {
  auto& [rank, open] = open_line_[1];
  if (open) queue_[1].push_back('\n');
  open = false;
  queue_[1] += line + "\n";
}

bool OutputRouter::backlogged() const { return queue_[0].size() > kConsoleLimit || queue_[1].size() > kConsoleLimit; }

void OutputRouter::write_some(int stream) {
  std::string& queue = queue_[stream - 1];
  const int target = fd(stream);
  while (!queue.empty()) {
    const ssize_t n = ::write(target, queue.data(), std::min(queue.size(), kConsoleChunk));
    if (n > 0) {
      queue.erase(0, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno != EAGAIN) {
      queue.clear();  // the console is gone (closed pipe): drop, never block
      return;
    }
    // Write more only while the console keeps taking it without waiting.
    pollfd pfd{target, POLLOUT, 0};
    if (::poll(&pfd, 1, 0) <= 0) return;
  }
}

void OutputRouter::drain(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (int stream : {1, 2}) {
    while (wants_write(stream)) {
      pollfd pfd{fd(stream), POLLOUT, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0 || ::poll(&pfd, 1, static_cast<int>(left)) <= 0) return;
      write_some(stream);
    }
  }
}

}  // namespace trainrun::cli
