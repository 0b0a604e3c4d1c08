// The one subprocess helper (cli/process/subprocess.h) with real /bin/sh
// children: pipes, exit codes, environment, process group, signal mask,
// directory, exec failures, and no descriptor left behind in either process.
#include <dirent.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "cli/process/subprocess.h"

using namespace trainrun::cli;

namespace {

int open_descriptors() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  REQUIRE(dir);
  while (dirent* entry = ::readdir(dir)) count += entry->d_name[0] != '.';
  ::closedir(dir);
  return count - 1;  // the directory's own
}

SpawnRequest shell(const std::string& script) {
  SpawnRequest request;
  request.program = "/bin/sh";
  request.argv = {"/bin/sh", "-c", script};
  request.env = {"PATH=/usr/bin:/bin"};
  return request;
}

std::string read_all(trainrun::UniqueFd& fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The mask of blocked signals a child starts with: grep exec'ed directly
// (no shell between, which blocks signals around its own forks) prints its own.
std::string blocked_signals(SpawnRequest request) {
  request.program = "/bin/grep";
  request.argv = {"grep", "SigBlk", "/proc/self/status"};
  request.out = ChildStream::pipe();
  Subprocess child = spawn(request);
  REQUIRE(child.started());
  std::string line;
  char buffer[256];
  for (ssize_t n; (n = ::read(child.out.get(), buffer, sizeof buffer)) > 0;) {
    line.append(buffer, static_cast<std::size_t>(n));
  }
  CHECK(wait_exit_code(child.pid) == 0);
  return line.substr(line.find_first_not_of(" \t", 7), 16);
}

}  // namespace

TEST_CASE("a child's stdout and stderr come back on pipes, with its exit code; nothing leaks") {
  const int before = open_descriptors();
  {
    SpawnRequest request = shell("echo out; echo err >&2; exit 3");
    request.out = request.err = ChildStream::pipe();
    Subprocess child = spawn(request);
    REQUIRE(child.started());
    CHECK_FALSE(child.in.valid());
    CHECK(read_all(child.out) == "out\n");
    CHECK(read_all(child.err) == "err\n");
    CHECK(wait_exit_code(child.pid) == 3);
  }
  CHECK(open_descriptors() == before);
}

TEST_CASE("stdin on a pipe: what the launcher writes, the child reads; EOF when it closes") {
  SpawnRequest request = shell("read line; echo got:$line; cat");
  request.in = request.out = ChildStream::pipe();
  Subprocess child = spawn(request);
  REQUIRE(child.started());
  REQUIRE(::write(child.in.get(), "hello\nrest", 10) == 10);
  child.in.reset();
  CHECK(read_all(child.out) == "got:hello\nrest");
  CHECK(wait_exit_code(child.pid) == 0);
}

TEST_CASE("the child gets exactly the environment asked for; with search_path, PATH from it") {
  SpawnRequest request = shell("echo $GREETING ${HOME-unset}");
  request.env = {"PATH=/usr/bin:/bin", "GREETING=hello"};
  request.out = ChildStream::pipe();
  Subprocess child = spawn(request);
  REQUIRE(child.started());
  CHECK(read_all(child.out) == "hello unset\n");
  CHECK(wait_exit_code(child.pid) == 0);

  SpawnRequest searched = shell("exit 0");
  searched.program = "sh";  // found along the child's PATH
  searched.search_path = true;
  searched.on_exec_failure = ExecFailure::ExitLikeShell;
  Subprocess found = spawn(searched);
  REQUIRE(found.started());
  CHECK(wait_exit_code(found.pid) == 0);
  searched.env = {"PATH=/nonexistent"};
  searched.err = ChildStream::null();
  Subprocess missing = spawn(searched);
  REQUIRE(missing.started());
  CHECK(wait_exit_code(missing.pid) == 127);
  CHECK(current_environment().size() > 0);
}

TEST_CASE("a program that cannot be executed: a clear error (Report), or 127/126 and a line (Exit*); no fd leak") {
  const int before = open_descriptors();
  SpawnRequest request = shell("");
  request.program = "/nonexistent/program";
  request.argv = {request.program};
  request.in = request.out = request.err = ChildStream::pipe();
  Subprocess child = spawn(request);
  CHECK_FALSE(child.started());
  CHECK(child.error == ENOENT);
  CHECK(std::string(child.step) == "exec");
  CHECK_FALSE(child.out.valid());
  CHECK(open_descriptors() == before);

  request.on_exec_failure = ExecFailure::Exit127;
  request.in = ChildStream::null();
  Subprocess reported = spawn(request);
  REQUIRE(reported.started());
  CHECK(read_all(reported.err) == "trainrun: cannot execute /nonexistent/program: No such file or directory\n");
  CHECK(wait_exit_code(reported.pid) == 127);

  // Not executable: 126 like a shell, 127 for Exit127.
  char path[] = "/tmp/trainrun-not-executable-XXXXXX";
  trainrun::UniqueFd file(::mkstemp(path));
  REQUIRE(file.valid());
  file.reset();
  request.program = path;
  request.argv = {path};
  request.on_exec_failure = ExecFailure::ExitLikeShell;
  Subprocess refused = spawn(request);
  REQUIRE(refused.started());
  CHECK(read_all(refused.err).find("Permission denied") != std::string::npos);
  CHECK(wait_exit_code(refused.pid) == 126);
  ::unlink(path);
}

TEST_CASE("no descriptor of the launcher reaches the child, CLOEXEC or not; a Fd stream is dup'ed") {
  trainrun::UniqueFd leaky(::open("/dev/null", O_RDONLY));  // no O_CLOEXEC on purpose
  REQUIRE(leaky.valid());
  trainrun::PipeFds given = trainrun::make_pipe(O_CLOEXEC);
  SpawnRequest request = shell("ls /proc/self/fd | tr '\\n' ' '");
  request.out = ChildStream::of(given.write.get());
  Subprocess child = spawn(request);
  REQUIRE(child.started());
  given.write.reset();
  CHECK(read_all(given.read) == "0 1 2 3 ");  // 3: ls's own directory
  CHECK(wait_exit_code(child.pid) == 0);
}

TEST_CASE("process group, signal mask and directory are the child's as asked") {
  SpawnRequest request = shell("pwd; cat >/dev/null");
  request.in = request.out = ChildStream::pipe();
  request.group = ChildGroup::NewSession;
  request.cwd = "/tmp";
  Subprocess child = spawn(request);
  REQUIRE(child.started());
  char buffer[64] = {};
  REQUIRE(::read(child.out.get(), buffer, sizeof buffer - 1) > 0);
  CHECK(std::string(buffer) == "/tmp\n");
  CHECK(::getsid(child.pid) == child.pid);
  CHECK(::getpgid(child.pid) == child.pid);
  child.in.reset();
  CHECK(wait_exit_code(child.pid) == 0);

  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  SpawnRequest masked = shell("echo ready; cat >/dev/null");
  masked.in = masked.out = ChildStream::pipe();
  masked.mask = usr1;
  masked.group = ChildGroup::Own;
  Subprocess blocked = spawn(masked);
  REQUIRE(blocked.started());
  REQUIRE(::read(blocked.out.get(), buffer, sizeof buffer - 1) > 0);
  CHECK(blocked_signals(masked) == "0000000000000200");  // SIGUSR1 (10): bit 9
  // No mask given: nothing blocked, whatever the launcher blocks.
  sigset_t previous;
  REQUIRE(::sigprocmask(SIG_BLOCK, &usr1, &previous) == 0);
  CHECK(blocked_signals(shell("")) == "0000000000000000");
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  CHECK(::getpgid(blocked.pid) == blocked.pid);
  CHECK(::getsid(blocked.pid) == ::getsid(0));
  blocked.in.reset();
  CHECK(wait_exit_code(blocked.pid) == 0);

  SpawnRequest lost = shell("exit 0");
  lost.cwd = "/nonexistent/dir";
  lost.err = ChildStream::pipe();
  Subprocess no_dir = spawn(lost);
  REQUIRE(no_dir.started());
  CHECK(read_all(no_dir.err) == "trainrun: cannot enter directory /nonexistent/dir: No such file or directory\n");
  CHECK(wait_exit_code(no_dir.pid) == 126);
}

TEST_CASE("a standard descriptor of the launcher that is closed does not break the mapping") {
  // Pipes land on 0..2 when the launcher's own are closed; setting up one of
  // the child's must not overwrite the source of another.
  const int saved = ::dup(0);
  REQUIRE(saved >= 0);
  ::close(0);  // NOLINT: the test frees descriptor 0 on purpose
  SpawnRequest request = shell("cat");
  request.in = request.out = ChildStream::pipe();
  Subprocess child = spawn(request);
  REQUIRE(::dup2(saved, 0) == 0);
  ::close(saved);
  REQUIRE(child.started());
  REQUIRE(::write(child.in.get(), "through", 7) == 7);
  child.in.reset();
  CHECK(read_all(child.out) == "through");
  CHECK(wait_exit_code(child.pid) == 0);
}
