// Process sets (Communicator::subset) under real ranks: every core
// collective and the engine on disjoint, overlapping, single-rank and
// whole-job sets, results checked against values computed here from the
// members' job ranks; sets that disagree or make no sense fail on every
// rank; a set's engine runs beside the job's. Run by
// tests/integration/process_sets.sh at np 3 and 4 over shared memory, TCP
// (TRAINRUN_SHM=0) and MPI. PROCESS_SETS_DEATH=1: job rank 1 dies inside
// the odd ranks' set; its peers there must fail naming it, the even set
// must go on (np 4).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <trainrun/trainrun.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "tests/conformance/every_rank_main.h"

namespace {

trainrun::Communicator* comm = nullptr;
using trainrun::DataType;
using trainrun::ReduceOp;

std::vector<int> ranks_where(bool (*keep)(int, int)) {
  std::vector<int> out;
  for (int r = 0; r < comm->size(); ++r) {
    if (keep(r, comm->size())) out.push_back(r);
  }
  return out;
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

void check_reductions(trainrun::Communicator& set, const std::vector<int>& members) {
  const int me = members[set.rank()];
  for (std::size_t count : {std::size_t{1000}, std::size_t{300'000}}) {
    std::vector<float> x(count);
    for (std::size_t i = 0; i < count; ++i) x[i] = static_cast<float>(me + static_cast<int>(i % 7));
    set.allreduce(x.data(), x.data(), count, DataType::Float32, ReduceOp::Sum);
    const int total = std::accumulate(members.begin(), members.end(), 0);
    bool ok = true;
    for (std::size_t i = 0; i < count; ++i) {
      ok = ok && x[i] == static_cast<float>(total + static_cast<int>(members.size() * (i % 7)));
    }
    CHECK_MESSAGE(ok, "allreduce sum of ", count, " floats");
  }
  std::int64_t big = me * 10;
  set.allreduce(&big, &big, 1, DataType::Int64, ReduceOp::Max);
  CHECK(big == members.back() * 10);
  double mean = me;
  set.allreduce(&mean, &mean, 1, DataType::Float64, ReduceOp::Average);
  CHECK(mean == doctest::Approx(std::accumulate(members.begin(), members.end(), 0.0) / members.size()));
  const int n = set.size(), r = set.rank();
  std::vector<float> send(static_cast<std::size_t>(2 * n)), got(2);
  for (int k = 0; k < n; ++k) {
    for (int j = 0; j < 2; ++j) send[static_cast<std::size_t>(2 * k + j)] = static_cast<float>(me + k + j);
  }
  set.reducescatter(send.data(), got.data(), 2, DataType::Float32, ReduceOp::Sum);
  const int total = std::accumulate(members.begin(), members.end(), 0);
  CHECK(got[0] == static_cast<float>(total + n * r));
  CHECK(got[1] == static_cast<float>(total + n * (r + 1)));
}

void check_movement(trainrun::Communicator& set, const std::vector<int>& members) {
  const int n = set.size(), r = set.rank(), me = members[r];
  std::vector<std::int32_t> mine{me * 3, me * 3 + 1, me * 3 + 2}, all(static_cast<std::size_t>(3 * n));
  set.allgather(mine.data(), all.data(), 3, DataType::Int32);
  for (int k = 0; k < n; ++k) CHECK(all[static_cast<std::size_t>(3 * k + 2)] == members[k] * 3 + 2);
  std::vector<std::size_t> counts(static_cast<std::size_t>(n));
  std::iota(counts.begin(), counts.end(), std::size_t{1});
  std::vector<std::int32_t> part(counts[r], me), gathered(static_cast<std::size_t>(n * (n + 1) / 2));
  set.allgatherv(part.data(), part.size(), gathered.data(), counts, DataType::Int32);
  CHECK(gathered.back() == members.back());
  CHECK(gathered.front() == members.front());
  std::vector<std::int64_t> value(513, me);
  set.broadcast(value.data(), value.size(), DataType::Int64, n - 1);
  CHECK(value[512] == members.back());
  std::vector<std::int32_t> out(static_cast<std::size_t>(2 * n)), in(static_cast<std::size_t>(2 * n));
  for (int k = 0; k < n; ++k) {
    for (int j = 0; j < 2; ++j) out[static_cast<std::size_t>(2 * k + j)] = me * 100 + k * 2 + j;
  }
  set.alltoall(out.data(), in.data(), 2, DataType::Int32);
  for (int k = 0; k < n; ++k) CHECK(in[static_cast<std::size_t>(2 * k + 1)] == members[k] * 100 + r * 2 + 1);
  set.barrier();
}

void check_engine(trainrun::Communicator& set, const std::vector<int>& members) {
  const int me = members[set.rank()];
  std::vector<float> t(64, static_cast<float>(me));
  const trainrun::Handle h = trainrun::allreduce_async(set, "set.grad", {t.data(), DataType::Float32, {64}});
  trainrun::synchronize(set, h);
  CHECK(t[63] == static_cast<float>(std::accumulate(members.begin(), members.end(), 0)));
  std::vector<std::int32_t> row{me};
  const trainrun::Output out =
      trainrun::synchronize(set, trainrun::allgather_async(set, "set.rows", {row.data(), DataType::Int32, {1}}));
  CHECK(out.shape == std::vector<std::int64_t>{static_cast<std::int64_t>(members.size())});
}

void exercise(const std::vector<int>& members) {
  std::unique_ptr<trainrun::Communicator> set = comm->subset(members);
  REQUIRE((set != nullptr) == contains(members, comm->rank()));
  if (!set) return;
  CHECK(set->size() == static_cast<int>(members.size()));
  CHECK(set->job_rank(set->rank()) == comm->rank());
  check_reductions(*set, members);
  check_movement(*set, members);
  check_engine(*set, members);
}

std::size_t shm_entries() {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm"))
    n += e.path().filename().string().find("trainrun") != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("disjoint sets: even ranks and odd ranks") {
  const std::size_t shm_before = shm_entries();
  const auto even = ranks_where([](int r, int) { return r % 2 == 0; });
  const auto odd = ranks_where([](int r, int) { return r % 2 == 1; });
  std::unique_ptr<trainrun::Communicator> evens = comm->subset(even);
  std::unique_ptr<trainrun::Communicator> odds = comm->subset(odd);
  trainrun::Communicator& mine = evens ? *evens : *odds;
  CHECK((evens != nullptr) != (odds != nullptr));
  check_reductions(mine, evens ? even : odd);
  check_movement(mine, evens ? even : odd);
  check_engine(mine, evens ? even : odd);
  evens.reset();
  odds.reset();
  CHECK(shm_entries() == shm_before);
}

TEST_CASE("overlapping sets: all but the last rank, all but the first") {
  std::vector<int> head(static_cast<std::size_t>(comm->size() - 1)), tail(head.size());
  std::iota(head.begin(), head.end(), 0);
  std::iota(tail.begin(), tail.end(), 1);
  exercise(head);
  exercise(tail);
}

TEST_CASE("a one-rank set, the whole job as a set, a set of a set") {
  exercise({comm->size() - 1});
  std::vector<int> all(static_cast<std::size_t>(comm->size()));
  std::iota(all.begin(), all.end(), 0);
  exercise(all);
  std::unique_ptr<trainrun::Communicator> outer = comm->subset({0, comm->size() - 1});
  if (outer) {
    std::unique_ptr<trainrun::Communicator> inner = outer->subset({1});
    CHECK((inner != nullptr) == (comm->rank() == comm->size() - 1));
    if (inner) CHECK(inner->job_rank(0) == comm->size() - 1);
  }
}

TEST_CASE("a set's engine runs beside the job's") {
  std::unique_ptr<trainrun::Communicator> set = comm->subset({0, 1});
  std::vector<float> world(8, 1.0f), part(8, 2.0f);
  const trainrun::Handle w = trainrun::allreduce_async("world.grad", {world.data(), DataType::Float32, {8}});
  trainrun::Handle s{};
  if (set) s = trainrun::allreduce_async(*set, "set.grad", {part.data(), DataType::Float32, {8}});
  trainrun::synchronize(w);  // the job's first: the set's engine must not wait on it
  if (set) trainrun::synchronize(*set, s);
  CHECK(world[7] == static_cast<float>(comm->size()));
  if (set) CHECK(part[7] == 4.0f);
  CHECK(w.id != s.id);
}

TEST_CASE("bad sets fail on every rank with a message") {
  CHECK_THROWS_WITH_AS(comm->subset({}), doctest::Contains("at least one rank"), trainrun::Error);
  CHECK_THROWS_WITH_AS(comm->subset({0, comm->size()}), doctest::Contains("is not a rank of this"), trainrun::Error);
  CHECK_THROWS_WITH_AS(comm->subset({1, 0, 1}), doctest::Contains("rank 1 appears twice"), trainrun::Error);
  // Ranks that ask for different sets: every rank gets the same Mismatch.
  const std::vector<int> asked = comm->rank() == 0 ? std::vector<int>{0, 1} : std::vector<int>{0};
  CHECK_THROWS_WITH_AS(
      comm->subset(asked),
      doctest::Contains(
          ("rank 0 asked for one set of ranks, rank" + std::string(comm->size() > 2 ? "s" : "") + " 1").c_str()),
      trainrun::Error);
  exercise({0, 1});  // and the next set works
}

int main(int argc, char** argv) {
  if (std::getenv("PROCESS_SETS_DEATH")) {
    // The launcher stops the job when rank 1 dies: the others stay to report.
    std::signal(SIGTERM, SIG_IGN);
    comm = &trainrun::init();
    const auto odd = ranks_where([](int r, int) { return r % 2 == 1; });
    const auto even = ranks_where([](int r, int) { return r % 2 == 0; });
    auto odds = comm->subset(odd);
    auto evens = comm->subset(even);
    if (comm->rank() == 1) _exit(7);
    try {
      trainrun::Communicator& mine = odds ? *odds : *evens;
      std::vector<float> x(100'000, 1.0f);  // no doctest checks outside a test case
      mine.allreduce(x.data(), x.data(), x.size(), DataType::Float32, ReduceOp::Sum);
      std::printf("process_sets: rank %d: its set went on (%g)\n", comm->rank(), x.back());
    } catch (const trainrun::Error& e) {
      std::printf("process_sets: rank %d: failed: %s\n", comm->rank(), e.what());
    }
    std::fflush(stdout);
    _exit(0);
  }
  return trainrun::test::run_on_every_rank(argc, argv, "process_sets", comm);
}
