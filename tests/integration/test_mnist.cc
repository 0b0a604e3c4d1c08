// The MNIST example trained end to end by trainrun on real digits: accuracy,
// identical parameters every step, compression, resume. Exits 77 when the
// digits were not fetched (scripts/setup.sh) and converted (scripts/build.sh).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <string>

#include "tests/integration/elastic_steps.h"
#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;

namespace {

std::string g_data;

struct Run {
  ProcessResult result;
  double accuracy = -1;  // the final held-out accuracy, percent
};

Run train(int np, std::vector<std::string> extra, const std::string& checkpoint) {
  std::vector<std::string> args = {"--local",      "-np",  std::to_string(np), program_path("MNIST_TRAIN"),
                                   "--data",       g_data, "--checkpoint",     checkpoint,
                                   "--no-progress"};
  args.insert(args.end(), extra.begin(), extra.end());
  Run run;
  run.result = run_trainrun(args);
  std::smatch m;
  static const std::regex final_line(R"(held-out accuracy ([0-9.]+)% after (\d+) epoch)");
  if (std::regex_search(run.result.out, m, final_line)) run.accuracy = std::stod(m[1]);
  return run;
}

std::string temp_checkpoint(const char* tag) {
  return "/tmp/trainrun-mnist-" + std::to_string(::getpid()) + "-" + tag + ".pt";
}

}  // namespace

TEST_CASE("1 and 2 ranks both reach 95% held-out accuracy in the same 3 epochs, parameters identical every step") {
  const std::string ckpt1 = temp_checkpoint("np1"), ckpt2 = temp_checkpoint("np2");
  const Run one = train(1, {"--epochs", "3"}, ckpt1);
  const Run two = train(2, {"--epochs", "3", "--check-identical"}, ckpt2);
  std::remove(ckpt1.c_str());
  std::remove(ckpt2.c_str());
  CHECK(one.result.exit_code == 0);
  CHECK(two.result.exit_code == 0);
  CAPTURE(one.result.out);
  CAPTURE(two.result.out);
  CHECK(one.accuracy >= 95.0);
  CHECK(two.accuracy >= 95.0);
  CHECK(count(two.result.out, "[0] epoch ") == 3);
  CHECK(contains(two.result.out, "waiting for allreduce"));
}

TEST_CASE("fp16 on the wire stays within 1% of full precision") {
  const std::string a = temp_checkpoint("none"), b = temp_checkpoint("fp16");
  const Run none = train(2, {"--epochs", "3", "--compression", "none"}, a);
  const Run fp16 = train(2, {"--epochs", "3", "--compression", "fp16", "--check-identical"}, b);
  MESSAGE("held-out accuracy after 3 epochs: none " << none.accuracy << "%, fp16 " << fp16.accuracy << "%");
  std::remove(a.c_str());
  std::remove(b.c_str());
  REQUIRE(none.result.exit_code == 0);
  REQUIRE(fp16.result.exit_code == 0);
  CHECK(none.accuracy > 90.0);
  CHECK(std::abs(none.accuracy - fp16.accuracy) <= 1.0);
}

TEST_CASE("rank 0 saves a checkpoint that --resume loads and broadcasts") {
  const std::string ckpt = temp_checkpoint("resume");
  const Run first = train(2, {"--epochs", "1"}, ckpt);
  REQUIRE(first.result.exit_code == 0);
  CHECK(::access(ckpt.c_str(), R_OK) == 0);
  const Run second = train(2, {"--epochs", "2", "--resume", "--check-identical"}, ckpt);
  std::remove(ckpt.c_str());
  CHECK(second.result.exit_code == 0);
  CHECK(contains(second.result.out, "resuming after epoch 1"));
  CHECK(contains(second.result.out, "[0] epoch 2/2: "));
  CHECK_FALSE(contains(second.result.out, "[0] epoch 1/2: "));
  CHECK(second.accuracy > first.accuracy - 1.0);
}

TEST_CASE("--elastic: a rank killed mid-epoch, the survivors finish from the last commit in the same accuracy range") {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  options.timeout = std::chrono::minutes(5);
  const std::string tag = options.env.back();
  Child job({trainrun_bin(), "--local", "-np", "3", "--min-np", "2", program_path("MNIST_TRAIN"), "--data", g_data,
             "--no-progress", "--elastic", "--epochs", "3", "--commit-every", "10"},
            options);
  REQUIRE(job.wait_for_output("[0] epoch 1/3: held-out accuracy", std::chrono::minutes(3)));
  ::usleep(400'000);  // into epoch 2 (an epoch takes about 1.3 s here; later is fine too)
  const pid_t victim = worker_pid(tag, 2);
  REQUIRE(victim > 0);
  ::kill(victim, SIGKILL);
  const ProcessResult r = job.wait();
  CAPTURE(r.out);
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.err, "trainrun: elastic: worker 2 (host "));
  CHECK(contains(r.err, "generation 1: 2 rank(s) on 1 host(s)"));
  CHECK(contains(r.out, "[0] elastic: generation 1, 2 ranks, resuming at epoch "));
  // Each epoch ends once: the survivors went on from the commit, not from the start.
  for (const char* epoch : {"] epoch 1/3: held-out", "] epoch 2/3: held-out", "] epoch 3/3: held-out"}) {
    CHECK_MESSAGE(count(r.out, epoch) == 1, epoch);
  }
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m,
                            std::regex(R"(held-out accuracy ([0-9.]+)% after 3 epoch\(s\); elastic, generation 1)")));
  CHECK(std::stod(m[1]) >= 95.0);
  CHECK(nothing_left(tag));
}

int main(int argc, char** argv) {
  const char* data = std::getenv("MNIST_DATA");
  if (!data || ::access(data, R_OK) != 0) {
    std::printf(
        "test_mnist: skipped: %s is missing (scripts/setup.sh fetches the digits, scripts/build.sh converts them)\n",
        data ? data : "MNIST_DATA");
    return 77;
  }
  g_data = data;
  doctest::Context context(argc, argv);
  return context.run();
}
