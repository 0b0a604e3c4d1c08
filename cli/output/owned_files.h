// Folders and files trainrun writes for the user (--output-filename's
// rank.NN/stdout and stderr; the report's temporary file) as a careful
// root would write them in a folder others may write to: never through a
// symbolic link someone planted, never into a folder or file another user
// owns (refused in one line, as ssh's StrictModes refuses), never
// truncating a file before it is known to be this user's. Stateless; each
// call throws Error(Io) with one line naming the path and why.
#pragma once

#include <string>

#include "os/unique_fd.h"

namespace trainrun::cli {

// mkdir -p `path` (mode 0755 for what it creates); the folder itself, which
// the user named, may be reached through links, but must be owned by this
// user or by root. `what` starts the message ("--output-filename").
void make_user_directory(const std::string& path, const char* what);
// mkdir `path` inside a checked folder: it must be a real folder (not a
// link) of this user's, whether made now or there before.
void make_own_directory(const std::string& path, const char* what);
// Opens `path` for writing, creating it (0644): never a link, never a file
// of another user; emptied unless `append`.
UniqueFd open_own_file(const std::string& path, bool append, const char* what);

}  // namespace trainrun::cli
