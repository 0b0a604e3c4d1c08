// shutdown_cause (lib/engine/shutdown_cause.h).
#include "lib/engine/shutdown_cause.h"

#include <cstdint>
#include <vector>

#include "trainrun/error.h"

namespace trainrun::detail {

std::string shutdown_cause(Backend& backend, bool requested_here, int size) {
  const std::uint8_t mine = requested_here ? 1 : 0;
  std::vector<std::uint8_t> all(static_cast<std::size_t>(size));
  try {
    backend.allgather(&mine, all.data(), 1, DataType::UInt8);
  } catch (const Error&) {
    return "the engine was shut down (trainrun::shutdown() was called on some rank)";
  }
  std::string ranks;
  int count = 0;
  for (int r = 0; r < size; ++r) {
    if (all[static_cast<std::size_t>(r)]) ranks += (count++ ? ", " : "") + std::to_string(r);
  }
  if (count == size) return "the engine was shut down (trainrun::shutdown() was called on every rank)";
  return "the engine was shut down by rank" + std::string(count > 1 ? "s " : " ") + ranks +
         " (trainrun::shutdown(), which a program calls on its way out, also after an error of its own)";
}

}  // namespace trainrun::detail
