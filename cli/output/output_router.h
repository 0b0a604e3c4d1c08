// OutputRouter: where rank output goes in the launcher. Every byte goes to
// the rank's files (--output-filename DIR: DIR/rank.NN/{stdout,stderr},
// exactly as written); the console gets whole lines, tagged "[rank] " unless
// --no-tag-output, for the ranks --rank-filter selects. Lines from
// different ranks never interleave mid-line. Console writes never block: they
// queue, and the supervisor stops reading agents while the queue is over its
// limit (back-pressure instead of memory). A file that cannot be written
// (a full disk) is closed and named in one line on stderr; its rank's
// output still reaches the console, and write_failures() lists it for the
// report. Single-threaded.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli/output/line_assembler.h"
#include "cli/output/write_failure.h"
#include "os/unique_fd.h"

namespace trainrun::cli {

class OutputRouter {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    bool tag = true;
    bool timestamp = false;       // each line starts with the local time it arrived (--timestamp-output)
    bool merge_stderr = false;    // ranks' stderr is taken as their stdout (--merge-stderr-to-stdout)
    std::set<int> console_ranks;  // empty: all
    std::string directory;        // empty: no files
    // Non-empty: a later attempt of a restarted job; its files keep what
    // earlier attempts wrote and this line starts the attempt's part.
    std::string attempt_banner;
    int size = 1;  // number of ranks (file name width)
    int stdout_fd = 1;
    int stderr_fd = 2;
  };
  static constexpr std::size_t kConsoleLimit = 1u << 20;
  // Unfinished lines reach the console after this long (prompts, progress).
  static constexpr std::chrono::milliseconds kHold{100};

  explicit OutputRouter(Options options);  // creates the files; throws Error(Io)
  ~OutputRouter();

  void add(int rank, int stream, std::string_view bytes, Clock::time_point now);
  void flush_stale(Clock::time_point now);
  void finish();  // everything unfinished, now
  // A message of trainrun's own on stderr, in order with rank output.
  void note(const std::string& line);

  bool backlogged() const;
  bool wants_write(int stream) const { return !queue_[stream - 1].empty(); }
  int fd(int stream) const { return stream == 1 ? options_.stdout_fd : options_.stderr_fd; }
  // Writes what the console takes without blocking; after POLLOUT on fd(stream).
  void write_some(int stream);
  // At exit: waits (bounded) until the queues are written.
  void drain(std::chrono::milliseconds timeout);
  // The files that could not be written in full, in the order they failed.
  const std::vector<WriteFailure>& write_failures() const { return failures_; }

 private:
  void to_console(int rank, int stream, std::string_view piece, bool continues);
  int file_for(int rank, int stream);
  void open_files(int rank);  // DIR/rank.NN/{stdout,stderr}
  bool on_console(int rank) const;
  // Closes the file, says so once, and lists it in failures_.
  void file_failed(int rank, int stream, int error);

  struct File {
    UniqueFd fd;  // closed once a write to it failed
    std::string path;
  };

  Options options_;
  std::map<std::pair<int, int>, LineAssembler> assemblers_;
  std::map<std::pair<int, int>, File> files_;
  std::vector<WriteFailure> failures_;
  std::set<int> late_;  // ranks beyond options_.size whose files were tried
  std::array<std::string, 2> queue_;
  // The console line left open (no newline yet) by a (rank, stream), if any.
  std::array<std::pair<int, bool>, 2> open_line_{{{-1, false}, {-1, false}}};
};

}  // namespace trainrun::cli
