// The launcher <-> rank contract: the small records a rank puts in the
// rendezvous store's scope "job" (keys: contract/kv_keys.h) and the
// launcher reads back: job/rank.{r} (written by init, read by the
// launcher's supervisor and report and by a tcp rank naming a peer) and
// job/timeline_error (rank 0 could not write --timeline). The stragglers
// table has its own codec (contract/straggler_table.h). Pure functions on
// value types; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace trainrun::detail {

// job/rank.{r} = "host pid backend": this process reached the rendezvous.
struct RankRecord {
  std::string host;
  long pid = 0;
  std::string backend;
};
std::string encode_rank_record(const RankRecord& record);
// nullopt unless the text is three words, the second a pid.
std::optional<RankRecord> decode_rank_record(std::string_view text);

// job/timeline_error = "path\nerror".
struct TimelineError {
  std::string path;
  std::string error;
};
std::string encode_timeline_error(const TimelineError& failure);
// Never fails: text without a newline is a path with no error text.
TimelineError decode_timeline_error(std::string_view text);

}  // namespace trainrun::detail
