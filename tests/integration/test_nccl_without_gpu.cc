// The NCCL build on a host without a GPU, as a user meets it: trainrun and
// the programs start (nothing links NCCL or CUDA), --check-build says why
// NCCL cannot run, and a job that insists on NCCL fails at once on every
// rank with that reason, through the real rendezvous, leaving nothing behind.
#include <doctest/doctest.h>

#include <string>

#include "tests/integration/process_runner.h"

using namespace trainrun::test;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string check_build() {
  const ProcessResult r = run_process({program_path("TRAINRUN_BIN"), "--check-build"});
  CHECK(r.exit_code == 0);
  return r.out;
}

}  // namespace

TEST_CASE("trainrun and programs linked with libtrainrun.a do not link NCCL or CUDA") {
  for (const char* variable : {"TRAINRUN_BIN", "CONFORMANCE", "CONFORMANCE_CUDA"}) {
    const ProcessResult r = run_process({program_path("READELF"), "-d", program_path(variable)});
    REQUIRE(r.exit_code == 0);
    CAPTURE(variable);
    CHECK(contains(r.out, "(NEEDED)"));
    CHECK_FALSE(contains(r.out, "libnccl"));
    CHECK_FALSE(contains(r.out, "libcuda"));
    CHECK_FALSE(contains(r.out, "libcudart"));
  }
}

TEST_CASE("--check-build lists nccl with its version, and whether it can run here") {
  const std::string out = check_build();
  const std::size_t line = out.find("  nccl\t");
  REQUIRE_MESSAGE(line != std::string::npos, out);
  const std::string nccl = out.substr(line, out.find('\n', line) - line);
  const bool named = contains(nccl, "NCCL 2.") || contains(nccl, "not usable here: NCCL is not installed");
  const bool verdict = contains(nccl, ", CUDA driver ") || contains(nccl, "here: ");
  CHECK_MESSAGE(named, nccl);
  CHECK_MESSAGE(verdict, nccl);
}

TEST_CASE("--backend nccl where NCCL cannot run: every rank says why, nothing is left") {
  const std::string build = check_build();
  if (contains(build, ", CUDA driver ")) {
    MESSAGE("skipped: NCCL can run on this host");
    return;
  }
  ProcessOptions options;
  options.env.push_back(unique_tag());
  const ProcessResult r = run_process(
      {program_path("TRAINRUN_BIN"), "--local", "-np", "2", "--backend", "nccl", program_path("CONFORMANCE")}, options);
  CHECK(r.exit_code == 1);
  const std::string all = r.out + r.err;
  CAPTURE(all);
  // The ranks heard from each other through the rendezvous: each names both.
  // (The launcher may stop the second rank before it prints.)
  CHECK(count(all, "init: TRAINRUN_BACKEND=nccl but NCCL cannot run on rank 0 (") >= 1);
  CHECK(contains(all, "), rank 1 ("));
  CHECK(r.seconds < 30);
  CHECK(processes_with_env(options.env.back()).empty());
}
