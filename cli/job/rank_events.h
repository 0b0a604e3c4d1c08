// What the supervisor tells whoever records the job (ReportRecorder) about
// each rank, as agent frames arrive. Called on the supervising thread.
#pragma once

#include <string_view>

namespace trainrun::cli {

class RankEvents {
 public:
  virtual ~RankEvents() = default;
  virtual void started(int rank, int pid) = 0;
  // payload: the Exited frame's (cli/report/exit_record.h).
  virtual void exited(int rank, std::string_view payload) = 0;
  // Bytes the rank wrote to its stderr, as they arrive.
  virtual void wrote_stderr(int rank, std::string_view bytes) = 0;
};

}  // namespace trainrun::cli
