// UniqueFd (os/unique_fd.h): one owner per descriptor, closed once.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <utility>
#include <vector>

#include "os/unique_fd.h"

using trainrun::UniqueFd;

namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

int open_null() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

}  // namespace

TEST_CASE("UniqueFd closes its descriptor when it goes out of scope, and only then") {
  int fd = -1;
  {
    UniqueFd owner(open_null());
    fd = owner.get();
    REQUIRE(fd >= 0);
    CHECK(owner.valid());
    CHECK(is_open(fd));
  }
  CHECK_FALSE(is_open(fd));
  UniqueFd none;
  CHECK_FALSE(none);
  CHECK(none.get() == -1);
}

TEST_CASE("UniqueFd moves ownership: the moved-from one owns nothing, the target closes what it held") {
  UniqueFd a(open_null());
  const int first = a.get();
  UniqueFd b(std::move(a));
  CHECK(b.get() == first);
  CHECK_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): the point of the test
  UniqueFd c(open_null());
  const int second = c.get();
  c = std::move(b);
  CHECK(c.get() == first);
  CHECK_FALSE(is_open(second));
  CHECK(is_open(first));
  std::vector<UniqueFd> many;
  many.push_back(std::move(c));
  many.emplace_back(open_null());
  many.reserve(100);  // reallocation moves them; none is closed
  CHECK(is_open(first));
}

TEST_CASE("release hands the descriptor back unowned; reset closes and takes another; close reports") {
  UniqueFd owner(open_null());
  const int fd = owner.release();
  CHECK_FALSE(owner.valid());
  CHECK(is_open(fd));
  owner.reset(fd);
  CHECK(owner.get() == fd);
  owner.reset(fd);  // the same one again: kept open
  CHECK(is_open(fd));
  const int other = open_null();
  owner.reset(other);
  CHECK_FALSE(is_open(fd));
  CHECK(owner.get() == other);
  CHECK(owner.close() == 0);
  CHECK_FALSE(is_open(other));
  CHECK(owner.close() == 0);  // nothing held: nothing to report
}

TEST_CASE("reset keeps errno, so an error reported after cleanup names the real cause") {
  UniqueFd owner(open_null());
  errno = EACCES;
  owner.reset();
  CHECK(errno == EACCES);
}

TEST_CASE("make_pipe gives both ends, owned; set_nonblocking sets and clears O_NONBLOCK") {
  trainrun::PipeFds pipe = trainrun::make_pipe(O_CLOEXEC);
  REQUIRE(pipe.read);
  REQUIRE(pipe.write);
  CHECK(::write(pipe.write.get(), "x", 1) == 1);
  char byte = 0;
  CHECK(::read(pipe.read.get(), &byte, 1) == 1);
  CHECK(byte == 'x');
  REQUIRE(trainrun::set_nonblocking(pipe.read.get()));
  CHECK((::fcntl(pipe.read.get(), F_GETFL) & O_NONBLOCK) != 0);
  CHECK(::read(pipe.read.get(), &byte, 1) == -1);
  CHECK(errno == EAGAIN);
  REQUIRE(trainrun::set_nonblocking(pipe.read.get(), false));
  CHECK((::fcntl(pipe.read.get(), F_GETFL) & O_NONBLOCK) == 0);
  CHECK_FALSE(trainrun::set_nonblocking(-1));
  CHECK(errno == EBADF);
}
