// mnist_train's command line: the settings, parsed with CLI11 (as trainrun
// itself does). `--help` prints the usage; a bad value is one line on
// stderr and exit status 2. Also finds the MNIST data when --data is not
// given. Not thread-safe (run once, in main).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <trainrun/torch.h>

namespace mnist {

struct Config {
  std::string data;  // --data; empty: the first of data_candidates() that exists
  int epochs = 3;
  int batch_size = 32;
  double lr = 0.025;
  double momentum = 0.9;
  std::uint64_t seed = 1;
  std::string checkpoint = "mnist-checkpoint.pt";
  bool resume = false;
  trainrun::torch::Compression compression = trainrun::torch::Compression::None;
  int backward_passes = 1;
  bool check_identical = false;
  bool progress = true;
  int threads = 0;
  bool elastic = false;
  int commit_every = 20;
};

// The config, or the exit status to end with: 0 after --help, 2 after a
// usage error (printed as one line).
std::optional<Config> parse_options(int argc, char** argv, int& exit_code);

// Where the data is looked for without --data, in order: ./data/mnist/mnist.bin,
// the source tree this program was built from, the installed share directory.
std::vector<std::string> data_candidates();

// --data, else the first candidate that exists; "" and a one-line reason in
// `why` when there is none.
std::string find_data(const Config& config, std::string& why);

}  // namespace mnist
