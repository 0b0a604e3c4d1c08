#include <doctest/doctest.h>

#include "cli/report/stack_text.h"

using namespace trainrun::cli::report;

namespace {

// eu-stack -m output of a process with a main thread and two alike workers.
std::string sleeping(int pid, const std::string& base) {
  return "PID " + std::to_string(pid) +
         " - process rank_program\n"
         "TID " +
         std::to_string(pid) +
         ":\n"
         "#0  0x" +
         base +
         "1503 clock_nanosleep@GLIBC_2.2.5 - /usr/lib/x86_64-linux-gnu/libc.so.6\n"
         "#1  0x" +
         base +
         "5e53 __nanosleep - /usr/lib/x86_64-linux-gnu/libc.so.6\n"
         "#2  0x" +
         base +
         "64af - /work/build/tests/rank_program\n"
         "#3  0x" +
         base +
         "624a main - /work/build/tests/rank_program\n"
         "TID " +
         std::to_string(pid + 1) +
         ":\n"
         "#0  0x" +
         base +
         "2000 poll - /usr/lib/x86_64-linux-gnu/libc.so.6\n"
         "TID " +
         std::to_string(pid + 2) +
         ":\n"
         "#0  0x" +
         base + "2004 poll - /usr/lib/x86_64-linux-gnu/libc.so.6\n";
}

std::string locked(int pid) {
  return "PID " + std::to_string(pid) +
         " - process rank_program\n"
         "TID " +
         std::to_string(pid) +
         ":\n"
         "#0  0x00007f0000001111 __lll_lock_wait - /usr/lib/x86_64-linux-gnu/libc.so.6\n"
         "#1  0x00007f0000002222 pthread_mutex_lock@@GLIBC_2.2.5 - /usr/lib/x86_64-linux-gnu/libc.so.6\n";
}

}  // namespace

TEST_CASE("a frame keeps its symbol, without address, index or symbol version") {
  CHECK(normalize_frame("#0  0x00007f0b3407a503 clock_nanosleep@GLIBC_2.2.5") == "clock_nanosleep");
  CHECK(normalize_frame("#6  0x00007f0b33fd2305 __libc_start_main@@GLIBC_2.34 - /lib/libc.so.6") ==
        "__libc_start_main");
  CHECK(normalize_frame("#12 0x0000556478cda767 execute_command_internal") == "execute_command_internal");
  CHECK(normalize_frame("#2  0x0000564381aba4af") == "??");
  CHECK(normalize_frame("#2  0x0000564381aba4af - /usr/bin/sleep") == "?? (sleep)");
  CHECK(normalize_frame("#1  0x00005555 trainrun::Communicator::allreduce(void const*, void*) - /x/prog") ==
        "trainrun::Communicator::allreduce(void const*, void*)");
}

TEST_CASE("stacks of different processes at different addresses normalize to the same text") {
  const std::string a = normalize_stacks(sleeping(100, "00007f00000"));
  const std::string b = normalize_stacks(sleeping(2000, "00007faaaaa"));
  CHECK(a == b);
  CHECK(a ==
        "  thread 1:\n    clock_nanosleep\n    __nanosleep\n    ?? (rank_program)\n    main\n"
        "  threads 2-3 (2 alike):\n    poll\n");
  CHECK(normalize_stacks("") == "  (no stack)\n");
}

TEST_CASE("a rank with children lists each process with its name") {
  const std::string text = normalize_stacks(sleeping(100, "00007f00000") + locked(300));
  CHECK(text.find("process 1 (rank_program):\n  thread 1:\n    clock_nanosleep") == 0);
  CHECK(text.find("child process 2 (rank_program):\n  thread 1:\n    __lll_lock_wait\n    pthread_mutex_lock\n") !=
        std::string::npos);
}

TEST_CASE("rank lists collapse runs into ranges") {
  CHECK(rank_ranges({0, 1, 2, 5}) == "0-2,5");
  CHECK(rank_ranges({3}) == "3");
  CHECK(rank_ranges({0, 2, 3, 4, 7, 8}) == "0,2-4,7-8");
  CHECK(rank_ranges({}) == "");
}

TEST_CASE("equal stacks group with their ranks and hosts; a deadlocked rank stands alone") {
  const std::vector<RankStacks> ranks = {
      {3, "h2", sleeping(400, "00007f11111"), false}, {2, "h2", locked(300), false},
      {0, "h1", sleeping(100, "00007f22222"), false}, {1, "h1", sleeping(200, "00007f33333"), false},
      {5, "h2", sleeping(600, "00007f44444"), false}, {4, "h2", "ptrace was refused", true}};
  const std::vector<StackGroup> groups = group_stacks(ranks);
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].ranks == std::vector<int>{0, 1, 3, 5});
  CHECK(groups[0].hosts == std::vector<std::string>{"h1", "h2"});
  CHECK(groups[1].ranks == std::vector<int>{2});
  CHECK(groups[2].note);
  CHECK(format_group(groups[0]).find("ranks 0-1,3,5 (h1, h2):\n  thread 1:\n    clock_nanosleep\n") == 0);
  CHECK(format_group(groups[1]) == "rank 2 (h2):\n  thread 1:\n    __lll_lock_wait\n    pthread_mutex_lock\n");
  CHECK(format_group(groups[2]) == "rank 4 (h2): no stack: ptrace was refused\n");
}
