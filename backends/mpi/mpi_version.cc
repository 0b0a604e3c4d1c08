#include "backends/mpi/mpi_version.h"

#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace trainrun::detail {
namespace {

// The soname of the library behind these headers (a program linked with it
// already has it loaded: dlopen then returns that copy), and the version
// the headers give.
#if defined(OPEN_MPI)
constexpr const char* kLibrary = "libmpi.so.40";
std::string headers_version() {
  return "Open MPI v" + std::to_string(OMPI_MAJOR_VERSION) + "." + std::to_string(OMPI_MINOR_VERSION) + "." +
         std::to_string(OMPI_RELEASE_VERSION);
}
#elif defined(MPICH_VERSION)
constexpr const char* kLibrary = "libmpi.so.12";
std::string headers_version() { return std::string("MPICH Version: ") + MPICH_VERSION; }
#else
constexpr const char* kLibrary = "libmpi.so";
std::string headers_version() { return "MPI " + std::to_string(MPI_VERSION) + "." + std::to_string(MPI_SUBVERSION); }
#endif

}  // namespace

std::string mpi_version() {
  // Never closed: an MPI library is not made to be unloaded.
  void* library = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!library) return headers_version() + " headers (" + kLibrary + " does not load: " + ::dlerror() + ")";
  using GetVersion = int (*)(char*, int*);
  const auto get = reinterpret_cast<GetVersion>(::dlsym(library, "MPI_Get_library_version"));
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (!get || get(text, &length) != MPI_SUCCESS) return headers_version() + " headers (" + kLibrary + ": no version)";
  // Open MPI counts the terminating NUL in `length`; it must not reach output.
  std::string version(text, ::strnlen(text, static_cast<std::size_t>(length)));
  version.erase(std::min(version.find('\n'), version.size()));
  version.erase(version.find_last_not_of(" \t") + 1);
  return version;
}

}  // namespace trainrun::detail
