#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "cli/elastic/host_discovery.h"

using namespace trainrun::cli::elastic;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// A mkdtemp directory under /tmp for the scripts, removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/trainrun-discovery-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    path = name;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return path + "/" + name; }

  // Writes `name` whole under a temporary name, then renames it into place,
  // so that a script reading it concurrently sees the old or the new text.
  std::string write(const std::string& name, const std::string& text, mode_t mode = 0644) const {
    const std::string temporary = file(name + ".new");
    std::ofstream(temporary) << text;
    REQUIRE(::chmod(temporary.c_str(), mode) == 0);
    REQUIRE(std::rename(temporary.c_str(), file(name).c_str()) == 0);
    return file(name);
  }
  std::string script(const std::string& name, const std::string& body) const {
    return write(name, "#!/bin/sh\n" + body, 0755);
  }
};

// Waits for `done` up to 5 s: correctness must not depend on speed.
bool eventually(const std::function<bool()>& done) {
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

// A pid the script wrote, or 0 when it has not (yet).
pid_t read_pid(const std::string& path) {
  std::ifstream in(path);
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

// Gone, or a zombie waiting for an init that reaps slowly: not running.
bool running(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'Z';
}

std::string named(const std::string& path) { return "--host-discovery-script " + path + " "; }

}  // namespace

TEST_CASE("a good script's hosts, in hostfile format, with its stderr kept") {
  TempDir dir;
  const std::string path = dir.script("good",
                                      "echo 'h1:2'\necho 'h2 slots=4  # the big one'\necho '# none here'\n"
                                      "echo 'h3'\necho 'warming up' >&2\n");
  const DiscoveryRun run = run_discovery_script(path, std::chrono::seconds(10));
  REQUIRE(run.ok);
  CHECK(run.error.empty());
  REQUIRE(run.hosts.size() == 3);
  CHECK(run.hosts[0].host == "h1");
  CHECK(run.hosts[0].slots == 2);
  CHECK(run.hosts[1].host == "h2");
  CHECK(run.hosts[1].slots == 4);
  CHECK(run.hosts[2].slots == 1);
  CHECK(run.stderr_text == "warming up\n");
  CHECK(::waitpid(-1, nullptr, WNOHANG) <= 0);  // no zombie of ours
  // horovodrun's --slots-per-host: the slots of a host listed without any.
  const DiscoveryRun four = run_discovery_script(path, std::chrono::seconds(10), -1, 4);
  REQUIRE(four.hosts.size() == 3);
  CHECK(four.hosts[0].slots == 2);
  CHECK(four.hosts[1].slots == 4);
  CHECK(four.hosts[2].slots == 4);
}

TEST_CASE("the script gets SIGPIPE back although the launcher ignores it") {
  TempDir dir;
  const std::string path = dir.script("pipe", "yes h1 | head -n 2\n");
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);  // as BlockedJobSignals does
  const DiscoveryRun run = run_discovery_script(path, std::chrono::seconds(10));
  ::sigaction(SIGPIPE, &previous, nullptr);
  CHECK(run.ok);
  CHECK(run.stderr_text.empty());  // no "yes: standard output: Broken pipe"
}

TEST_CASE("a failing script: its exit code and first stderr line; a signal; not executable") {
  TempDir dir;
  const std::string failing = dir.script("fail", "echo h1\necho 'no cloud API' >&2\necho 'details' >&2\nexit 3\n");
  const DiscoveryRun run = run_discovery_script(failing, std::chrono::seconds(10));
  CHECK_FALSE(run.ok);
  CHECK(run.error == named(failing) + "exited with code 3: no cloud API");
  CHECK(run.stderr_text == "no cloud API\ndetails\n");

  const std::string killed = dir.script("killed", "kill -9 $$\n");
  CHECK(run_discovery_script(killed, std::chrono::seconds(10)).error == named(killed) + "was killed by SIGKILL");

  const std::string plain = dir.write("plain", "#!/bin/sh\necho h1\n", 0644);
  CHECK(run_discovery_script(plain, std::chrono::seconds(10)).error ==
        named(plain) + "cannot be executed: Permission denied");
  const std::string missing = dir.file("missing");
  CHECK(run_discovery_script(missing, std::chrono::seconds(10)).error ==
        named(missing) + "cannot be executed: No such file or directory");
}

TEST_CASE("a bad line, an empty answer and too much output are failures") {
  TempDir dir;
  const std::string bad = dir.script("bad", "echo h0\necho 'h1:x'\n");
  const DiscoveryRun run = run_discovery_script(bad, std::chrono::seconds(10));
  CHECK_FALSE(run.ok);
  CHECK(run.error.find(named(bad) + "printed a bad line: stdout:2: 'h1:x'") == 0);
  CHECK(run.hosts.empty());

  const std::string empty = dir.script("empty", "echo '# no hosts today'\n");
  CHECK(run_discovery_script(empty, std::chrono::seconds(10)).error == named(empty) + "listed no hosts");

  // Read to the end (the script is not blocked on a full pipe), kept only to the cap.
  const std::string flood = dir.script("flood", "yes h1 | head -c 1200000\n");
  CHECK(run_discovery_script(flood, std::chrono::seconds(10)).error == named(flood) + "printed more than 1 MiB");
}

TEST_CASE("a script past its timeout is killed with what it started") {
  TempDir dir;
  const std::string pid_file = dir.file("sleep.pid");
  const std::string path = dir.script("slow", "sleep 30 &\necho $! > " + pid_file + "\nwait\n");
  // 300 ms; longer only if the machine was too slow to even start the sleep.
  DiscoveryRun run;
  for (int ms : {300, 1000, 3000}) {
    const auto start = Clock::now();
    run = run_discovery_script(path, milliseconds(ms));
    CHECK(Clock::now() - start < std::chrono::seconds(5));
    CHECK(run.error == named(path) + "did not finish within " + (ms == 300 ? "0.3" : std::to_string(ms / 1000)) + " s");
    if (read_pid(pid_file) > 0) break;
  }
  const pid_t sleeper = read_pid(pid_file);
  REQUIRE(sleeper > 0);
  CHECK(eventually([&] { return !running(sleeper); }));
  CHECK(::waitpid(-1, nullptr, WNOHANG) <= 0);
}

TEST_CASE("polling picks up a changed answer; a failing poll keeps the last good one and is reported once") {
  TempDir dir;
  const std::string hosts = dir.write("hosts.txt", "h1:2\n");
  const std::string fail = dir.file("fail");
  const std::string path =
      dir.script("poll", "if [ -e " + fail + " ]; then echo 'no cloud API' >&2; exit 3; fi\ncat " + hosts + "\n");
  HostDiscovery discovery(path, milliseconds(50));
  REQUIRE(discovery.first().ok);
  CHECK(discovery.version() == 1);
  REQUIRE(discovery.hosts().size() == 1);
  discovery.start();

  dir.write("hosts.txt", "h1:2\nh2:2\n");
  REQUIRE(eventually([&] { return discovery.version() == 2; }));
  CHECK(discovery.hosts().size() == 2);
  CHECK_FALSE(discovery.take_failure());

  dir.write("fail", "");
  std::optional<std::string> failure;
  REQUIRE(eventually([&] { return (failure = discovery.take_failure()).has_value(); }));
  CHECK(*failure == named(path) + "exited with code 3: no cloud API");
  std::this_thread::sleep_for(milliseconds(300));  // several more failed polls
  CHECK_FALSE(discovery.take_failure());
  CHECK(discovery.hosts().size() == 2);
  CHECK(discovery.version() == 2);

  // Recovery ends the streak: the next failure is news again.
  std::filesystem::remove(fail);
  dir.write("hosts.txt", "h3:1\n");
  REQUIRE(eventually([&] { return discovery.version() == 3; }));
  CHECK(discovery.hosts().at(0).host == "h3");
  dir.write("fail", "");
  CHECK(eventually([&] { return discovery.take_failure().has_value(); }));
}

TEST_CASE("destroying a HostDiscovery kills a running script promptly") {
  TempDir dir;
  const std::string pid_file = dir.file("sleep.pid");
  const std::string ready = dir.file("ready");
  const std::string path =
      dir.script("slow", "if [ -e " + ready + " ]; then sleep 30 & echo $! > " + pid_file + "; wait; fi\necho h1\n");
  auto discovery = std::make_unique<HostDiscovery>(path, milliseconds(10));
  REQUIRE(discovery->first().ok);
  discovery->start();
  dir.write("ready", "");
  pid_t sleeper = 0;
  REQUIRE(eventually([&] { return (sleeper = read_pid(pid_file)) > 0; }));
  const auto start = Clock::now();
  discovery.reset();
  CHECK(Clock::now() - start < std::chrono::seconds(2));
  CHECK(eventually([&] { return !running(sleeper); }));
  CHECK(::waitpid(-1, nullptr, WNOHANG) <= 0);
}
