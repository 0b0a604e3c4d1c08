// The main of a doctest program that runs on every rank of a job
// (conformance, engine_multirank): starts the communicator, runs the test
// cases, and makes every rank exit with the verdict of all ranks, so that a
// failure on any rank fails the job. Include from exactly one file, after
// DOCTEST_CONFIG_IMPLEMENT and <doctest/doctest.h>.
#pragma once

#include <trainrun/trainrun.h>

#include <cstdint>
#include <cstdio>

namespace trainrun::test {

// `comm` is set before any test case runs; `label` is added to the verdict
// line after the backend's name.
inline int run_on_every_rank(int argc, char** argv, const char* program, Communicator*& comm, const char* label = "") {
  try {
    comm = &init();
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  context.setOption("no-version", true);
  const std::int32_t mine = context.run() != 0 ? 1 : 0;
  std::int32_t any = 0;
  comm->allreduce(&mine, &any, 1, DataType::Int32, ReduceOp::Max);
  std::printf("%s: rank %d of %d (%s%s): %s\n", program, comm->rank(), comm->size(), comm->backend_name().c_str(),
              label, any ? "FAILED" : "passed");
  shutdown();
  return any ? 1 : 0;
}

}  // namespace trainrun::test
