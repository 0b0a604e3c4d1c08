// Folders and files the launcher writes for the user, in a folder others may
// write to (a 1777 one, as /tmp): links and other users' folders or files
// planted there are refused and never written through. Real files; the
// "other user" is nobody (uid 65534) through chown, which needs root (the
// cases that need it say so and pass vacuously otherwise).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/output/owned_files.h"
#include "cli/report/atomic_file.h"
#include "trainrun/error.h"

using namespace trainrun;
using namespace trainrun::cli;

namespace {

constexpr uid_t kNobody = 65534;

struct SharedDir {
  std::string path;
  SharedDir() {
    char name[] = "/tmp/trainrun-owned-XXXXXX";
    REQUIRE(::mkdtemp(name));
    path = name;
    ::chmod(path.c_str(), 01777);
  }
  ~SharedDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A file that must come out of every case as it went in.
std::string precious(const SharedDir& dir) {
  const std::string victim = dir.path + "/victim";
  std::ofstream(victim) << "precious\n";
  return victim;
}

}  // namespace

TEST_CASE("a planted link in place of a rank folder or file is refused, the target untouched") {
  const SharedDir dir;
  const std::string victim = precious(dir);
  REQUIRE(::symlink(dir.path.c_str(), (dir.path + "/rank.00").c_str()) == 0);
  CHECK_THROWS_WITH_AS(make_own_directory(dir.path + "/rank.00", "--output-filename"),
                       doctest::Contains("rank.00 is a symbolic link: refusing to follow it"), Error);
  make_own_directory(dir.path + "/rank.01", "--output-filename");
  REQUIRE(::symlink(victim.c_str(), (dir.path + "/rank.01/stdout").c_str()) == 0);
  for (bool append : {false, true}) {
    CHECK_THROWS_WITH_AS(open_own_file(dir.path + "/rank.01/stdout", append, "--output-filename"),
                         doctest::Contains("stdout is a symbolic link: refusing to follow it"), Error);
  }
  CHECK(read_all(victim) == "precious\n");
}

TEST_CASE("a folder or file another user owns is refused in one line; one's own is emptied or appended to") {
  const SharedDir dir;
  const std::string mine = dir.path + "/mine";
  make_own_directory(mine, "--output-filename");
  std::ofstream(mine + "/stdout") << "earlier attempt\n";
  {
    const UniqueFd appended = open_own_file(mine + "/stdout", true, "--output-filename");
    CHECK(::write(appended.get(), "later\n", 6) == 6);
  }
  CHECK(read_all(mine + "/stdout") == "earlier attempt\nlater\n");
  { const UniqueFd emptied = open_own_file(mine + "/stdout", false, "--output-filename"); }
  CHECK(read_all(mine + "/stdout").empty());
  if (::geteuid() != 0) return;  // chown to another user needs root
  const std::string theirs = dir.path + "/theirs";
  REQUIRE(::mkdir(theirs.c_str(), 0777) == 0);
  REQUIRE(::chown(theirs.c_str(), kNobody, kNobody) == 0);
  CHECK_THROWS_WITH_AS(make_own_directory(theirs, "--output-filename"),
                       doctest::Contains("theirs belongs to user nobody (uid 65534), not to root (uid 0): refusing"),
                       Error);
  CHECK_THROWS_WITH_AS(make_user_directory(theirs, "--output-filename"),
                       doctest::Contains("belongs to user nobody (uid 65534)"), Error);
  std::ofstream(mine + "/stderr") << "theirs\n";
  REQUIRE(::chown((mine + "/stderr").c_str(), kNobody, kNobody) == 0);
  CHECK_THROWS_WITH_AS(open_own_file(mine + "/stderr", false, "--output-filename"),
                       doctest::Contains("belongs to user nobody"), Error);
  CHECK(read_all(mine + "/stderr") == "theirs\n");     // not emptied
  make_user_directory(dir.path, "--output-filename");  // root's own /tmp-like folder is fine
}

TEST_CASE("the report's temporary file has no predictable name: a link planted at the old one is not followed") {
  const SharedDir dir;
  const std::string victim = precious(dir);
  const std::string report = dir.path + "/report.json";
  REQUIRE(::symlink(victim.c_str(), (report + ".tmp." + std::to_string(::getpid())).c_str()) == 0);
  REQUIRE(::symlink(victim.c_str(), report.c_str()) == 0);  // and at the report itself
  CHECK(write_atomically(report, "{}\n").empty());
  CHECK(read_all(victim) == "precious\n");
  struct stat st {};
  REQUIRE(::lstat(report.c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));  // the link was replaced, not written through
  CHECK((st.st_mode & 0777) == 0644);
  CHECK(read_all(report) == "{}\n");
}
