#include "mnist_options.h"

#include "../example_cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace mnist {
namespace {

// A number above zero (whole when `whole`), refused in one short sentence.
CLI::Validator positive(bool whole) {
  return CLI::Validator(
      [whole](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        const bool ok = !text.empty() && *end == '\0' && value > 0 && value < 1e9 &&
                        (!whole || text.find_first_not_of("0123456789") == std::string::npos);
        return ok ? "" : "'" + text + "' is not a " + (whole ? "whole number" : "number") + " above 0";
      },
      whole ? "N>0" : "X>0");
}

}  // namespace

std::optional<Config> parse_options(int argc, char** argv, int& exit_code) {
  Config c;
  CLI::App app(
      "mnist_train: a LibTorch CNN trained on MNIST by every rank of a trainrun job "
      "(trainrun --local -np 4 mnist_train)",
      "mnist_train");
  app.add_option("--data", c.data,
                 "The digits (mnist.bin); default: ./data/mnist/mnist.bin, then the "
                 "source tree's, then the installed copy");
  app.add_option("--epochs", c.epochs, "Passes over the training set")->check(positive(true))->capture_default_str();
  app.add_option("--batch-size", c.batch_size, "Images per rank and step")
      ->check(positive(true))
      ->capture_default_str();
  app.add_option("--lr", c.lr, "Learning rate before scaling by the number of ranks")
      ->check(positive(false))
      ->capture_default_str();
  app.add_option("--momentum", c.momentum, "SGD momentum, 0 to 1")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--seed", c.seed, "Random seed")->capture_default_str();
  app.add_option("--checkpoint", c.checkpoint, "Rank 0 saves here after each epoch")->capture_default_str();
  app.add_flag("--resume", c.resume, "Start from --checkpoint");
  std::string compression = "none";
  app.add_option("--compression", compression, "Gradients on the wire: none, fp16 or bf16")
      ->check(CLI::IsMember({"none", "fp16", "bf16"}))
      ->capture_default_str();
  app.add_option("--backward-passes", c.backward_passes, "Local steps per averaged step")
      ->check(positive(true))
      ->capture_default_str();
  app.add_flag("--check-identical", c.check_identical,
               "After every step, fail unless every rank holds the same parameters");
  app.add_flag(
      "--no-progress", [&c](std::int64_t) { c.progress = false; }, "No per-batch progress line");
  app.add_option("--threads", c.threads, "LibTorch threads per rank (default: cores / local ranks)")
      ->check(CLI::Range(0, 4096));
  app.add_flag("--elastic", c.elastic,
               "Train under trainrun::elastic::run (trainrun --min-np/--max-np): ranks may die or join");
  app.add_option("--commit-every", c.commit_every, "Elastic: commit the state every N batches")
      ->check(positive(true))
      ->capture_default_str();
  if (!examples::parse_cli(app, argc, argv, exit_code)) return std::nullopt;
  const std::map<std::string, trainrun::torch::Compression> compressions = {
      {"none", trainrun::torch::Compression::None},
      {"fp16", trainrun::torch::Compression::Float16},
      {"bf16", trainrun::torch::Compression::BFloat16}};
  c.compression = compressions.at(compression);
  if (c.elastic && (c.backward_passes != 1 || c.resume)) {
    std::fprintf(stderr, "mnist_train: error: --elastic keeps its state in memory: no --resume or --backward-passes\n");
    exit_code = 2;
    return std::nullopt;
  }
  return c;
}

std::vector<std::string> data_candidates() { return {"data/mnist/mnist.bin", MNIST_SOURCE_DATA, MNIST_INSTALLED_DATA}; }

std::string find_data(const Config& config, std::string& why) {
  if (!config.data.empty()) return config.data;
  std::string tried;
  for (const std::string& path : data_candidates()) {
    if (::access(path.c_str(), R_OK) == 0) return path;
    tried += (tried.empty() ? "" : ", ") + path;
  }
  why = "no MNIST data (tried " + tried + "): run scripts/setup.sh and scripts/build.sh, or give --data FILE";
  return "";
}

}  // namespace mnist
