// The example programs as users run them: `--help` prints the usage and
// exits 0, a bad value is one line and exit 2 (CLI11, as trainrun), every
// spelling the docs and scripts use still works, and mnist_train finds its
// data from any working directory. The data case exits 77 (skip) when
// EXAMPLES_NEED_DATA is set and data/mnist/mnist.bin is missing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <unistd.h>

#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/integration/process_runner.h"

using namespace trainrun::test;

namespace {

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

int lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

std::string mnist_train() {
  const char* path = std::getenv("MNIST_TRAIN");
  return path ? path : "";
}

// One line naming the program and the option, exit 2, nothing on stdout.
void check_usage_error(const std::vector<std::string>& argv, const std::string& line) {
  const ProcessResult r = run_process(argv);
  INFO(argv[1]);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(lines(r.err) == 1);
  CHECK(r.err == line);
}

}  // namespace

TEST_CASE("allreduce_bench: --help, bad values, and the spellings in use") {
  const std::string bench = program_path("ALLREDUCE_BENCH");
  const ProcessResult help = run_process({bench, "--help"});
  CHECK(help.exit_code == 0);
  CHECK(contains(help.out, "Usage: allreduce_bench [OPTIONS]"));
  for (const char* option : {"--min-bytes", "--max-bytes", "--factor", "--iters", "--warmup", "--dtype", "--op",
                             "--collective", "--device", "--in-place", "--csv"}) {
    CHECK_MESSAGE(contains(help.out, option), option);
  }
  check_usage_error(
      {bench, "--factor", "x"},
      "allreduce_bench: error: --factor: Value x not in range 2 to 1048576 (see allreduce_bench --help)\n");
  check_usage_error({bench, "--min-bytes", "1Q"},
                    "allreduce_bench: error: --min-bytes: '1Q' is not a size in bytes (e.g. 4, 64K, 256M, 1G) "
                    "(see allreduce_bench --help)\n");
  check_usage_error({bench, "--iters"},
                    "allreduce_bench: error: --iters: 1 required INT:INT in [1 - 1073741824] "
                    "missing (see allreduce_bench --help)\n");
  check_usage_error({bench, "--min-bytes", "1K", "--max-bytes", "4"},
                    "allreduce_bench: error: --min-bytes exceeds --max-bytes\n");
  check_usage_error({bench, "--in-place", "--collective", "allgather"},
                    "allreduce_bench: error: --in-place is for --collective allreduce\n");
  const ProcessResult in_place = run_process({bench, "--in-place", "--max-bytes", "64", "--iters", "2", "--csv"});
  CHECK(in_place.exit_code == 0);
  CHECK(contains(in_place.out, "\n64,16,float32,sum,2,"));
  // What scripts/, tests/bench and the README run (one rank, no launcher).
  const ProcessResult r = run_process(
      {bench, "--min-bytes", "4",     "--max-bytes", "16",  "--factor",     "4",         "--iters",  "2",    "--warmup",
       "0",   "--dtype",     "int32", "--op",        "max", "--collective", "allreduce", "--device", "host", "--csv"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("bytes,count,type,op,iters,time_us,p50_us,algbw_gbs,busbw_gbs\n4,1,int32,max,2,", 0) == 0);
  CHECK(contains(r.out, "\n16,4,int32,max,2,"));
}

TEST_CASE("mnist_train: --help and bad values") {
  if (mnist_train().empty()) {
    MESSAGE("skipped: built without LibTorch (no mnist_train)");
    return;
  }
  const ProcessResult help = run_process({mnist_train(), "--help"});
  CHECK(help.exit_code == 0);
  CHECK(contains(help.out, "Usage: mnist_train [OPTIONS]"));
  for (const char* option : {"--data", "--epochs", "--batch-size", "--lr", "--momentum", "--seed", "--checkpoint",
                             "--resume", "--compression", "--backward-passes", "--check-identical", "--no-progress",
                             "--threads", "--elastic", "--commit-every"}) {
    CHECK_MESSAGE(contains(help.out, option), option);
  }
  check_usage_error({mnist_train(), "--epochs", "two"},
                    "mnist_train: error: --epochs: 'two' is not a whole number above 0 (see mnist_train --help)\n");
  check_usage_error({mnist_train(), "--lr", "-1"},
                    "mnist_train: error: --lr: '-1' is not a number above 0 (see mnist_train --help)\n");
  check_usage_error({mnist_train(), "--compression", "zip"},
                    "mnist_train: error: --compression: zip not in {none,fp16,bf16} (see mnist_train --help)\n");
  check_usage_error({mnist_train(), "--elastic", "--resume"},
                    "mnist_train: error: --elastic keeps its state in memory: no --resume or --backward-passes\n");
}

TEST_CASE("mnist_train finds its data from another working directory") {
  if (mnist_train().empty()) {
    MESSAGE("skipped: built without LibTorch (no mnist_train)");
    return;
  }
  char dir[] = "/tmp/trainrun-mnist-cwd.XXXXXX";
  REQUIRE(::mkdtemp(dir));
  // One rank, no launcher; stopped once it printed what it loaded.
  Child job(
      {"/bin/sh", "-c", "cd \"$0\" && exec \"$1\" --epochs 1 --no-progress --checkpoint ckpt.pt", dir, mnist_train()},
      ProcessOptions{});
  CHECK(job.wait_for_output("training digits", std::chrono::seconds(120)));
  job.signal(SIGKILL);
  const ProcessResult r = job.wait();
  CHECK_FALSE(contains(r.err, "no MNIST data"));
  CHECK_FALSE(contains(r.err, "cannot open"));
  std::system((std::string("rm -rf ") + dir).c_str());
}

int main(int argc, char** argv) {
  if (std::getenv("EXAMPLES_NEED_DATA") && !mnist_train().empty()) {
    const char* data = std::getenv("MNIST_DATA");
    if (!data || ::access(data, R_OK) != 0) {
      std::printf("SKIP: no %s (scripts/setup.sh fetches the digits, scripts/build.sh converts them)\n",
                  data ? data : "MNIST_DATA");
      return 77;
    }
  }
  doctest::Context context(argc, argv);
  return context.run();
}
