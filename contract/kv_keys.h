// The launcher <-> rank contract: the scopes and keys of the rendezvous
// store that trainrun itself uses (the launcher's report waits on some of
// them; ranks write them). Elastic jobs' keys: contract/elastic_protocol.h.
// Constants only; safe from any thread.
#pragma once

#include <string_view>

namespace trainrun::contract {

// Scopes used by trainrun itself.
// rank.{r} = "host pid backend" (contract/job_records.h).
inline constexpr std::string_view kScopeJob = "job";
inline constexpr std::string_view kKeyRankPrefix = "rank.";
// For the launcher's JSON report: first_op = rank 0's host, set when the
// engine's first op was ready on every rank; stragglers = the straggler
// table (contract/straggler_table.h); timeline_error = "path\nerror"
// when rank 0 could not write the --timeline file (contract/job_records.h).
inline constexpr std::string_view kKeyFirstOp = "first_op";
inline constexpr std::string_view kKeyStragglers = "stragglers";
inline constexpr std::string_view kKeyTimelineError = "timeline_error";
// NCCL start-up: scope nccl.{generation}, key ready.{r} = "ok" (rank 0:
// "ok" + the 128-byte ncclUniqueId) or "no " + why NCCL cannot run there.
inline constexpr std::string_view kScopeNcclPrefix = "nccl.";
inline constexpr std::string_view kKeyNcclReadyPrefix = "ready.";

}  // namespace trainrun::contract
