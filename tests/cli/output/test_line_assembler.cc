#include <doctest/doctest.h>

#include <vector>

#include "cli/output/line_assembler.h"
#include "cli/plan/shell_words.h"

using namespace trainrun::cli;
using Clock = LineAssembler::Clock;

namespace {

struct Sink {
  std::vector<std::pair<std::string, bool>> pieces;
  LineAssembler::Emit emit() {
    return [this](std::string_view piece, bool continues) { pieces.emplace_back(std::string(piece), continues); };
  }
};

}  // namespace

TEST_CASE("whole lines come out as soon as they end; partial ones wait") {
  LineAssembler a;
  Sink sink;
  const auto t = Clock::now();
  a.feed("one\ntw", t, sink.emit());
  a.feed("o\nthr", t, sink.emit());
  CHECK(sink.pieces == std::vector<std::pair<std::string, bool>>{{"one\n", false}, {"two\n", false}});
  CHECK(a.has_partial());
}

TEST_CASE("\\r ends a progress update, \\r\\n is one line end even across chunks") {
  LineAssembler a;
  Sink sink;
  const auto t = Clock::now();
  a.feed("10%\r20%\r", t, sink.emit());
  a.feed("\ndone\r", t, sink.emit());
  a.feed("\n", t, sink.emit());
  CHECK(sink.pieces ==
        std::vector<std::pair<std::string, bool>>{{"10%\r", false}, {"20%\r\n", false}, {"done\r\n", false}});
  LineAssembler b;
  Sink other;
  b.feed("x\r", t, other.emit());
  b.feed("y\n", t, other.emit());
  CHECK(other.pieces == std::vector<std::pair<std::string, bool>>{{"x\r", false}, {"y\n", false}});
}

TEST_CASE("an unfinished line goes out after the hold time, and its rest continues it") {
  LineAssembler a;
  Sink sink;
  const auto t = Clock::now();
  a.feed("Password: ", t, sink.emit());
  a.flush(t + std::chrono::milliseconds(50), std::chrono::milliseconds(100), sink.emit());
  CHECK(sink.pieces.empty());
  a.flush(t + std::chrono::milliseconds(150), std::chrono::milliseconds(100), sink.emit());
  a.feed("ok\n", t, sink.emit());
  CHECK(sink.pieces == std::vector<std::pair<std::string, bool>>{{"Password: ", false}, {"ok\n", true}});
}

TEST_CASE("a huge line without an end is cut at the limit") {
  LineAssembler a;
  Sink sink;
  a.feed(std::string(LineAssembler::kMaxPartial + 10, 'x'), Clock::now(), sink.emit());
  REQUIRE(sink.pieces.size() == 1);
  CHECK(sink.pieces[0].first.size() == LineAssembler::kMaxPartial + 10);
}

TEST_CASE("shell quoting round-trips what a shell would split") {
  CHECK(shell_quote("plain-word_1.2/x") == "plain-word_1.2/x");
  CHECK(shell_quote("a b") == "'a b'");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  CHECK(shell_quote("$(rm);") == "'$(rm);'");
  CHECK(shell_quote("") == "''");
  CHECK(shell_join({"a", "b c"}) == "a 'b c'");
}
