#include "backends/nccl/shared_library.h"

#include <dlfcn.h>
#include <link.h>

namespace trainrun::detail {

std::optional<SharedLibrary> SharedLibrary::open(const char* soname, const std::string& fallback_dir,
                                                 std::string& error) {
  // RTLD_LOCAL: NCCL's and the driver's symbols must not interpose on the program's.
  if (void* handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL)) return SharedLibrary(handle);
  const char* reason = ::dlerror();
  error = reason ? reason : std::string(soname) + ": cannot be loaded";
  if (!fallback_dir.empty()) {
    const std::string path = fallback_dir + "/" + soname;
    if (void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return SharedLibrary(handle);
  }
  return std::nullopt;
}

bool SharedLibrary::is_loaded(const char* soname) {
  void* handle = ::dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  if (handle) ::dlclose(handle);  // drops only the reference NOLOAD added
  return handle != nullptr;
}

unsigned long long SharedLibrary::loads_so_far() {
  unsigned long long loads = 0;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        *static_cast<unsigned long long*>(out) = info->dlpi_adds;
        return 1;  // the first object carries the count: stop there
      },
      &loads);
  return loads;
}

void* SharedLibrary::find(const char* symbol, std::string& error) const {
  ::dlerror();
  void* address = ::dlsym(handle_, symbol);
  if (!address) error = path() + " has no symbol " + symbol + " (too old?)";
  return address;
}

std::string SharedLibrary::path() const {
  link_map* map = nullptr;
  if (::dlinfo(handle_, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return "?";
  return map->l_name;
}

}  // namespace trainrun::detail
