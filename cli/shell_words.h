// Quoting words for a POSIX shell, for commands trainrun prints (--dry-run,
// --verbose) so that they can be pasted back as they are. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainrun::cli {

// 'it'\''s' style quoting, and none for words made of safe characters only.
std::string shell_quote(std::string_view word);
std::string shell_join(const std::vector<std::string>& words);

}  // namespace trainrun::cli
