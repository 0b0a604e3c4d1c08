// Where allreduce across hosts changes algorithm (contract/switch_points.h):
// the cost model's choices, the override's grammar, and the --verbose text.
#include <doctest/doctest.h>

#include "contract/switch_points.h"

using namespace trainrun::detail;

TEST_CASE("2 hosts x 2 ranks: two-level at every size, local rank 0 carrying the host's sum below 128 KiB") {
  const SwitchPoints p = model_switch_points(2, 2);
  CHECK(p.two_level_min == 0);
  CHECK(p.leader_min == 0);  // replicated only by override
  CHECK(p.split_min == 128 * 1024);
  CHECK(p.chunk_bytes == 256 * 1024);
  // Allgather: replicated where allreduce's replicated would beat split (8 KiB), times the hosts.
  CHECK(p.allgather_split_min == 16 * 1024);
  // Reducescatter: local rank 0 carries the host's share below where allreduce's does.
  CHECK(p.reducescatter_split_min == 128 * 1024);
  CHECK(model_switch_points(4, 4).reducescatter_split_min < model_switch_points(4, 4).split_min);
  // More ranks per host make the leader's shared-memory allreduce of the whole message dearer.
  CHECK(model_switch_points(2, 8).split_min < p.split_min);
  // 3 hosts: the split's blocks cross by recursive doubling with a fold (3
  // steps) below 64 KiB, so it starts where they reach the ring's 64 KiB.
  CHECK(model_switch_points(3, 2).split_min == 128 * 1024);
  CHECK(model_switch_points(4, 2).split_min <= p.split_min);
}

TEST_CASE("among a host count that is no power of two the crossing rings from 16 KiB") {
  CHECK(cross_ring_min(3) == 16 * 1024);
  CHECK(cross_ring_min(6) == 16 * 1024);
  CHECK(cross_ring_min(2) == 256 * 1024);  // direct_allreduce's own: 2 hosts, one exchange
  CHECK(cross_ring_min(4) == 64 * 1024);
}

TEST_CASE("one rank per host, or one host, never goes two-level") {
  CHECK(model_switch_points(2, 1).two_level_min == SwitchPoints::kNever);
  CHECK(model_switch_points(1, 4).two_level_min == SwitchPoints::kNever);
  CHECK(describe(model_switch_points(4, 1)) == "TCP mesh at every size");
}

TEST_CASE("an override replaces the parts it names and keeps the model's others") {
  std::string error;
  const auto p = switch_points(2, 2, "two-level=4K,chunk=2M", error);
  REQUIRE(p);
  CHECK(p->two_level_min == 4096);
  CHECK(p->split_min == 128 * 1024);
  CHECK(p->chunk_bytes == 2 * 1024 * 1024);
  const auto replicated = switch_points(2, 2, "leader=4K", error);
  REQUIRE(replicated);
  CHECK(replicated->leader_min == 4096);
  CHECK(switch_points(2, 2, "leader=never", error)->leader_min == SwitchPoints::kNever);
  CHECK(switch_points(2, 2, "reducescatter-split=16K", error)->reducescatter_split_min == 16 * 1024);
  const auto never = switch_points(2, 2, "two-level=never", error);
  REQUIRE(never);
  CHECK(never->two_level_min == SwitchPoints::kNever);
  const auto empty = switch_points(2, 2, "", error);
  REQUIRE(empty);
  CHECK(empty->split_min == 128 * 1024);
}

TEST_CASE("a bad override names the part that is wrong") {
  std::string error;
  CHECK(!switch_points(2, 2, "two-level=4X", error));
  CHECK(error == "'two-level=4X': the value is not a size in bytes (e.g. 64K, 1M)");
  CHECK(!switch_points(2, 2, "ring=4K", error));
  CHECK(error ==
        "'ring=4K': expected two-level=SIZE|never, leader=SIZE|never, split=SIZE, reducescatter-split=SIZE or "
        "chunk=SIZE (at least 4K)");
  CHECK(!switch_points(2, 2, "reducescatter-split=never", error));
  CHECK(!switch_points(2, 2, "chunk=1K", error));
  CHECK(!switch_points(2, 2, "split=never", error));
  CHECK(!switch_points(2, 2, "split", error));
}

TEST_CASE("--verbose says where each switch is") {
  std::string error;
  CHECK(describe(model_switch_points(2, 2)) ==
        "two-level with local rank 0 carrying the host's sum across below 128 KiB, two-level with each local rank "
        "carrying 1/L across from 128 KiB (pipelined in 256 KiB chunks)");
  CHECK(describe(*switch_points(2, 2, "two-level=64K,split=8K", error)) ==
        "TCP mesh below 64 KiB, two-level with each local rank carrying 1/L across from 64 KiB (pipelined "
        "in 256 KiB chunks)");
  CHECK(describe(*switch_points(2, 2, "leader=1K,split=8K", error)) ==
        "two-level with every local rank carrying the host's sum across below 1 KiB, two-level with local rank 0 "
        "carrying the host's sum across below 8 KiB, two-level with each local rank carrying 1/L across from 8 KiB "
        "(pipelined in 256 KiB chunks)");
  CHECK(byte_size_text(1536) == "1536 B");
  CHECK(byte_size_text(3u << 30) == "3 GiB");
}
