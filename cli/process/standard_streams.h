// trainrun's own stdin, stdout and stderr. Started with one of them closed
// (`trainrun ... <&-`, a daemon's child), the next descriptor trainrun opens
// would take its number: the rendezvous server's eventfd became "stdin", and
// forwarding stdin to rank 0 blocked on it forever, Ctrl-C and SIGTERM
// included. Stateless; call once, first thing in main.
#pragma once

namespace trainrun::cli {

// Opens /dev/null onto each of 0, 1, 2 that is closed (read-only for 0,
// write-only for 1 and 2); they stay open for the life of the process.
// False (errno says why) when /dev/null cannot be opened.
bool open_standard_streams();

}  // namespace trainrun::cli
