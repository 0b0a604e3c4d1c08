// ShmSegment: one shared memory mapping for the ranks of a job on one host.
// The creator makes it with memfd_create, so it never has a name in
// /dev/shm: nothing can be left behind however the job ends (the kernel
// frees the pages with the last mapping), and no other job can guess or
// open it. Peers open it through /proc/CREATOR_PID/fd/FD, which the kernel
// allows only to processes of the same user that may inspect the creator;
// a random cookie written into the segment and published through the
// authenticated rendezvous proves that the file opened is the one meant.
// Move-only; the mapping lives as long as the object.
#pragma once

#include <cstddef>
#include <string>

#include "os/unique_fd.h"

namespace trainrun::detail {

class ShmSegment {
 public:
  static constexpr std::size_t kCookieBytes = 16;

  ShmSegment() = default;
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();

  // When the pages come: all at the start (a segment every collective
  // uses), or on first touch (a heap reserved far larger than it is used).
  enum class Pages { kNow, kOnTouch };

  // Creates and maps `bytes` of zeroed shared memory with a fresh cookie in
  // its first kCookieBytes; `name` shows in /proc/PID/maps as
  // "memfd:NAME". Throws Error(Io) saying why.
  static ShmSegment create(std::size_t bytes, Pages pages = Pages::kNow, const char* name = "trainrun-shm");
  // Maps the segment `published` (what the creator's published() said).
  // Throws Error(Io) saying why (creator gone, not ours, wrong cookie).
  static ShmSegment attach(const std::string& published, Pages pages = Pages::kNow);

  // "PID FD SIZE COOKIEHEX": what peers need to attach. Creator only.
  std::string published() const;
  // Closes the creator's descriptor once every peer has mapped the segment.
  void close_descriptor();

  char* base() const { return base_; }
  std::size_t size() const { return size_; }

 private:
  char* base_ = nullptr;
  std::size_t size_ = 0;
  UniqueFd fd_;
};

// What identifies this host and its process namespace: ranks that share
// it can share memory ("BOOT_ID PIDNS"); empty when unknown.
std::string shm_host_identity();

}  // namespace trainrun::detail
