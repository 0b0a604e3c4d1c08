// SharedLibrary: one library opened with dlopen at run time, so that a
// program linked with libtrainrun.a starts on hosts that lack it (no NVIDIA
// driver, no NCCL), and does not carry it. Never closed: unloading the CUDA
// driver or NCCL while anything may still call into them is unsafe.
// Immutable; safe from any thread.
#pragma once

#include <optional>
#include <string>

// The symbol a name stands for after macro expansion, as a string:
// TRAINRUN_SYMBOL(cuMemcpyHtoD) is "cuMemcpyHtoD_v2" under cuda.h.
#define TRAINRUN_SYMBOL(name) TRAINRUN_SYMBOL_TEXT(name)
#define TRAINRUN_SYMBOL_TEXT(name) #name

namespace trainrun::detail {

class SharedLibrary {
 public:
  // Tries `soname` through the loader's search (LD_LIBRARY_PATH, ld.so.cache),
  // then `fallback_dir`/`soname`. Sets `error` to the loader's reason.
  static std::optional<SharedLibrary> open(const char* soname, const std::string& fallback_dir, std::string& error);
  // Whether the process has loaded `soname` already. Costs a search of the
  // library path when it has not (~20 us): call it rarely.
  static bool is_loaded(const char* soname);
  // How many libraries the process has loaded so far (~30 ns): when it has
  // not changed, neither has the answer of is_loaded().
  static unsigned long long loads_so_far();

  // Resolves `symbol` into `fn`; false (and `error` naming it) when missing.
  template <typename Fn>
  bool resolve(Fn& fn, const char* symbol, std::string& error) const {
    void* address = find(symbol, error);
    fn = reinterpret_cast<Fn>(address);
    return address != nullptr;
  }
  // The file the loader picked, e.g. /usr/local/cuda/lib/libnccl.so.2.
  std::string path() const;

 private:
  explicit SharedLibrary(void* handle) : handle_(handle) {}
  void* find(const char* symbol, std::string& error) const;

  void* handle_;
};

}  // namespace trainrun::detail
