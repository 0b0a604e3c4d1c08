#include <doctest/doctest.h>

#include "rendezvous/kv_table.h"

using trainrun::rendezvous::KvTable;

TEST_CASE("set and get") {
  KvTable table;
  CHECK_FALSE(table.get("s/a").has_value());
  table.set("s/a", std::string("\0binary\xff", 8));
  CHECK(table.get("s/a") == std::string("\0binary\xff", 8));
  table.set("s/a", "v2");
  CHECK(table.get("s/a") == "v2");
  CHECK(table.size() == 1);
}

TEST_CASE("add counts from zero and refuses non-integers and overflow") {
  KvTable table;
  CHECK(table.add("s/n", 5) == 5);
  CHECK(table.add("s/n", -7) == -2);
  CHECK(table.get("s/n") == "-2");
  table.set("s/text", "abc");
  CHECK_FALSE(table.add("s/text", 1).has_value());
  CHECK(table.get("s/text") == "abc");
  table.set("s/big", "9223372036854775807");
  CHECK_FALSE(table.add("s/big", 1).has_value());
  CHECK(table.get("s/big") == "9223372036854775807");
}

TEST_CASE("get_or_wait answers at once when every key exists") {
  KvTable table;
  table.set("s/a", "1");
  table.set("s/b", "2");
  bool called = false;
  auto values = table.get_or_wait(
      {"s/a", "s/b"}, [&](const KvTable::SharedValues&) { called = true; }, nullptr);
  REQUIRE(values.has_value());
  CHECK(**values == KvTable::Values{"1", "2"});
  CHECK_FALSE(called);
  CHECK(table.waiter_count() == 0);
}

TEST_CASE("a waiter fires once, when its last key arrives, with values in request order") {
  KvTable table;
  KvTable::Values got;
  int calls = 0;
  KvTable::WaitId id = 0;
  auto now = table.get_or_wait(
      {"s/c", "s/a", "s/b"},
      [&](const KvTable::SharedValues& v) {
        got = *v;
        ++calls;
      },
      &id);
  CHECK_FALSE(now.has_value());
  table.set("s/a", "A");
  table.set("s/b", "B");
  CHECK(calls == 0);
  table.set("s/c", "C");
  CHECK(calls == 1);
  CHECK(got == KvTable::Values{"C", "A", "B"});
  table.set("s/c", "C2");
  CHECK(calls == 1);
  CHECK_FALSE(table.cancel(id));
  CHECK(table.waiter_count() == 0);
}

TEST_CASE("add wakes waiters too") {
  KvTable table;
  int calls = 0;
  table.get_or_wait(
      {"s/n"},
      [&](const KvTable::SharedValues& v) {
        CHECK(v->front() == "3");
        ++calls;
      },
      nullptr);
  table.add("s/n", 3);
  CHECK(calls == 1);
}

TEST_CASE("cancel removes a waiter so it never fires") {
  KvTable table;
  int calls = 0;
  KvTable::WaitId id = 0;
  table.get_or_wait(
      {"s/x"}, [&](const KvTable::SharedValues&) { ++calls; }, &id);
  CHECK(table.waiter_count() == 1);
  CHECK(table.cancel(id));
  table.set("s/x", "1");
  CHECK(calls == 0);
  CHECK(table.waiter_count() == 0);
}

TEST_CASE("many waiters on many keys: all fire, index stays small") {
  KvTable table;
  constexpr int kRanks = 512;
  std::vector<std::string> keys;
  for (int i = 0; i < kRanks; ++i) keys.push_back("mesh/addr." + std::to_string(i));
  int fired = 0;
  std::vector<KvTable::SharedValues> got;
  const KvTable::Keys held = table.intern(keys);  // as a waiting connection holds its list
  for (int i = 0; i < kRanks; ++i) {
    table.get_or_wait(
        keys,
        [&](const KvTable::SharedValues& v) {
          CHECK(v->size() == kRanks);
          got.push_back(v);
          ++fired;
        },
        nullptr);
  }
  for (int i = kRanks - 1; i >= 0; --i) table.set(keys[i], std::to_string(i));
  CHECK(fired == kRanks);
  CHECK(table.waiter_count() == 0);
  // One copy of the 512 values for all 512 waiters, and for a late reader
  // too while the list is held; one list for all of them.
  for (const auto& v : got) CHECK((v == got.front()));
  CHECK(got.front()->back() == "511");
  const auto late = table.get_or_wait(
      keys, [](const KvTable::SharedValues&) {}, nullptr);
  REQUIRE(late.has_value());
  CHECK((*late == got.front()));
  CHECK((table.intern(keys) == held));
}

TEST_CASE("a changed value is never answered from a copy shared before the change") {
  KvTable table;
  table.set("s/a", "1");
  table.set("s/b", "2");
  const auto before = table.get_or_wait(
      {"s/a", "s/b"}, [](const KvTable::SharedValues&) {}, nullptr);
  REQUIRE(before.has_value());
  table.set("s/b", "3");
  const auto after = table.get_or_wait(
      {"s/a", "s/b"}, [](const KvTable::SharedValues&) {}, nullptr);
  REQUIRE(after.has_value());
  CHECK(**before == KvTable::Values{"1", "2"});
  CHECK(**after == KvTable::Values{"1", "3"});
}

TEST_CASE("missing lists absent keys in order") {
  KvTable table;
  table.set("s/b", "");
  CHECK(table.missing({"s/a", "s/b", "s/c"}) == std::vector<std::string>{"s/a", "s/c"});
}
