// The ResNet-50 gradient set of the engine benchmarks: element counts of its
// float32 tensors, one per line ('#' lines are comments), in the order the
// model declares them (tests/bench/resnet50_sizes.txt). Header-only.
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

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace bench
