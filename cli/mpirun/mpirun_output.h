// MpirunOutput: reads what mpirun prints under --tag-output ("[J,R]<stdout>:"
// before each piece of rank R's output, pieces of different ranks run
// together mid-line) and hands each piece to trainrun's OutputRouter as rank
// R's, so that --output-filename, --rank-filter, [rank] tags and
// --timestamp-output do under --launcher mpirun what they do under trainrun's
// own launcher, and lines of different ranks never interleave mid-line.
// Untagged text (mpirun's own messages) goes to stderr line by line, through
// the router so that it stays in order. Pure (no I/O of its own);
// single-threaded; keeps a reference to the router, which must outlive it.
#pragma once

#include <array>
#include <chrono>
#include <string>
#include <string_view>

#include "cli/output/output_router.h"

namespace trainrun::cli {

class MpirunOutput {
 public:
  using Clock = std::chrono::steady_clock;
  explicit MpirunOutput(OutputRouter& router) : router_(router) {}

  // Bytes read from mpirun's stdout (stream 1) or stderr (stream 2).
  void feed(int stream, std::string_view bytes, Clock::time_point now);
  // mpirun's output ended: whatever is held back goes out.
  void finish(Clock::time_point now);

 private:
  // What one of mpirun's streams is in the middle of.
  struct State {
    std::string pending;  // read, not yet handed on
    int rank = -1;        // the rank whose piece is being read; -1: none (a line start)
    int rank_stream = 1;  // that piece's stream
  };
  void parse(State& state, Clock::time_point now, bool at_end);
  // Hands on the first part of `state.pending`; false when it must wait for more.
  bool take_rank_piece(State& state, Clock::time_point now, bool at_end);
  bool take_line_start(State& state, bool at_end);

  OutputRouter& router_;
  std::array<State, 2> states_;
};

}  // namespace trainrun::cli
