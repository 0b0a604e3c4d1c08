#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "cli/agent/cpu_binding.h"

using namespace trainrun::cli;

namespace {

// Two sockets of two cores with two hyperthreads each: cpu i and i+4 are siblings.
CpuTopology two_sockets() {
  CpuTopology t;
  for (int id = 0; id < 8; ++id) t.cpus.push_back({id, (id % 4) / 2, id % 2, (id % 4) / 2});
  return t;
}

}  // namespace

TEST_CASE("cpu lists parse and print like the kernel's") {
  CHECK(parse_cpu_list("0-3,8\n") == std::vector<int>{0, 1, 2, 3, 8});
  CHECK(parse_cpu_list("5") == std::vector<int>{5});
  CHECK(parse_cpu_list("3-1").empty());
  CHECK(parse_cpu_list("x").empty());
  CHECK(format_cpu_list({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
  CHECK(format_cpu_list({}) == "");
}

TEST_CASE("each local rank gets its own core, socket or NUMA node, in CPU order") {
  const CpuTopology t = two_sockets();
  const auto core0 = choose_binding(t, "core", 0);
  REQUIRE(core0);
  CHECK(core0->cpus == std::vector<int>{0, 4});
  CHECK(core0->unit == "core 0");
  CHECK(choose_binding(t, "core", 1)->cpus == std::vector<int>{1, 5});
  CHECK(choose_binding(t, "core", 3)->cpus == std::vector<int>{3, 7});
  CHECK_FALSE(choose_binding(t, "core", 3)->shared);
  CHECK(choose_binding(t, "core", 4)->shared);  // 5 ranks, 4 cores
  CHECK(choose_binding(t, "socket", 1)->cpus == std::vector<int>{2, 3, 6, 7});
  CHECK(choose_binding(t, "socket", 1)->unit == "socket 1");
  CHECK(choose_binding(t, "socket", 2)->unit == "socket 0");  // round-robin, not "shared"
  CHECK(choose_binding(t, "numa", 0)->unit == "NUMA node 0");
  CHECK(choose_binding(t, "hwthread", 0)->cpus == std::vector<int>{0});  // each logical CPU, siblings apart
  CHECK(choose_binding(t, "hwthread", 5)->unit == "hwthread 5");
  CHECK_FALSE(choose_binding(t, "hwthread", 7)->shared);
  CHECK(choose_binding(t, "hwthread", 9)->cpus == std::vector<int>{1});  // 10 ranks, 8 hardware threads
  CHECK(binding_line("9", "h1", choose_binding(t, "hwthread", 9), t) ==
        "trainrun: rank 9 on h1 bound to hwthread 1 (cpus 1), shared: more ranks on this host than hardware threads\n");
  CHECK_FALSE(choose_binding(t, "none", 0));
  CHECK_FALSE(choose_binding(CpuTopology{}, "core", 0));
  CHECK(binding_line("3", "h1", choose_binding(t, "core", 3), t) ==
        "trainrun: rank 3 on h1 bound to core 3 (cpus 3,7)\n");
  CHECK(binding_line("0", "h1", std::nullopt, t) == "trainrun: rank 0 on h1 not bound (cpus 0-7)\n");
}

TEST_CASE("the topology comes from /sys, limited to the CPUs this process may use") {
  const CpuTopology real = read_cpu_topology();
  CHECK_FALSE(real.cpus.empty());
  // A fake /sys: this process's CPUs, all on node 0, with one core per pair.
  char dir[] = "/tmp/trainrun-sys-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  const std::string sys = dir;
  ::mkdir((sys + "/node").c_str(), 0700);
  ::mkdir((sys + "/node/node0").c_str(), 0700);
  std::ofstream(sys + "/node/node0/cpulist") << "0-4095\n";
  ::mkdir((sys + "/cpu").c_str(), 0700);
  for (const auto& cpu : real.cpus) {
    const std::string d = sys + "/cpu/cpu" + std::to_string(cpu.id);
    ::mkdir(d.c_str(), 0700);
    ::mkdir((d + "/topology").c_str(), 0700);
    std::ofstream(d + "/topology/core_id") << cpu.id / 2 << "\n";
    std::ofstream(d + "/topology/physical_package_id") << 0 << "\n";
  }
  const CpuTopology fake = read_cpu_topology(sys);
  REQUIRE(fake.cpus.size() == real.cpus.size());
  for (const auto& cpu : fake.cpus) {
    CHECK(cpu.core == cpu.id / 2);
    CHECK(cpu.node == 0);
  }
  CHECK(std::system(("rm -rf " + sys).c_str()) == 0);
}
