// One trainrun per node, as a scheduler runs it (Kubeflow's PyTorchJob,
// srun per node): three network-namespace "pods" (tests/integration/
// ssh_hosts.h: h1..h3, each with its own hostname; no SSH is used), each
// running `trainrun --nnodes 3 --node-rank I --master-addr h1 ...` itself.
// What a user sees on every node: exit codes, messages, the job's output on
// node 0, the report, and that nothing of the job is left on any host.
// Exits 77 (skip) with the reason when the hosts cannot be made.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <fstream>
#include <memory>

#include "tests/integration/elastic_steps.h"
#include "tests/integration/report_check.h"
#include "tests/integration/ssh_hosts.h"
#include "tests/integration/ssh_test_main.h"
#include "tests/integration/trainrun_runner.h"

using namespace trainrun;
using namespace trainrun::test;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

SshHosts* g_hosts = nullptr;
SshHosts& hosts() { return *g_hosts; }

constexpr int kNodes = 3;

// The job's nodes, each a trainrun started on its pod; the tag is in every
// node's environment, so their ranks carry it too.
struct Nodes {
  std::string tag = unique_tag();
  std::vector<std::unique_ptr<Child>> nodes;

  // trainrun ARGS on host `host` (1..3), with `env` added to its environment.
  Child& start(int host, const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    ProcessOptions options;
    options.env = env;
    options.env.push_back(tag);
    options.env.push_back("TRAINRUN_COLLECTIVE_TIMEOUT=60");
    options.timeout = seconds(240);
    std::vector<std::string> argv = args;
    argv.insert(argv.begin(), trainrun_bin());
    nodes.push_back(std::make_unique<Child>(hosts().pod_argv(host, argv), options));
    return *nodes.back();
  }
  std::vector<ProcessResult> wait_all() {
    std::vector<ProcessResult> results;
    for (auto& node : nodes) results.push_back(node->wait());
    return results;
  }
};

// torchrun's static rendezvous for node `rank` of `nodes`, 2 ranks each.
std::vector<std::string> per_node(int rank, std::vector<std::string> program, int nodes = kNodes) {
  std::vector<std::string> args = {
      "--nnodes", std::to_string(nodes), "--node-rank", std::to_string(rank), "--master-addr",
      "h1",       "--master-port",       "29500",       "--nproc-per-node",   "2"};
  args.insert(args.end(), program.begin(), program.end());
  return args;
}

// Nothing of the job anywhere: no rank (by tag) and nothing but the sshd
// listeners in the hosts' namespaces.
bool nothing_left_anywhere(const std::string& tag, milliseconds within = seconds(5)) {
  return nothing_left(tag, within) && hosts().nothing_on_hosts(within);
}

std::string info(const std::vector<ProcessResult>& r) {
  std::string text;
  for (std::size_t i = 0; i < r.size(); ++i) {
    text += "--- node " + std::to_string(i) + " exit " + std::to_string(r[i].exit_code) + "\nstdout:\n" + r[i].out +
            "stderr:\n" + r[i].err;
  }
  return text;
}

// A job of sleeping ranks on every node, each printing "ready" once they
// have all met.
std::vector<std::string> sleepers() { return {rank_program(), "init", "print:ready", "sleep:60000"}; }

}  // namespace

TEST_CASE("three pods x 2 ranks: one rank order, the job's output on node 0, every node exits 0") {
  Nodes job;
  // The nodes start in any order: node 0 last, after the others wait for it.
  for (int node : {2, 1, 0}) {
    job.start(node + 1, per_node(node, {program_path("CONFORMANCE"), "--test-case=*allreduce*,*broadcast*"}),
              {"CONFORMANCE_TRANSPORT=shm"});
    if (node) ::usleep(300'000);
  }
  std::vector<ProcessResult> r = job.wait_all();
  std::reverse(r.begin(), r.end());
  INFO(info(r));
  for (const ProcessResult& node : r) CHECK(node.exit_code == 0);
  CHECK(count(r[0].out, "of 6 (tcp): passed") == 6);
  for (int rank = 0; rank < 6; ++rank) CHECK(contains(r[0].out, "[" + std::to_string(rank) + "] "));
  CHECK(r[1].out.empty());
  CHECK(r[2].out.empty());
  CHECK(r[1].err.empty());  // a clean job says nothing on the other nodes
  CHECK(count(r[0].err, "trainrun: note: no shared secret") == 1);
  CHECK(nothing_left_anywhere(job.tag));
}

TEST_CASE("every rank knows its place: global ranks node by node, local and cross ranks, hosts by name") {
  Nodes job;
  for (int node = 0; node < kNodes; ++node) job.start(node + 1, per_node(node, {rank_program(), "init", "topology"}));
  const std::vector<ProcessResult> r = job.wait_all();
  INFO(info(r));
  REQUIRE(r[0].exit_code == 0);
  for (int rank = 0; rank < 6; ++rank) {
    CAPTURE(rank);
    CHECK(contains(r[0].out, "rank " + std::to_string(rank) + ": backend=tcp size=6 local=" + std::to_string(rank % 2) +
                                 "/2 cross=" + std::to_string(rank / 2) + "/3"));
  }
}

TEST_CASE("a node's trainrun killed (kill -9): every node ends, naming the lost node, nothing left") {
  Nodes job;
  for (int node = 0; node < kNodes; ++node) job.start(node + 1, per_node(node, sleepers()));
  REQUIRE(job.nodes[0]->wait_for_output("rank 5: ready", seconds(60)));
  job.nodes[2]->signal(SIGKILL);
  const std::vector<ProcessResult> r = job.wait_all();
  INFO(info(r));
  CHECK(r[0].exit_code == 125);
  CHECK(contains(r[0].err, "trainrun: lost node 2 (h3, " + hosts().address(3) + "): "));
  CHECK(r[1].exit_code == 125);
  CHECK(contains(r[1].err, "lost node 2 (h3, "));  // node 0's summary, on node 1 too
  CHECK(r[2].signal == SIGKILL);
  CHECK(nothing_left_anywhere(job.tag));
}

TEST_CASE("a node that never arrives: node 0 names it after the join timeout, the others end too") {
  Nodes job;
  for (int node = 0; node < 2; ++node) {
    std::vector<std::string> args = per_node(node, sleepers());
    args.insert(args.begin(), {"--rdzv-conf", "join_timeout=3"});
    job.start(node + 1, args);
  }
  const std::vector<ProcessResult> r = job.wait_all();
  INFO(info(r));
  const std::string line =
      "trainrun: error: node 2 of 3 did not join node 0 at h1:29500 within 3 s (--rdzv-conf join_timeout=S)\n";
  CHECK(r[0].exit_code == 125);
  CHECK(contains(r[0].err, line));
  CHECK(r[1].exit_code == 125);
  CHECK(contains(r[1].err, line));
  CHECK(r[0].out.empty());
  CHECK(nothing_left_anywhere(job.tag));
}

TEST_CASE("SIGTERM to one node's trainrun ends the job on every node with 143") {
  Nodes job;
  for (int node = 0; node < kNodes; ++node) job.start(node + 1, per_node(node, sleepers()));
  REQUIRE(job.nodes[0]->wait_for_output("rank 5: ready", seconds(60)));
  job.nodes[1]->signal(SIGTERM);
  const std::vector<ProcessResult> r = job.wait_all();
  INFO(info(r));
  for (const ProcessResult& node : r) CHECK(node.exit_code == 143);
  CHECK(contains(r[0].err, "trainrun: node 1 (h2, " + hosts().address(2) + ") received SIGTERM\n"));
  CHECK(contains(r[0].err, "trainrun: received SIGTERM, stopping the job"));
  CHECK(nothing_left_anywhere(job.tag));
}

TEST_CASE("a rank that fails on node 2: its code on every node, named in node 0's summary and report") {
  const TempReport report;
  Nodes job;
  for (int node = 0; node < kNodes; ++node) {
    std::vector<std::string> args = per_node(node, {rank_program(), "init", "eprint:boom", "exit:5:3", "sleep:60000"});
    if (node == 0) args.insert(args.begin(), {"--report", report.path});
    job.start(node + 1, args);
  }
  const std::vector<ProcessResult> r = job.wait_all();
  INFO(info(r));
  for (const ProcessResult& node : r) CHECK(node.exit_code == 3);
  CHECK(contains(r[0].err, "trainrun: rank 5 (host h3, pid "));
  CHECK(contains(r[2].err, "trainrun: job failed: rank 5 (host h3, pid "));  // node 0's summary
  const nlohmann::json json = checked_report(report.path);
  REQUIRE(json.is_object());
  CHECK(json["launcher"] == "per-node");
  CHECK(json["outcome"] == "rank_failed");
  CHECK(json["failure"]["rank"] == 5);
  CHECK(json["hosts"].size() == 3);
  CHECK(json["hosts"][2]["name"] == "h3");
  CHECK(contains(json["failure"]["stderr_tail"].dump(), "boom"));
  CHECK(nothing_left_anywhere(job.tag));
}

TEST_CASE("PyTorchJob's environment alone (PET_*, MASTER_ADDR, RANK, WORLD_SIZE) starts the job") {
  Nodes job;
  for (int node = 0; node < kNodes; ++node) {
    const std::string rank = std::to_string(node);
    job.start(node + 1, {rank_program(), "init", "allreduce"},
              {"PET_NNODES=3", "PET_NODE_RANK=" + rank, "PET_NPROC_PER_NODE=2", "PET_MASTER_ADDR=h1",
               "PET_MASTER_PORT=23456", "MASTER_ADDR=h1", "MASTER_PORT=23456", "WORLD_SIZE=3", "RANK=" + rank});
  }
  const std::vector<ProcessResult> r = job.wait_all();
  INFO(info(r));
  for (const ProcessResult& node : r) CHECK(node.exit_code == 0);
  CHECK(count(r[0].out, ": sum=15\n") == 6);
  CHECK(nothing_left_anywhere(job.tag));
}

TEST_CASE("torchrun's c10d rendezvous: no node ranks, the endpoint's node serves, the rest join in turn") {
  Nodes job;
  for (int node = 0; node < kNodes; ++node) {
    job.start(node + 1, {"--nnodes", "3", "--nproc-per-node", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                         "h1:29400", "--rdzv-id", "job7", rank_program(), "init", "allreduce"});
    ::usleep(200'000);
  }
  const std::vector<ProcessResult> r = job.wait_all();
  INFO(info(r));
  for (const ProcessResult& node : r) CHECK(node.exit_code == 0);
  CHECK(count(r[0].out, ": sum=15\n") == 6);
  CHECK(nothing_left_anywhere(job.tag));
}

TEST_CASE("a shared secret: nodes that hold it run; a node with another is refused, naming why") {
  char dir[] = "/tmp/trainrun-secret-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  const std::string good = std::string(dir) + "/good", bad = std::string(dir) + "/bad";
  std::ofstream(good) << "correct horse battery staple\n";
  std::ofstream(bad) << "another secret entirely\n";
  {
    Nodes job;
    for (int node = 0; node < kNodes; ++node) {
      std::vector<std::string> args = per_node(node, {rank_program(), "init", "allreduce"});
      args.insert(args.begin(), {"--rdzv-secret-file", good});
      job.start(node + 1, args);
    }
    const std::vector<ProcessResult> r = job.wait_all();
    INFO(info(r));
    for (const ProcessResult& node : r) CHECK(node.exit_code == 0);
    CHECK(count(r[0].out, ": sum=15\n") == 6);
    CHECK_FALSE(contains(r[0].err, "no shared secret"));
  }
  {
    Nodes job;
    for (int node = 0; node < kNodes; ++node) {
      std::vector<std::string> args = per_node(node, sleepers());
      args.insert(args.begin(), {"--rdzv-conf", "join_timeout=4"});
      job.start(node + 1, args, {"TRAINRUN_RDZV_SECRET=" + read_file(node == 2 ? bad : good)});
    }
    const std::vector<ProcessResult> r = job.wait_all();
    INFO(info(r));
    CHECK(r[2].exit_code == 125);
    CHECK(contains(r[2].err,
                   "trainrun: error: node 0 at h1:29500 refused this node: node 0's shared secret differs "
                   "from this node's"));
    CHECK(r[0].exit_code == 125);
    CHECK(contains(r[0].err, "node 2 of 3 did not join"));
    CHECK(nothing_left_anywhere(job.tag));
  }
  (void)!std::system(("rm -rf " + std::string(dir)).c_str());
}

TEST_CASE("--max-restarts 1: a rank's failure restarts every node's ranks together") {
  char dir[] = "/tmp/trainrun-restart-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  const std::string marker = std::string(dir) + "/failed-once";
  const std::string script = std::string(dir) + "/rank.sh";
  std::ofstream(script) << "#!/bin/sh\n"
                           "if [ \"$TRAINRUN_RANK\" = 3 ] && [ ! -e "
                        << marker << " ]; then touch " << marker
                        << "; exit 4; fi\n"
                           "echo \"run $TORCHELASTIC_RESTART_COUNT rank $TRAINRUN_RANK\"\n";
  ::chmod(script.c_str(), 0755);
  Nodes job;
  for (int node = 0; node < kNodes; ++node) {
    std::vector<std::string> args = per_node(node, {script});
    args.insert(args.begin(), {"--max-restarts", "1"});
    job.start(node + 1, args);
  }
  const std::vector<ProcessResult> r = job.wait_all();
  INFO(info(r));
  for (const ProcessResult& node : r) CHECK(node.exit_code == 0);
  CHECK(contains(r[0].err, "restarting the job (restart 1 of 1)"));
  for (int rank = 0; rank < 6; ++rank) CHECK(contains(r[0].out, "run 1 rank " + std::to_string(rank) + "\n"));
  CHECK(nothing_left_anywhere(job.tag));
  (void)!std::system(("rm -rf " + std::string(dir)).c_str());
}

TEST_CASE("a stranger at node 0's port (HTTP, random bytes, silence) never harms the job") {
  Nodes job;
  for (int node = 0; node < kNodes; ++node) {
    job.start(node + 1, per_node(node, {rank_program(), "init", "print:ready", "sleep:2000", "allreduce"}));
  }
  REQUIRE(job.nodes[0]->wait_for_output("rank 5: ready", seconds(60)));
  // From h4, which is no node of the job: an HTTP request, random bytes,
  // and a connection that says nothing; each is closed, none joins.
  const ProcessResult stranger = run_process(
      hosts().pod_argv(4, {"/bin/bash", "-c",
                           "exec 3<>/dev/tcp/h1/29500 && printf 'GET / HTTP/1.1\\r\\n\\r\\n' >&3; sleep 0.5; "
                           "exec 4<>/dev/tcp/h1/29500 && head -c 100000 /dev/urandom >&4; sleep 0.5; "
                           "exec 5<>/dev/tcp/h1/29500; sleep 1; exit 0"}));
  CHECK(stranger.exit_code == 0);
  const std::vector<ProcessResult> r = job.wait_all();
  INFO(info(r));
  for (const ProcessResult& node : r) CHECK(node.exit_code == 0);
  CHECK(count(r[0].out, ": sum=15\n") == 6);
  CHECK(nothing_left_anywhere(job.tag));
}

namespace {

// An elastic job of 2 to 3 nodes: node `rank`'s trainrun, the workers
// stepping for a while (tests/integration/elastic_program.cc).
std::vector<std::string> elastic_node(int rank) {
  std::vector<std::string> args =
      per_node(rank, {program_path("ELASTIC_PROGRAM"), "--steps", "50", "--mb", "1", "--sleep-ms", "100"});
  args[1] = "2:3";  // --nnodes MIN:MAX
  args.insert(args.begin(), {"--rdzv-conf", "last_call_timeout=1"});
  return args;
}

}  // namespace

TEST_CASE("elastic --nnodes 2:3: a node that comes late joins, and the world grows from 4 to 6 ranks") {
  Nodes job;
  job.start(1, elastic_node(0));
  job.start(2, elastic_node(1));
  REQUIRE(job.nodes[0]->wait_for_output("] step 3 size 4", seconds(120)));
  job.start(3, elastic_node(2));
  const std::vector<ProcessResult> r = job.wait_all();
  INFO(info(r));
  for (const ProcessResult& node : r) CHECK(node.exit_code == 0);
  CHECK(contains(r[0].err, "trainrun: elastic: starting 2 worker(s) on h3"));
  const std::vector<ElasticStep> steps = elastic_steps(r[0].out);
  REQUIRE(!steps.empty());
  CHECK(steps.front().size == 4);
  CHECK(steps.back().size == 6);
  CHECK(count(r[0].out, "done at step 50 size 6") == 6);
  CHECK_FALSE(contains(r[0].out, "wrong result"));
  CHECK(nothing_left_anywhere(job.tag));
}

TEST_CASE("elastic --nnodes 2:3: a node's trainrun killed, the others go on without it") {
  Nodes job;
  for (int node = 0; node < kNodes; ++node) job.start(node + 1, elastic_node(node));
  REQUIRE(job.nodes[0]->wait_for_output("] step 3 size 6", seconds(120)));
  job.nodes[2]->signal(SIGKILL);
  const std::vector<ProcessResult> r = job.wait_all();
  INFO(info(r));
  CHECK(r[0].exit_code == 0);
  CHECK(r[1].exit_code == 0);
  CHECK(contains(r[0].err, "h3"));
  const std::vector<ElasticStep> steps = elastic_steps(r[0].out);
  REQUIRE(!steps.empty());
  CHECK(steps.back().size == 4);
  CHECK(count(r[0].out, "done at step 50 size 4") == 4);
  CHECK(nothing_left_anywhere(job.tag));
}

int main(int argc, char** argv) { return run_with_ssh_hosts(argc, argv, g_hosts); }
