#include "cli/report/output_tail.h"

namespace trainrun::cli {

void OutputTail::add(std::string_view bytes) {
  if (bytes.size() > 2 * kMaxBytes) bytes.remove_prefix(bytes.size() - 2 * kMaxBytes);
  kept_.append(bytes);
  // The byte before the last kMaxBytes stays: it says whether they start a line.
  if (kept_.size() > 2 * kMaxBytes) kept_.erase(0, kept_.size() - kMaxBytes - 1);
}

std::vector<std::string> OutputTail::lines() const {
  const std::size_t start = kept_.size() > kMaxBytes ? kept_.size() - kMaxBytes : 0;
  const bool cut = start > 0 && kept_[start - 1] != '\n';
  std::vector<std::string> lines;
  for (std::size_t at = start; at < kept_.size();) {
    std::size_t end = kept_.find('\n', at);
    if (end == std::string::npos) end = kept_.size();
    std::string line = kept_.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    at = end + 1;
  }
  if (cut && lines.size() > 1) lines.erase(lines.begin());
  if (lines.size() > kMaxLines) lines.erase(lines.begin(), lines.end() - kMaxLines);
  return lines;
}

}  // namespace trainrun::cli
