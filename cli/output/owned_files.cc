#include "cli/output/owned_files.h"

#include <pwd.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

[[noreturn]] void refuse(const char* what, const std::string& path, const std::string& why) {
  throw Error(Error::Code::Io, std::string(what) + ": " + path + " " + why);
}

std::string user_name(uid_t uid) {
  const passwd* entry = ::getpwuid(uid);
  return (entry ? std::string(entry->pw_name) + " " : std::string()) + "(uid " + std::to_string(uid) + ")";
}

void check_owner(const struct stat& st, const std::string& path, const char* what, bool root_too) {
  const uid_t me = ::geteuid();
  if (st.st_uid == me || (root_too && st.st_uid == 0)) return;
  refuse(what, path,
         "belongs to user " + user_name(st.st_uid) + ", not to " + user_name(me) + ": refusing to write there");
}

void make_directory(const std::string& path, const char* what) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    throw Error(Error::Code::Io, std::string(what) + ": cannot create " + path + ": " + std::strerror(errno));
  }
}

}  // namespace

void make_user_directory(const std::string& path, const char* what) {
  for (std::size_t i = 1; i < path.size(); ++i) {
    if (path[i] == '/') make_directory(path.substr(0, i), what);
  }
  make_directory(path, what);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) refuse(what, path, std::string("cannot be read: ") + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) refuse(what, path, "is not a folder");
  check_owner(st, path, what, true);
}

void make_own_directory(const std::string& path, const char* what) {
  make_directory(path, what);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) refuse(what, path, std::string("cannot be read: ") + std::strerror(errno));
  if (S_ISLNK(st.st_mode)) refuse(what, path, "is a symbolic link: refusing to follow it");
  if (!S_ISDIR(st.st_mode)) refuse(what, path, "is not a folder");
  check_owner(st, path, what, false);
}

UniqueFd open_own_file(const std::string& path, bool append, const char* what) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (append ? O_APPEND : 0), 0644));
  if (!fd) {
    if (errno == ELOOP) refuse(what, path, "is a symbolic link: refusing to follow it");
    throw Error(Error::Code::Io, std::string(what) + ": cannot create " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) refuse(what, path, std::string("cannot be read: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse(what, path, "is not a regular file");
  check_owner(st, path, what, false);
  if (!append && ::ftruncate(fd.get(), 0) != 0) {
    refuse(what, path, std::string("cannot be emptied: ") + std::strerror(errno));
  }
  return fd;
}

}  // namespace trainrun::cli
