// The ResNet-50 gradient set of the engine benchmarks, read from a file of
// element counts of its float32 tensors, one per line ('#' lines are
// comments), in the order the model declares them
// (tests/bench/resnet50_sizes.txt). Header-only.
#pragma once

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

namespace bench {

inline std::vector<std::size_t> read_tensor_sizes(const char* path) {
  std::ifstream in(path);
  std::vector<std::size_t> counts;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') counts.push_back(std::stoul(line));
  }
  return counts;
}

// One buffer per tensor, as a framework holds them, and all of them packed
// into one buffer; every element 1.
struct GradientSet {
  std::vector<std::size_t> counts;
  std::vector<std::vector<float>> tensors;
  std::vector<float> packed;
};

inline GradientSet load_gradient_set(const char* path) {
  GradientSet set;
  set.counts = read_tensor_sizes(path);
  std::size_t total = 0;
  for (std::size_t c : set.counts) {
    set.tensors.emplace_back(c, 1.0f);
    total += c;
  }
  set.packed.assign(total, 1.0f);
  return set;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace bench
