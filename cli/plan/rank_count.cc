#include "cli/plan/rank_count.h"

#include <string>

#include "cli/plan/printable.h"

namespace trainrun::cli {

CLI::Validator rank_count() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        long long value = 0;
        bool whole = !text.empty() && text.size() <= 9;
        for (char c : text) {
          whole = whole && c >= '0' && c <= '9';
          if (whole) value = value * 10 + (c - '0');
        }
        if (whole && value >= 1 && value <= kMaxRanks) return "";
        return trainrun::cli::quoted(text) + " is not a number of ranks: give a whole number from 1 to " +
               std::to_string(kMaxRanks);
      },
      "1.." + std::to_string(kMaxRanks));
}

}  // namespace trainrun::cli
