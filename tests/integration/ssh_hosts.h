// SshHosts: four real hosts for the multi-host tests and the SSH launch
// benchmark. Each is a network namespace on a bridge (10.77.N.1..4; the
// launcher side is 10.77.N.254 on the bridge in the root namespace) with
// its own hostname (UTS namespace, `hostname` says h1..h4), the hosts' own
// home (shared by them, as a cluster's: only an SSH key, known_hosts and a
// config naming h1..hN, so hosts reach each other as a tree of agents
// needs) and a real OpenSSH sshd with its own host key. The test's client
// key is authorized everywhere; the client side gets a home of its own
// (~/.ssh/config naming h1..h4 and a few broken hosts, known_hosts files,
// the key) that client_argv() mounts over the real home in a private mount
// namespace, so ~/.ssh is honoured for real and the machine's own is never
// touched.
//
// The bridge name is the claim on subnet N (creating it is atomic), so CI
// jobs on one machine never collide; its alias records the owner's pid,
// so a later run removes what a crashed one left. The destructor removes
// everything: processes in the namespaces, namespaces, bridge, files, and
// /run/sshd when we created it and no other run of ours still needs it.
// Root only. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainrun::test {

// Thrown when this machine cannot make the hosts (not root, no `ip`, no
// sshd, namespaces refused); what() says why, for a skip (exit 77).
struct SshHostsUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class SshHosts {
 public:
  static constexpr int kHosts = 4;      // what the tests use
  static constexpr int kMaxHosts = 64;  // a scale benchmark's most

  // `hosts` hosts, h1..h<hosts>, kHosts to kMaxHosts.
  explicit SshHosts(int hosts = kHosts);
  ~SshHosts();
  // The hosts, or nullptr after printing "SKIP: ..." with the reason they
  // cannot be made here (the caller exits 77).
  static std::unique_ptr<SshHosts> make_or_say_why(int hosts = kHosts);
  int count() const { return count_; }
  SshHosts(const SshHosts&) = delete;
  SshHosts& operator=(const SshHosts&) = delete;

  // host is 1..count().
  std::string address(int host) const;
  std::string launcher_address() const;
  std::string subnet() const;  // "10.77.N.0/24"
  const std::string& bridge() const { return bridge_; }
  const std::string& dir() const { return dir_; }
  // A directory that exists for the launcher (in its mount namespace) but
  // not on the hosts: a working directory the pre-flight must refuse.
  std::string client_only_dir() const;
  // The client key's path as the launcher sees it.
  std::string client_key() const;
  // The network namespace of a host, for `ip netns exec` (e.g. an iptables
  // rule that cuts one path; it goes with the namespace).
  std::string netns(int host) const;
  // The launcher-side end of a host's veth pair (its other end is eth0 in
  // the host): a qdisc on it shapes what the host receives.
  std::string veth(int host) const;

  // Open MPI's mpirun over these hosts for `np` ranks on `host_list`
  // ("ADDRESS:SLOTS,..."): ssh to them, its daemons and its TCP transport on
  // their subnet, as root. Options and the program follow.
  std::vector<std::string> mpirun_argv(int np, const std::string& host_list) const;
  // `argv` run as the launcher: in a private mount namespace whose home
  // is the test's client home. argv[0] must be an absolute path.
  std::vector<std::string> client_argv(const std::vector<std::string>& argv) const;
  // `argv` run on host `host` as a scheduler's pod runs it (no SSH): in the
  // host's network namespace, with its hostname (hN) and its /etc/hosts,
  // in a mount and UTS namespace of its own. argv[0] must be an absolute path.
  std::vector<std::string> pod_argv(int host, const std::vector<std::string>& argv) const;
  // The /etc/hosts every host sees (h1..h4 and the launcher's address).
  std::string etc_hosts() const { return dir_ + "/etc-hosts"; }

  // Faults: every sshd of a host (listener and sessions) killed, so its
  // connections close (FIN); or its link cut, so packets vanish (no FIN).
  void kill_sshd(int host);
  void unplug(int host);
  // A partition: hosts a and b drop each other's packets (iptables in a's
  // namespace, both ways) while both still reach the launcher; heal(a)
  // removes a's rules.
  void cut(int a, int b);
  void heal(int a);
  // The host as new after a fault: every process in it killed, its link
  // up, a fresh sshd.
  void restore(int host);

  // Processes in the hosts' namespaces other than the sshd listeners:
  // sessions, agents, ranks. `comm_filter` keeps only that command name;
  // `only_host` (1..count()), only that host's.
  std::vector<pid_t> processes_on_hosts(const std::string& comm_filter = "", int only_host = 0) const;
  // True once processes_on_hosts(comm_filter) is empty, polling up to `within`.
  bool nothing_on_hosts(std::chrono::milliseconds within, const std::string& comm_filter = "") const;

 private:
  void claim_subnet();
  void start_reaper();
  void make_keys_and_homes();
  void start_hosts();
  void start_sshd(int host);
  void wait_for_sshd(int host);
  void remove_everything();

  int count_;
  int subnet_ = -1;
  std::string bridge_, dir_;
  std::vector<pid_t> sshd_;  // listener of host h at [h - 1]
  bool created_run_sshd_ = false;
  pid_t reaper_ = -1;
  int reaper_fd_ = -1;  // closed without a byte: we died, clean up
};

}  // namespace trainrun::test
