#include "cli/report/stall_lines.h"

namespace trainrun::cli::report {

StallLine classify_stall_line(std::string_view line) {
  if (line.substr(0, 15) != "trainrun: rank ") return StallLine::None;
  const std::size_t close = line.find("): ");
  if (close == std::string_view::npos) return StallLine::None;
  const std::string_view what = line.substr(close + 3);
  if (what.substr(0, 9) == "waiting: ") return StallLine::Warning;
  if (what.substr(0, 7) != "stall: ") return StallLine::None;
  const bool stopped = what.find("so the engine stopped") != std::string_view::npos ||
                       what.find("so it aborted the backend") != std::string_view::npos;
  return stopped ? StallLine::Shutdown : StallLine::Warning;
}

StallLine StallWatch::add(int rank, std::string_view bytes, Clock::time_point now) {
  StallLine strongest = StallLine::None;
  std::string& line = partial_[rank];
  while (!bytes.empty()) {
    const std::size_t newline = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, newline);
    line.append(piece.substr(0, kMaxLine > line.size() ? kMaxLine - line.size() : 0));
    if (newline == std::string_view::npos) break;
    bytes.remove_prefix(newline + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const StallLine kind = classify_stall_line(line);
    if (kind != StallLine::None) last_[rank] = {line, now};
    if (kind > strongest) strongest = kind;
    line.clear();
  }
  return strongest;
}

std::vector<std::string> StallWatch::view(Clock::time_point now) const {
  std::vector<std::string> lines;
  for (const auto& [rank, last] : last_) {
    const auto ago = std::chrono::duration_cast<std::chrono::seconds>(now - last.second).count();
    lines.push_back("(" + std::to_string(ago) + " s ago) " + last.first);
  }
  return lines;
}

}  // namespace trainrun::cli::report
