// Files the launcher writes whole or not at all (the JSON report, stack
// dumps): readers see the old file or the whole new one, never a part.
#pragma once

#include <string>

namespace trainrun::cli {

// Writes `text` to `path` through a temporary file in the same directory
// (an unpredictable name, created exclusively: a link planted there is
// never followed) and rename(), which replaces a link at `path` rather than
// writing through it. Returns "" or the error's text ("No space left on
// device"); on an error nothing is left of the temporary file.
std::string write_atomically(const std::string& path, const std::string& text);

}  // namespace trainrun::cli
