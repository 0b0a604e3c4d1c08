#include "lib/engine/engine.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string_view>
#include <utility>

#include "backends/core_call.h"
#include "lib/engine/cycle_status.h"
#include "lib/engine/fusion_planner.h"
#include "lib/engine/shutdown_cause.h"
#include "lib/rendezvous_client.h"
#include "contract/job_records.h"
#include "contract/kv_keys.h"

namespace trainrun::detail {
namespace {

// A negotiation message larger than this is taken for corruption.
constexpr std::int64_t kMaxReportBytes = std::int64_t{1} << 30;
// How often the watchdog looks, and how long a shutdown waits for the other
// ranks' engines before it gives up on them.
constexpr auto kWatchInterval = std::chrono::milliseconds(100);
constexpr auto kStopGrace = std::chrono::seconds(10);

std::vector<std::string> tensor_names(const Request& r) {
  if (r.members.empty()) return {r.name};
  std::vector<std::string> names;
  for (const Member& m : r.members) names.push_back(m.name);
  return names;
}

// What a request holds on this rank while in flight: its tensors' names,
// and a group's own name, so that none of them can be submitted twice.
std::vector<std::string> reserved_names(const Request& r) {
  std::vector<std::string> names = tensor_names(r);
  if (!r.members.empty()) names.push_back(r.name);
  return names;
}

}  // namespace

Engine::Engine(const World& world, Backend& backend, EngineOptions options, Timeline& timeline)
    : rank_(world.rank), size_(world.size), names_(world), hostname_(world.hostname), elastic_(world.elastic),
      backend_(backend), options_(std::move(options)), coordinator_(size_, names_), cache_(options_.cache_capacity),
      stall_(options_.stall_warning, options_.stall_shutdown, names_),
      stragglers_(world, backend, options_.straggler_warning_pct, options_.straggler_window), timeline_(timeline),
      executor_(backend, rank_, size_, options_.fusion_threshold, timeline) {
  if (rank_ == 0 && !options_.timeline_path.empty()) {
    timeline_.start(options_.timeline_path, options_.timeline_mark_cycles);
  }
  thread_ = std::thread([this] { loop(); });
  watchdog_ = std::thread([this] { watch(); });
}

Engine::~Engine() {
  {
    std::lock_guard lock(mutex_);
    stop_requested_ = true;
  }
  thread_.join();
  watchdog_.join();
}

bool Engine::running() {
  std::lock_guard lock(mutex_);
  return !stopped_;
}

Handle Engine::submit(Work work) {
  std::unique_lock lock(mutex_);
  if (stopped_) throw *stopped_;
  Request& r = work.request;
  if (r.op == OpType::Core) r.name = "#core." + std::to_string(next_core_++);
  if (r.op == OpType::Barrier) r.name = "#barrier." + std::to_string(next_barrier_++);
  const auto names = reserved_names(r);
  for (const std::string& name : names) {
    if (in_flight_.count(name)) {
      throw Error(Error::Code::InvalidArgument,
                  "'" + name + "' is already in flight on this rank; synchronize its handle first");
    }
  }
  in_flight_.insert(names.begin(), names.end());
  work.op = std::make_shared<Operation>();
  work.op->names = names;
  work.submitted = Clock::now();
  const Handle handle{next_handle_.fetch_add(1, std::memory_order_relaxed)};
  handles_.emplace(handle.id, work.op);
  incoming_.push_back(std::move(work));
  const bool wake = idle_;
  lock.unlock();
  if (wake) work_arrived_.notify_one();
  return handle;
}

bool Engine::poll(Handle handle) {
  std::lock_guard lock(mutex_);
  const auto it = handles_.find(handle.id);
  if (it == handles_.end()) {
    throw Error(Error::Code::InvalidArgument,
                "unknown handle " + std::to_string(handle.id) + " (already synchronized?)");
  }
  return it->second->done;
}

std::shared_ptr<Operation> Engine::await(Handle handle) {
  std::unique_lock lock(mutex_);
  const auto it = handles_.find(handle.id);
  if (it == handles_.end()) {
    throw Error(Error::Code::InvalidArgument,
                "unknown handle " + std::to_string(handle.id) + " (already synchronized?)");
  }
  std::shared_ptr<Operation> op = it->second;
  handles_.erase(it);
  if (!op->done) {
    // A caller that waits gains nothing from a cycle that waits for more
    // work to fuse: the engine thread starts the next cycle now.
    ++op->waiters;
    ++waiters_;
    lock.unlock();
    work_arrived_.notify_one();
    lock.lock();
    done_.wait(lock, [&] { return op->done; });
  }
  release_names(*op);
  if (op->error) throw *op->error;
  return op;
}

// A name is freed when its caller has the op back, done: until then the
// caller cannot know that it is, so a second submit of the name fails
// however quickly the first one completed (as the error message says).
void Engine::release_names(const Operation& op) {
  for (const std::string& name : op.names) in_flight_.erase(name);
}

Output Engine::wait(Handle handle) { return std::move(await(handle)->output); }

void Engine::run_core(Request request, std::function<void()> body) {
  Work work;
  work.request = std::move(request);
  work.request.op = OpType::Core;
  work.core = std::move(body);
  await(submit(std::move(work)));
}

int Engine::join() {
  Work work;
  work.request.op = OpType::Join;
  work.request.name = std::string(1, kReservedPrefix) + "join";
  return await(submit(std::move(work)))->last_joined;
}

void Engine::loop() {
  const auto period = std::chrono::duration_cast<Clock::duration>(options_.cycle_time);
  auto started = Clock::now();
  try {
    while (cycle()) {
      // Cycles start a period apart (one that overran starts the next at
      // once), or at once when work comes to an engine with nothing pending,
      // or when a caller waits for an op (unless the last cycle found every
      // rank waiting and served none: then nothing is gained by hurrying).
      std::unique_lock lock(mutex_);
      idle_ = pending_.empty() && retry_.empty();
      work_arrived_.wait_until(lock, started + period,
                               [&] { return (idle_ && !incoming_.empty()) || (hurry_ && waiters_ > 0); });
      idle_ = false;
      started = Clock::now();
    }
  } catch (const Error& e) {
    std::string aborted;
    {
      std::lock_guard lock(mutex_);
      aborted = abort_reason_;
    }
    stop(aborted.empty() ? Error(e.code(), std::string("the engine stopped: ") + e.what())
                         : Error(Error::Code::Timeout, aborted));
  } catch (const std::exception& e) {
    stop(Error(Error::Code::Internal, std::string("the engine stopped: ") + e.what()));
  }
}

void Engine::classify(const std::string& name, std::vector<std::string>& to_report, std::vector<std::size_t>& stale) {
  Work& work = pending_.at(name);
  if (cache_.capacity() > 0 && ResponseCache::cacheable(work.request)) {
    const auto found = cache_.lookup(work.request);
    if (found.match == ResponseCache::Match::Hit) {
      work.cache_slot = found.slot;
      return;
    }
    if (found.match == ResponseCache::Match::Stale) stale.push_back(found.slot);
  }
  to_report.push_back(name);
}

bool Engine::cycle() {
  bool stop_requested;
  bool waiting;
  {
    std::lock_guard lock(mutex_);
    stop_requested = stop_requested_;
    waiting = waiters_ > 0;
  }
  const auto now = Clock::now();
  if (timeline_.marking_cycles()) timeline_.mark_cycle(now);
  std::vector<std::string> to_report;
  CycleStatus status = prepare(now, to_report);
  if (stop_requested) status.set_shutdown();
  if (waiting) status.set_waiter();
  if (rank_ == 0 && stuck_since_ && stall_.out_of_step_due(now - *stuck_since_)) status.set_out_of_step();
  if (rank_ == 0 && !coordinator_.empty() && stall_.shutdown_due(coordinator_.pending(), now)) {
    status.set_stall_shutdown();
    // Said before any rank can act on it: the launcher takes every rank's
    // stack on this line (cli/report/stall_lines.h), while the stuck one lives.
    std::fprintf(stderr, "trainrun: rank %d (%s): %s\n", names_.job_rank(0), hostname_.c_str(),
                 stall_.shutdown_message(coordinator_.pending()).c_str());
  }
  {
    std::lock_guard lock(mutex_);
    blocked_since_ = Clock::now();
  }
  {
    const CollectiveWait wait;  // the elastic peer probe's measure of being stuck
    backend_.allreduce(status.data(), status.data(), status.size(), DataType::UInt8, ReduceOp::Min);
  }
  {
    std::lock_guard lock(mutex_);
    blocked_since_.reset();
    ++cycles_answered_;
  }
  if (status.stall_shutdown()) {
    stop(Error(Error::Code::Timeout, stall_.shutdown_message(coordinator_.pending())));
    return false;
  }

  std::vector<Response> responses = take_cached(status, to_report);
  if (status.any_reports()) {
    negotiate(to_report, now, responses);
  } else {
    retry_.insert(retry_.end(), to_report.begin(), to_report.end());
  }
  out_of_step(status, now, responses);
  // Puts may have evicted or replaced slots that requests wait on.
  for (auto& [name, work] : pending_) {
    if (work.cache_slot && (!cache_.holds(*work.cache_slot) || cache_.at(*work.cache_slot).name != name)) {
      work.cache_slot.reset();
      retry_.push_back(name);
    }
  }
  if (rank_ == 0 && !coordinator_.empty()) {
    if (auto warning = stall_.warning(coordinator_.pending(), now)) {
      std::fprintf(stderr, "trainrun: rank %d (%s): %s\n", names_.job_rank(0), hostname_.c_str(), warning->c_str());
    }
  }
  stragglers_.observe(
      responses,
      [this](const std::string& name) {
        const Work* work = local_work(name);
        return work ? std::optional(work->submitted) : std::nullopt;
      },
      Clock::now(), status.any_shutdown());
  execute(responses);
  hurry_ = !status.all_waiting() || !responses.empty();
  if (status.any_shutdown()) {
    // In an elastic job a rank that shuts down leaves it (an error exit, say):
    // the others re-form without it rather than fail.
    stop(Error(elastic_ ? Error::Code::MembershipChanged : Error::Code::InvalidArgument,
               shutdown_cause(backend_, stop_requested, size_)));
    return false;
  }
  return true;
}

CycleStatus Engine::prepare(Clock::time_point now, std::vector<std::string>& to_report) {
  std::vector<Work> fresh;
  {
    std::lock_guard lock(mutex_);
    fresh.swap(incoming_);
  }
  std::vector<std::size_t> stale;
  for (Work& work : fresh) {
    const std::string name = work.request.name;
    joined_ = joined_ || work.request.op == OpType::Join;
    pending_.emplace(name, std::move(work));
    classify(name, to_report, stale);
  }
  for (const std::string& name : std::exchange(retry_, {})) classify(name, to_report, stale);
  // A joined rank answers "ready" for every slot but those it cannot take
  // part in: those it finds stale, so that the coordinator reports why.
  for (std::size_t slot = 0; joined_ && slot < cache_.slots(); ++slot) {
    if (cache_.holds(slot) && !joined_rank_can_take_part(cache_.at(slot), rank_)) stale.push_back(slot);
  }

  CycleStatus status(cache_.slots(), joined_);
  const auto renegotiate = stall_.renegotiate_after();
  for (auto& [name, work] : pending_) {
    if (!work.cache_slot) continue;
    if (renegotiate && now - work.submitted >= *renegotiate) {
      // Waited too long on a hit: negotiate in full so that rank 0 can
      // name the ranks that are missing.
      stale.push_back(*work.cache_slot);
      work.cache_slot.reset();
      to_report.push_back(name);
    } else {
      status.mark_ready(*work.cache_slot);
    }
  }
  for (std::size_t slot : stale) status.mark_stale(slot);
  if (!to_report.empty()) status.set_reports();
  return status;
}

std::vector<Response> Engine::take_cached(const CycleStatus& status, std::vector<std::string>& to_report) {
  // Slots some rank found stale are dropped everywhere. A rank that marks a
  // slot stale reports its request this cycle (or has joined); waiters left
  // without a negotiation this cycle retry in the next.
  std::vector<Response> responses;
  for (std::size_t slot = 0; slot < status.slots(); ++slot) {
    if (status.stale(slot)) cache_.erase(slot);
    if (!status.ready(slot) || status.all_joined() || !cache_.holds(slot)) continue;
    responses.emplace_back().request = cache_.at(slot);
    cache_.touch(slot);
    if (Work* work = local_work(cache_.at(slot).name)) work->cache_slot.reset();
  }
  for (auto& [name, work] : pending_) {
    if (work.cache_slot && !cache_.holds(*work.cache_slot)) {
      work.cache_slot.reset();
      to_report.push_back(name);
    }
  }
  return responses;
}

void Engine::negotiate(const std::vector<std::string>& to_report, Clock::time_point now,
                       std::vector<Response>& responses) {
  std::vector<Request> mine;
  for (const std::string& name : to_report) {
    const Work& work = pending_.at(name);
    mine.push_back(work.request);
    const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - work.submitted).count();
    mine.back().age_ms = static_cast<std::uint32_t>(std::min<std::int64_t>(age, UINT32_MAX));
  }
  const std::string bytes = encode_requests(mine);
  std::int64_t my_size = static_cast<std::int64_t>(bytes.size());
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(size_));
  backend_.allgather(&my_size, sizes.data(), 1, DataType::Int64);
  std::vector<std::size_t> counts;
  for (int r = 0; r < size_; ++r) {
    if (sizes[r] < 0 || sizes[r] > kMaxReportBytes) {
      throw Error(Error::Code::Internal, "engine: rank " + std::to_string(r) + " announced a " +
                                             std::to_string(sizes[r]) + "-byte negotiation message");
    }
    counts.push_back(static_cast<std::size_t>(sizes[r]));
  }
  std::string all(std::accumulate(counts.begin(), counts.end(), std::size_t{0}), '\0');
  backend_.allgatherv(bytes.data(), all.data(), counts, DataType::UInt8);
  std::size_t offset = 0;
  for (int r = 0; r < size_; ++r) {
    auto requests = decode_requests(std::string_view(all).substr(offset, counts[r]), r);
    offset += counts[r];
    if (timeline_.active()) {
      for (const Request& request : requests) trace_report(r, request, now);
    }
    coordinator_.report(r, std::move(requests), now);
  }
  for (Response& response : coordinator_.take_ready()) {
    if (response.error.empty()) cache_.put(response.request);
    responses.push_back(std::move(response));
  }
}

void Engine::out_of_step(const CycleStatus& status, Clock::time_point now, std::vector<Response>& responses) {
  if (status.out_of_step() && responses.empty()) fail_out_of_step(responses);
  if (rank_ == 0) {
    // Every rank waits, on ops that cannot complete: out of step once this lasts.
    const bool stuck = status.all_waiting() && responses.empty() && !coordinator_.empty();
    if (!stuck) stuck_since_.reset();
    else if (!stuck_since_) stuck_since_ = now;
  }
}

void Engine::fail_out_of_step(std::vector<Response>& responses) {
  bool barrier_failed = false;
  for (Response& response : coordinator_.fail_out_of_step(stall_.out_of_step_wait())) {
    barrier_failed = barrier_failed || response.request.op == OpType::Barrier;
    responses.push_back(std::move(response));
  }
  if (barrier_failed) {
    // Every rank fails the same barriers; they number the next ones from 0 alike.
    std::lock_guard lock(mutex_);
    next_barrier_ = 0;
  }
}

Work* Engine::local_work(const std::string& name) {
  const auto it = pending_.find(name);
  return it == pending_.end() ? nullptr : &it->second;
}

void Engine::execute(const std::vector<Response>& responses) {
  if (responses.empty()) return;
  if (timeline_.active()) {
    const auto now = Clock::now();
    for (const Response& response : responses) trace_ready(response, now);
  } else {
    // A timeline stopped while these negotiated: a later one starts their spans afresh.
    for (const Response& response : responses) negotiating_.erase(response.request.name);
  }
  const std::vector<Batch> batches = plan_batches(responses, options_.fusion_threshold);
  // A group's members may land in several batches: it completes with its last.
  std::vector<std::size_t> unfinished(responses.size(), 0);
  for (const Batch& batch : batches) {
    for (const FusionItem& item : batch.items) ++unfinished[item.response];
  }
  for (const Batch& batch : batches) {
    std::vector<Work*> works;
    for (const FusionItem& item : batch.items) works.push_back(local_work(responses[item.response].request.name));
    const Response& first = responses[batch.items[0].response];
    std::vector<const Response*> done;
    if (!first.error.empty()) {
      if (timeline_.active()) {
        for (const std::string& name : tensor_names(first.request)) timeline_.end(name, "QUEUE");
      }
      done.push_back(&first);
    } else {
      executor_.run(batch, responses, works);
      if (first.request.op == OpType::Join) {
        joined_ = false;
        if (works[0]) works[0]->op->last_joined = first.last_joined;
        std::lock_guard lock(mutex_);
        next_core_ = next_barrier_ = 0;  // ranks may have made different numbers while joined
      }
      for (const FusionItem& item : batch.items) {
        if (--unfinished[item.response] == 0) done.push_back(&responses[item.response]);
      }
    }
    finish(done);
  }
}

void Engine::finish(const std::vector<const Response*>& done) {
  if (timeline_.active()) {
    for (const Response* response : done) {
      for (const std::string& name : tensor_names(response->request)) {
        timeline_.end(name, upper_case(to_string(response->request.op)));
      }
    }
  }
  {
    std::lock_guard lock(mutex_);
    for (const Response* response : done) {
      const auto it = pending_.find(response->request.name);
      if (it == pending_.end()) continue;  // this rank joined: nothing to complete
      if (!response->error.empty()) it->second.op->error = Error(response->error_code, response->error);
      complete(*it->second.op);
    }
  }
  for (const Response* response : done) pending_.erase(response->request.name);
  done_.notify_all();
}

void Engine::complete(Operation& op) {
  op.done = true;
  // Its waiters stop counting now, not when they wake: the next cycle must
  // not hurry for a caller that is already served.
  waiters_ -= std::exchange(op.waiters, 0);
}

void Engine::stop(const Error& reason) {
  std::lock_guard lock(mutex_);
  for (Work& work : incoming_) pending_.emplace(work.request.name, std::move(work));
  incoming_.clear();
  for (auto& [name, work] : pending_) {
    const bool core = work.request.op == OpType::Core;
    work.op->error =
        Error(reason.code(),
              core ? reason.what() : op_label(work.request) + " '" + work.request.name + "': " + reason.what());
    complete(*work.op);
  }
  pending_.clear();
  in_flight_.clear();
  stopped_ = reason;
  done_.notify_all();
  watch_wake_.notify_all();
}

void Engine::watch() {
  StallInspector inspector(options_.stall_warning, options_.stall_shutdown, names_);  // not the engine thread's
  const int job_rank = names_.job_rank(rank_);
  std::unique_lock lock(mutex_);
  while (!stopped_) {
    watch_wake_.wait_for(lock, kWatchInterval);
    if (stopped_ || !blocked_since_) continue;
    const auto now = Clock::now();
    const auto waited = now - *blocked_since_;
    if (inspector.blocked_shutdown_due(waited)) {
      abort_reason_ = inspector.blocked_shutdown_message();
      std::fprintf(stderr, "trainrun: rank %d (%s): %s\n", job_rank, hostname_.c_str(), abort_reason_.c_str());
    } else if (stop_requested_ && waited >= kStopGrace) {
      abort_reason_ = "the engine was shut down, but the other ranks' engines did not answer for " +
                      std::to_string(kStopGrace.count()) + " s, so it aborted the backend";
    } else {
      if (auto warning = inspector.blocked_warning(waited, now, cycles_answered_)) {
        std::fprintf(stderr, "trainrun: rank %d (%s): %s\n", job_rank, hostname_.c_str(), warning->c_str());
      }
      continue;
    }
    lock.unlock();
    backend_.abort();  // the status allreduce fails; the engine thread stops with abort_reason_
    return;
  }
}

void Engine::trace_report(int from, const Request& r, Clock::time_point now) {
  if (negotiating_.insert(r.name).second) {
    timeline_.begin(r.name, "NEGOTIATE_" + upper_case(to_string(r.op)), {}, now - std::chrono::milliseconds(r.age_ms));
  }
  timeline_.mark(r.name, "rank " + std::to_string(from) + " ready", now);
}

void Engine::trace_ready(const Response& response, Clock::time_point now) {
  const Request& r = response.request;
  const std::string op = upper_case(to_string(r.op));
  if (!negotiating_.erase(r.name)) {
    // A cache hit: negotiation took from this rank's submission until now.
    const Work* work = local_work(r.name);
    timeline_.begin(r.name, "NEGOTIATE_" + op, {}, work ? work->submitted : now);
  }
  timeline_.end(r.name, "NEGOTIATE_" + op, now);
  const Work* work = local_work(r.name);
  const Request& mine = work ? work->request : r;
  for (std::size_t i = 0; i < std::max<std::size_t>(1, mine.members.size()); ++i) {
    const bool member = !mine.members.empty();
    const std::string& name = member ? mine.members[i].name : mine.name;
    const auto& shape = member ? mine.members[i].shape : mine.shape;
    timeline_.begin(name, op, {{"dtype", to_string(r.type)}, {"shape", shape_text(shape)}}, now);
    timeline_.begin(name, "QUEUE", {}, now);
  }
}

}  // namespace trainrun::detail
