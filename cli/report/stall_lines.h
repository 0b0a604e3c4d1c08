// The library's own lines about waiting ops, recognised in rank stderr:
// the engine's stall warnings and stall shutdown (lib/engine/engine.cc,
// "trainrun: rank R (HOST): stall: ...") and the core collectives' wait
// warnings (backends/tcp/socket_mesh.cc, "trainrun: rank R (HOST): waiting:
// ..."). They trigger stack dumps (the shutdown always, warnings with
// --stacks-on-stall) and are the engine's view printed beside a dump: what
// the ranks last said about the ops they wait for. Pure: bytes and time
// in; not thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace trainrun::cli::report {

enum class StallLine { None, Warning, Shutdown };

StallLine classify_stall_line(std::string_view line);

class StallWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // A rank's stderr bytes as they arrive; the strongest kind of stall line
  // completed by them.
  StallLine add(int rank, std::string_view bytes, Clock::time_point now);
  // The last stall line of each rank that printed one, "(N s ago) LINE",
  // in rank order.
  std::vector<std::string> view(Clock::time_point now) const;

 private:
  static constexpr std::size_t kMaxLine = 4096;  // longer lines are cut there
  std::map<int, std::string> partial_;
  std::map<int, std::pair<std::string, Clock::time_point>> last_;
};

}  // namespace trainrun::cli::report
