// The MPI library's version, without linking it: `trainrun --check-build`
// lists it, and the launcher (an agent on every host) must not load libmpi
// and Open MPI's libraries on each start for that (docs/design.md §2).
#pragma once

#include <string>

namespace trainrun::detail {

// The first line of MPI_Get_library_version (callable before MPI_Init), from
// the library this build's headers name, opened at the call; if it cannot
// be opened, the headers' version and why.
std::string mpi_version();

}  // namespace trainrun::detail
