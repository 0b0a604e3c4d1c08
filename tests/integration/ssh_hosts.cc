#include "tests/integration/ssh_hosts.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "os/net.h"
#include "tests/integration/process_runner.h"

namespace trainrun::test {
namespace {

constexpr const char* kBridgePrefix = "tr77b";  // + subnet: the claim
constexpr const char* kNetnsPrefix = "tr77-";   // + subnet + "-h" + host
constexpr const char* kVethPrefix = "tr77v";    // + subnet + "-" + host
constexpr const char* kDirPrefix = "/tmp/trainrun-sshtest-";
constexpr int kSubnets = 200;
constexpr int kBlackhole = 99;  // an address whose frames go nowhere

std::string tool(const std::string& name) {
  const char* env_path = std::getenv("PATH");
  std::stringstream dirs(std::string(env_path ? env_path : "") + ":/usr/sbin:/sbin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string path = dir + "/" + name;
    if (!dir.empty() && ::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

std::string need_tool(const std::string& name, const std::string& package) {
  const std::string path = tool(name);
  if (path.empty()) throw SshHostsUnavailable("no '" + name + "' on this machine (apt-get install " + package + ")");
  return path;
}

ProcessResult run_quiet(const std::vector<std::string>& argv) {
  ProcessOptions options;
  options.timeout = std::chrono::seconds(30);
  return run_process(argv, options);
}

void run_or_throw(const std::vector<std::string>& argv) {
  const ProcessResult r = run_quiet(argv);
  if (r.exit_code != 0) {
    std::string command;
    for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
    throw std::runtime_error(command + ": exit " + std::to_string(r.exit_code) + ": " + r.err);
  }
}

void write_file(const std::string& path, const std::string& content, mode_t mode = 0644) {
  std::ofstream(path) << content;
  ::chmod(path.c_str(), mode);
}

std::string netns_name(int subnet, int host) {
  return kNetnsPrefix + std::to_string(subnet) + "-h" + std::to_string(host);
}

// SCRIPT run by sh with WORDS as $1..., inside network namespace NETNS with
// mounts and a hostname of its own (as a host's or a pod's processes see it).
std::vector<std::string> host_shell(const std::string& netns, const std::string& script,
                                    const std::vector<std::string>& words) {
  std::vector<std::string> argv = {tool("ip"), "netns", "exec", netns, tool("unshare"), "--mount", "--uts",
                                   "/bin/sh",  "-c",    script, "sh"};
  argv.insert(argv.end(), words.begin(), words.end());
  return argv;
}

// The launcher-side end of a host's veth pair.
std::string veth_name(int subnet, int host) {
  return kVethPrefix + std::to_string(subnet) + "-" + std::to_string(host);
}

std::string home_directory() {
  const passwd* pw = ::getpwuid(::getuid());
  return pw ? pw->pw_dir : "/root";
}

// "net:[4026532000]" for a namespace file or a process.
std::string netns_id(const std::string& ns_path) {
  char link[64] = {};
  return ::readlink(ns_path.c_str(), link, sizeof link - 1) > 0 ? link : "";
}

std::string netns_id_of_name(const std::string& name) {
  struct stat st {};
  if (::stat(("/run/netns/" + name).c_str(), &st) != 0) return "";
  return "net:[" + std::to_string(st.st_ino) + "]";
}

// Pids of live processes in any of the named network namespaces.
std::vector<pid_t> pids_in(const std::set<std::string>& netns_ids) {
  std::vector<pid_t> pids;
  DIR* proc = ::opendir("/proc");
  if (!proc) return pids;
  while (dirent* entry = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0) continue;
    const std::string base = std::string("/proc/") + entry->d_name;
    if (!netns_ids.count(netns_id(base + "/ns/net"))) continue;
    std::string pid_text, comm, state;
    std::ifstream(base + "/stat") >> pid_text >> comm >> state;
    if (state != "Z") pids.push_back(pid);
  }
  ::closedir(proc);
  return pids;
}

bool pid_alive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

// Everything of one subnet's run: its processes, namespaces, bridge, files.
void remove_subnet(const std::string& ip, int subnet) {
  std::set<std::string> ids;
  std::vector<int> present;  // the hosts whose namespace exists
  for (int h = 1; h <= SshHosts::kMaxHosts; ++h) {
    const std::string id = netns_id_of_name(netns_name(subnet, h));
    if (id.empty()) continue;
    ids.insert(id);
    present.push_back(h);
  }
  for (int round = 0; round < 50 && !ids.empty(); ++round) {
    const std::vector<pid_t> pids = pids_in(ids);
    if (pids.empty()) break;
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // A veth goes with its namespace only when the kernel gets round to it, so
  // a run claiming this subnet right after us could find the name taken:
  // delete both ends now.
  for (int h : present) {
    run_quiet({ip, "link", "del", veth_name(subnet, h)});
    run_quiet({ip, "netns", "del", netns_name(subnet, h)});
  }
  run_quiet({ip, "link", "del", kBridgePrefix + std::to_string(subnet)});
  run_quiet({tool("rm"), "-rf", kDirPrefix + std::to_string(subnet)});
}

// Subnets whose bridge exists, with the pid that owns each.
std::vector<std::pair<int, pid_t>> claimed_subnets() {
  std::vector<std::pair<int, pid_t>> claims;
  DIR* net = ::opendir("/sys/class/net");
  if (!net) return claims;
  const std::string prefix = kBridgePrefix;
  while (dirent* entry = ::readdir(net)) {
    const std::string name = entry->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string alias = read_file("/sys/class/net/" + name + "/ifalias");
    const std::size_t at = alias.find("pid=");
    // No alias yet: a run that is claiming it right now.
    claims.emplace_back(std::atoi(name.c_str() + prefix.size()),
                        at == std::string::npos ? ::getpid() : std::atoi(alias.c_str() + at + 4));
  }
  ::closedir(net);
  return claims;
}

bool others_running(int subnet) {
  for (const auto& [other, owner] : claimed_subnets()) {
    if (other != subnet && pid_alive(owner)) return true;
  }
  return false;
}

// What a crashed run of ours left: claims whose owner is gone, and
// namespaces of our prefix with no claim at all.
void remove_leftovers(const std::string& ip) {
  std::set<int> live;
  for (const auto& [subnet, owner] : claimed_subnets()) {
    if (pid_alive(owner)) live.insert(subnet);
    else remove_subnet(ip, subnet);
  }
  DIR* netns = ::opendir("/run/netns");
  if (!netns) return;
  std::set<int> orphans;
  while (dirent* entry = ::readdir(netns)) {
    const std::string name = entry->d_name;
    if (name.rfind(kNetnsPrefix, 0) == 0) {
      const int subnet = std::atoi(name.c_str() + std::string(kNetnsPrefix).size());
      if (!live.count(subnet)) orphans.insert(subnet);
    }
  }
  ::closedir(netns);
  for (int subnet : orphans) remove_subnet(ip, subnet);
}

std::string keygen(const std::string& path, const std::string& comment) {
  run_or_throw({need_tool("ssh-keygen", "openssh-client"), "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path});
  std::stringstream pub(read_file(path + ".pub"));
  std::string type, key;
  pub >> type >> key;
  return type + " " + key;
}

}  // namespace

SshHosts::SshHosts(int hosts) : count_(hosts) {
  if (hosts < kHosts || hosts > kMaxHosts) {
    throw std::invalid_argument("SshHosts: " + std::to_string(hosts) + " hosts; make 4 to 64");
  }
  if (::geteuid() != 0) throw SshHostsUnavailable("creating network namespaces needs root");
  need_tool("ip", "iproute2");
  need_tool("unshare", "util-linux");
  if (::access("/usr/sbin/sshd", X_OK) != 0) {
    throw SshHostsUnavailable("no /usr/sbin/sshd on this machine (apt-get install openssh-server)");
  }
  claim_subnet();
  // sshd's privilege-separation directory (there is no systemd to make it).
  created_run_sshd_ = ::mkdir("/run/sshd", 0755) == 0;
  start_reaper();
  try {
    make_keys_and_homes();
    start_hosts();
  } catch (...) {
    remove_everything();
    throw;
  }
}

SshHosts::~SshHosts() { remove_everything(); }

std::unique_ptr<SshHosts> SshHosts::make_or_say_why(int hosts) {
  try {
    return std::make_unique<SshHosts>(hosts);
  } catch (const SshHostsUnavailable& e) {
    std::cout << "SKIP: cannot make the test hosts: " << e.what() << "\n";
    return nullptr;
  }
}

std::string SshHosts::address(int host) const {
  return "10.77." + std::to_string(subnet_) + "." + std::to_string(host);
}
std::string SshHosts::launcher_address() const { return address(254); }
std::string SshHosts::subnet() const { return address(0) + "/24"; }
std::string SshHosts::client_only_dir() const { return home_directory() + "/only-here"; }
std::string SshHosts::client_key() const { return home_directory() + "/.ssh/id_ed25519"; }
std::string SshHosts::netns(int host) const { return netns_name(subnet_, host); }
std::string SshHosts::veth(int host) const { return veth_name(subnet_, host); }

void SshHosts::claim_subnet() {
  const std::string ip = tool("ip");
  remove_leftovers(ip);
  for (int n = 0; n < kSubnets && subnet_ < 0; ++n) {
    const std::string name = kBridgePrefix + std::to_string(n);
    const ProcessResult r = run_quiet({ip, "link", "add", name, "type", "bridge"});
    if (r.exit_code == 0) {
      subnet_ = n;
      bridge_ = name;
    } else if (r.err.find("File exists") == std::string::npos) {
      throw SshHostsUnavailable("cannot create a bridge (" + r.err.substr(0, r.err.find('\n')) + ")");
    }
  }
  if (subnet_ < 0) throw std::runtime_error("every test subnet 10.77.0-199.0/24 is in use");
  dir_ = kDirPrefix + std::to_string(subnet_);
  run_or_throw({ip, "link", "set", "dev", bridge_, "alias", "trainrun-test pid=" + std::to_string(::getpid())});
}

// A process outside our process group that waits for us: if this one dies
// without its destructor (a crash, a timeout's SIGKILL), it removes
// everything; after a normal end it is told so and just exits.
void SshHosts::start_reaper() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  reaper_ = ::fork();
  if (reaper_ == 0) {
    ::setsid();
    const int null_fd = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) ::dup2(null_fd, fd);
    for (int fd = 3; fd < 1024; ++fd) {
      if (fd != fds[0]) ::close(fd);
    }
    char done = 0;
    if (::read(fds[0], &done, 1) != 1) {
      remove_subnet(tool("ip"), subnet_);
      if (created_run_sshd_ && !others_running(subnet_)) ::rmdir("/run/sshd");
    }
    ::_exit(0);
  }
  ::close(fds[0]);
  reaper_fd_ = fds[1];
}

void SshHosts::make_keys_and_homes() {
  run_quiet({tool("rm"), "-rf", dir_});
  const std::string client_home = dir_ + "/client-home", ssh_dir = client_home + "/.ssh";
  for (const std::string& d : {dir_, dir_ + "/hosts-home", client_home, ssh_dir, client_home + "/only-here"}) {
    ::mkdir(d.c_str(), 0700);
  }
  ::chmod((dir_ + "/hosts-home").c_str(), 0755);
  write_file(dir_ + "/authorized_keys", keygen(ssh_dir + "/id_ed25519", "trainrun-test") + "\n", 0600);
  std::string known;
  for (int h = 1; h <= count_; ++h) {
    known += address(h) + " " + keygen(dir_ + "/hostkey-h" + std::to_string(h), "h" + std::to_string(h)) + "\n";
  }
  write_file(ssh_dir + "/known_hosts", known);
  // h3's address with some other key: what a man in the middle looks like.
  write_file(ssh_dir + "/known_hosts_wrong", address(3) + " " + keygen(dir_ + "/stranger", "stranger") + "\n");
  write_file(ssh_dir + "/known_hosts_empty", "");
  std::string config;
  for (int h = 1; h <= count_; ++h) config += "Host h" + std::to_string(h) + "\n  HostName " + address(h) + "\n";
  // An alias for this machine: the launcher asks the alias's HostName, not DNS.
  config += "Host loopback\n  HostName 127.0.0.1\n";
  config += "Host refused\n  HostName " + address(1) +
            "\n  Port 2\n"
            "Host blackhole\n  HostName " +
            address(kBlackhole) +
            "\n"
            "Host badkey\n  HostName " +
            address(3) +
            "\n  UserKnownHostsFile ~/.ssh/known_hosts_wrong\n"
            "Host unknown\n  HostName " +
            address(4) +
            "\n  UserKnownHostsFile ~/.ssh/known_hosts_empty\n"
            "Host newhost\n  HostName " +
            address(2) +
            "\n  UserKnownHostsFile ~/.ssh/known_hosts_new\n"
            "Host *\n  User root\n  BatchMode yes\n  LogLevel ERROR\n";
  write_file(ssh_dir + "/config", config, 0600);
  // The hosts reach each other over SSH with the same key, as a cluster's
  // nodes do (a shared home): a tree of agents (--tree-radix) needs it.
  const std::string hosts_ssh = dir_ + "/hosts-home/.ssh";
  ::mkdir(hosts_ssh.c_str(), 0700);
  write_file(hosts_ssh + "/id_ed25519", read_file(ssh_dir + "/id_ed25519"), 0600);
  write_file(hosts_ssh + "/known_hosts", known);
  std::string hosts_config;
  for (int h = 1; h <= count_; ++h) hosts_config += "Host h" + std::to_string(h) + "\n  HostName " + address(h) + "\n";
  write_file(hosts_ssh + "/config", hosts_config + "Host *\n  User root\n  BatchMode yes\n  LogLevel ERROR\n", 0600);
  // The hosts know each other by name, as a cluster's do (torchrun's rendezvous resolves them).
  std::string names = read_file("/etc/hosts");
  for (int h = 1; h <= count_; ++h) names += address(h) + " h" + std::to_string(h) + "\n";
  write_file(dir_ + "/etc-hosts", names);
}

void SshHosts::start_hosts() {
  const std::string ip = tool("ip");
  run_or_throw({ip, "addr", "add", launcher_address() + "/24", "dev", bridge_});
  run_or_throw({ip, "link", "set", bridge_, "up"});
  for (int h = 1; h <= count_; ++h) {
    const std::string ns = netns_name(subnet_, h), veth = veth_name(subnet_, h);
    run_quiet({ip, "link", "del", veth});  // a leftover the kernel has not reaped yet
    const ProcessResult added = run_quiet({ip, "netns", "add", ns});
    if (added.exit_code != 0) throw SshHostsUnavailable("cannot create a network namespace (" + added.err + ")");
    run_or_throw({ip, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns});
    run_or_throw({ip, "link", "set", veth, "master", bridge_, "up"});
    run_or_throw({ip, "-n", ns, "addr", "add", address(h) + "/24", "dev", "eth0"});
    run_or_throw({ip, "-n", ns, "link", "set", "eth0", "up"});
    run_or_throw({ip, "-n", ns, "link", "set", "lo", "up"});
  }
  // Frames to this address go to a MAC nobody has: a host that never answers.
  run_or_throw(
      {ip, "neigh", "replace", address(kBlackhole), "lladdr", "02:77:00:00:00:99", "dev", bridge_, "nud", "permanent"});
  for (int h = 1; h <= count_; ++h) start_sshd(h);
  for (int h = 1; h <= count_; ++h) wait_for_sshd(h);
}

void SshHosts::start_sshd(int host) {
  const std::string name = "h" + std::to_string(host), config = dir_ + "/sshd-" + name + ".conf";
  write_file(config, "HostKey " + dir_ + "/hostkey-" + name + "\nPidFile " + dir_ + "/sshd-" + name +
                         ".pid\nListenAddress " + address(host) + "\nAuthorizedKeysFile " + dir_ +
                         "/authorized_keys\nPermitRootLogin prohibit-password\nAllowUsers root\n"
                         "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                         "PrintMotd no\nMaxStartups 100\nMaxSessions 100\n");
  // Its own hostname and home: `hostname` says hN, and the machine's own
  // ~/.bashrc does not run on every login.
  const std::vector<std::string> argv =
      host_shell(netns_name(subnet_, host),
                 "mount --bind \"$1\" \"$2\" && mount --bind \"$5\" /etc/hosts && hostname \"$3\" && "
                 "exec /usr/sbin/sshd -D -e -f \"$4\"",
                 {dir_ + "/hosts-home", home_directory(), name, config, etc_hosts()});
  const int log = ::open((dir_ + "/sshd-" + name + ".log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(null_fd, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(log);
  sshd_.resize(count_, -1);
  sshd_[host - 1] = pid;
}

void SshHosts::wait_for_sshd(int host) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  trainrun::UniqueFd fd;
  int error = 0;
  while (!fd && std::chrono::steady_clock::now() < deadline) {
    fd = net::connect_tcp(address(host), "22", deadline, &error);
    if (!fd) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!fd) {
    throw std::runtime_error("sshd on h" + std::to_string(host) +
                             " did not start: " + read_file(dir_ + "/sshd-h" + std::to_string(host) + ".log"));
  }
}

void SshHosts::restore(int host) {
  for (int round = 0; round < 50; ++round) {
    const std::vector<pid_t> pids = pids_in({netns_id_of_name(netns_name(subnet_, host))});
    if (pids.empty()) break;
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::waitpid(sshd_[host - 1], nullptr, 0);
  run_or_throw({tool("ip"), "link", "set", veth(host), "up"});
  start_sshd(host);
  wait_for_sshd(host);
}

std::vector<std::string> SshHosts::mpirun_argv(int np, const std::string& host_list) const {
  return {"/usr/bin/mpirun",
          "--allow-run-as-root",
          "-np",
          std::to_string(np),
          "-H",
          host_list,
          "--mca",
          "plm_rsh_agent",
          "ssh",
          "--mca",
          "oob_tcp_if_include",
          subnet(),
          "--mca",
          "btl_tcp_if_include",
          subnet(),
          "--mca",
          "btl",
          "self,vader,tcp",
          "-x",
          "OMPI_ALLOW_RUN_AS_ROOT",
          "-x",
          "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"};
}

std::vector<std::string> SshHosts::client_argv(const std::vector<std::string>& argv) const {
  std::vector<std::string> wrapped = {tool("unshare"),
                                      "--mount",
                                      "/bin/sh",
                                      "-c",
                                      "mount --bind \"$1\" \"$2\" && shift 2 && exec \"$@\"",
                                      "sh",
                                      dir_ + "/client-home",
                                      home_directory()};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

std::vector<std::string> SshHosts::pod_argv(int host, const std::vector<std::string>& argv) const {
  std::vector<std::string> words = {etc_hosts(), "h" + std::to_string(host)};
  words.insert(words.end(), argv.begin(), argv.end());
  return host_shell(netns_name(subnet_, host),
                    "mount --bind \"$1\" /etc/hosts && hostname \"$2\" && shift 2 && exec \"$@\"", words);
}

void SshHosts::kill_sshd(int host) {
  const std::vector<pid_t> pids = pids_in({netns_id_of_name(netns_name(subnet_, host))});
  for (pid_t pid : pids) {
    std::string comm;
    std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/comm"), comm);
    if (comm == "sshd") ::kill(pid, SIGKILL);
  }
}

void SshHosts::cut(int a, int b) {
  const std::string ns = netns_name(subnet_, a), iptables = tool("iptables");
  run_or_throw({tool("ip"), "netns", "exec", ns, iptables, "-A", "INPUT", "-s", address(b), "-j", "DROP"});
  run_or_throw({tool("ip"), "netns", "exec", ns, iptables, "-A", "OUTPUT", "-d", address(b), "-j", "DROP"});
}

void SshHosts::heal(int a) { run_quiet({tool("ip"), "netns", "exec", netns_name(subnet_, a), tool("iptables"), "-F"}); }

void SshHosts::unplug(int host) { run_or_throw({tool("ip"), "link", "set", veth(host), "down"}); }

std::vector<pid_t> SshHosts::processes_on_hosts(const std::string& comm_filter, int only_host) const {
  std::set<std::string> ids;
  for (int h = 1; h <= count_; ++h) {
    if (only_host == 0 || h == only_host) ids.insert(netns_id_of_name(netns_name(subnet_, h)));
  }
  std::vector<pid_t> found;
  for (pid_t pid : pids_in(ids)) {
    if (std::find(sshd_.begin(), sshd_.end(), pid) != sshd_.end()) continue;
    std::string comm;
    std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/comm"), comm);
    if (comm_filter.empty() || comm == comm_filter) found.push_back(pid);
  }
  return found;
}

bool SshHosts::nothing_on_hosts(std::chrono::milliseconds within, const std::string& comm_filter) const {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!processes_on_hosts(comm_filter).empty()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

void SshHosts::remove_everything() {
  if (subnet_ < 0) return;
  remove_subnet(tool("ip"), subnet_);
  for (pid_t pid : sshd_) {
    if (pid > 0) ::waitpid(pid, nullptr, 0);
  }
  sshd_.clear();
  // /run/sshd only if we made it and no other run of ours still uses it.
  if (created_run_sshd_ && !others_running(subnet_)) ::rmdir("/run/sshd");
  subnet_ = -1;
  if (reaper_fd_ >= 0) {
    (void)!::write(reaper_fd_, "d", 1);
    ::close(reaper_fd_);
    ::waitpid(reaper_, nullptr, 0);
  }
}

}  // namespace trainrun::test
