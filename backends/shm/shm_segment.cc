#include "backends/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "rendezvous/auth.h"
#include "os/net.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

[[noreturn]] void fail(const std::string& what, int err) {
  throw Error(Error::Code::Io, "shared memory: " + what + ": " + net::errno_text(err));
}

// MAP_POPULATE (Pages::kNow): every page is faulted in now, at start-up,
// rather than inside the first collectives.
char* map_shared(int fd, std::size_t bytes, ShmSegment::Pages pages) {
  const int populate = pages == ShmSegment::Pages::kNow ? MAP_POPULATE : MAP_NORESERVE;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | populate, fd, 0);
  if (p == MAP_FAILED) fail("cannot map " + std::to_string(bytes) + " bytes", errno);
  return static_cast<char*>(p);
}

}  // namespace

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)), fd_(std::move(other.fd_)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  std::swap(base_, other.base_);
  std::swap(size_, other.size_);
  std::swap(fd_, other.fd_);
  return *this;
}

ShmSegment::~ShmSegment() {
  if (base_) ::munmap(base_, size_);
}

ShmSegment ShmSegment::create(std::size_t bytes, Pages pages, const char* name) {
  ShmSegment s;
  s.fd_.reset(::memfd_create(name, MFD_CLOEXEC));
  if (!s.fd_) fail("memfd_create", errno);
  if (::ftruncate(s.fd_.get(), static_cast<off_t>(bytes)) != 0) fail("cannot size the segment", errno);
  s.size_ = bytes;
  s.base_ = map_shared(s.fd_.get(), bytes, pages);
  const std::string cookie = rendezvous::random_hex(kCookieBytes / 2);
  std::memcpy(s.base_, cookie.data(), kCookieBytes);
  return s;
}

std::string ShmSegment::published() const {
  return std::to_string(::getpid()) + " " + std::to_string(fd_.get()) + " " + std::to_string(size_) + " " +
         std::string(base_, kCookieBytes);
}

ShmSegment ShmSegment::attach(const std::string& published, Pages pages) {
  std::istringstream in(published);
  long pid = 0, fd = -1;
  std::size_t bytes = 0;
  std::string cookie;
  if (!(in >> pid >> fd >> bytes >> cookie) || cookie.size() != kCookieBytes || bytes < kCookieBytes) {
    throw Error(Error::Code::Internal, "shared memory: malformed segment description");
  }
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  ShmSegment s;
  s.fd_.reset(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!s.fd_) fail("cannot open the segment of pid " + std::to_string(pid), errno);
  struct stat st {};
  if (::fstat(s.fd_.get(), &st) != 0 || static_cast<std::size_t>(st.st_size) != bytes) {
    throw Error(Error::Code::Io, "shared memory: the segment of pid " + std::to_string(pid) + " has the wrong size");
  }
  s.size_ = bytes;
  s.base_ = map_shared(s.fd_.get(), bytes, pages);
  if (!rendezvous::constant_time_equal(std::string(s.base_, kCookieBytes), cookie)) {
    throw Error(Error::Code::Io, "shared memory: the segment of pid " + std::to_string(pid) + " is not this job's");
  }
  s.fd_.reset();  // the mapping keeps the memory; nothing else needs the file
  return s;
}

void ShmSegment::close_descriptor() { fd_.reset(); }

std::string shm_host_identity() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (!(boot >> boot_id)) return "";
  char pidns[128] = {};
  const ssize_t n = ::readlink("/proc/self/ns/pid", pidns, sizeof pidns - 1);
  if (n <= 0) return "";
  return boot_id + " " + std::string(pidns, static_cast<std::size_t>(n));
}

}  // namespace trainrun::detail
