// A double as the shortest decimal that reads back as the same value
// ("2.5", "30", "0.1"): for messages and for values put in environment
// variables. Pure, header-only.
#pragma once

#include <charconv>
#include <string>

namespace trainrun::detail {

inline std::string shortest_decimal(double v) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, result.ptr);
}

}  // namespace trainrun::detail
