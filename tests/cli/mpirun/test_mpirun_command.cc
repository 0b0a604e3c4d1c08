// The --launcher mpirun translation, table-driven: what trainrun's options
// become on mpirun's command line, and how --mpi-args are split.
#include <doctest/doctest.h>

#include "cli/mpirun/mpirun_command.h"
#include "cli/plan/shell_words.h"
#include "trainrun/error.h"

using namespace trainrun::cli;
using Words = std::vector<std::string>;

namespace {

MpirunJob job_of(int np, Words command) {
  MpirunJob job;
  job.np = np;
  job.command = std::move(command);
  return job;
}

const Words kPlacement = {"--bind-to", "none", "--map-by", "slot"};

Words concat(std::initializer_list<Words> parts) {
  Words out;
  for (const Words& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::string error_of(const MpirunJob& job) {
  try {
    mpirun_command(job);
  } catch (const trainrun::Error& e) {
    CHECK(e.code() == trainrun::Error::Code::InvalidArgument);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("mpirun command lines") {
  struct Case {
    const char* name;
    MpirunJob job;
    Words expected;
  };
  MpirunJob hosts = job_of(8, {"./train", "--lr", "0.1"});
  hosts.hosts = {{"a", 4, ""}, {"b", 4, ""}};
  MpirunJob root_untagged = job_of(2, {"./p"});
  root_untagged.as_root = true;
  root_untagged.tag_output = false;
  MpirunJob env = job_of(2, {"./p"});
  env.job_env = {{"TRAINRUN_BACKEND", "mpi"}, {"TRAINRUN_COLLECTIVE_TIMEOUT", "60"}};
  env.forward_env = {"TRAINRUN_BACKEND", "LD_LIBRARY_PATH"};  // the job's value wins
  MpirunJob extra = job_of(2, {"./p", "x y"});
  extra.mpi_args = "--mca btl tcp,self --mca btl_tcp_if_include 'eth0 eth1'";
  MpirunJob oversubscribed = job_of(4, {"./p"});
  oversubscribed.local_cpus = 2;
  MpirunJob enough_cpus = job_of(2, {"./p"});
  enough_cpus.local_cpus = 2;
  MpirunJob remote_oversubscribed = job_of(4, {"./p"});
  remote_oversubscribed.local_cpus = 2;
  remote_oversubscribed.hosts = {{"a", 4, ""}};  // the user chose slots: no second guess
  MpirunJob mca = job_of(2, {"./p"});
  mca.mca = {"btl", "tcp,self", "plm_rsh_args", "-p 2222"};
  mca.mpi_args = "--mca x y";
  MpirunJob in_dir = job_of(2, {"./p"});
  in_dir.wdir = "/data/run";

  const Case cases[] = {
      {"local job", job_of(4, {"./p"}),
       concat({{"mpirun", "-np", "4", "-H", "localhost:4"}, kPlacement, {"--tag-output", "./p"}})},
      {"hosts with slots, program arguments untouched", hosts,
       concat({{"mpirun", "-np", "8", "-H", "a:4,b:4"}, kPlacement, {"--tag-output", "./train", "--lr", "0.1"}})},
      {"as root, untagged", root_untagged,
       concat({{"mpirun", "-np", "2", "-H", "localhost:2"}, kPlacement, {"--allow-run-as-root", "./p"}})},
      {"job settings by value, forwarded names by name", env,
       concat({{"mpirun", "-np", "2", "-H", "localhost:2"},
               kPlacement,
               {"--tag-output", "-x", "TRAINRUN_BACKEND=mpi", "-x", "TRAINRUN_COLLECTIVE_TIMEOUT=60", "-x",
                "LD_LIBRARY_PATH", "./p"}})},
      {"--mpi-args go right before the program", extra,
       concat(
           {{"mpirun", "-np", "2", "-H", "localhost:2"},
            kPlacement,
            {"--tag-output", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "eth0 eth1", "./p", "x y"}})},
      {"more local ranks than CPUs: ranks yield", oversubscribed,
       concat({{"mpirun", "-np", "4", "-H", "localhost:4"},
               kPlacement,
               {"--mca", "mpi_yield_when_idle", "1", "--tag-output", "./p"}})},
      {"as many CPUs as ranks: no yield", enough_cpus,
       concat({{"mpirun", "-np", "2", "-H", "localhost:2"}, kPlacement, {"--tag-output", "./p"}})},
      {"explicit hosts: the user's slots stand", remote_oversubscribed,
       concat({{"mpirun", "-np", "4", "-H", "a:4"}, kPlacement, {"--tag-output", "./p"}})},
      {"--mca pairs in order, before --mpi-args", mca,
       concat({{"mpirun", "-np", "2", "-H", "localhost:2"},
               kPlacement,
               {"--tag-output", "--mca", "btl", "tcp,self", "--mca", "plm_rsh_args", "-p 2222", "--mca", "x", "y",
                "./p"}})},
      {"-wdir: the ranks' working directory", in_dir,
       concat(
           {{"mpirun", "-np", "2", "-H", "localhost:2"}, kPlacement, {"--wdir", "/data/run", "--tag-output", "./p"}})},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    CHECK(mpirun_command(c.job) == c.expected);
  }
}

TEST_CASE("bad input names the bad token") {
  MpirunJob bad_name = job_of(2, {"./p"});
  bad_name.forward_env = {"NOT-A-NAME"};
  CHECK(error_of(bad_name) == "not an environment variable name: 'NOT-A-NAME'");
  MpirunJob bad_job_name = job_of(2, {"./p"});
  bad_job_name.job_env = {{"1X", "v"}};
  CHECK(error_of(bad_job_name) == "not an environment variable name: '1X'");
  MpirunJob no_slots = job_of(2, {"./p"});
  no_slots.hosts = {{"a", 0, ""}};
  CHECK(error_of(no_slots) == "host 'a:0' needs a name and at least one slot");
  MpirunJob quote = job_of(2, {"./p"});
  quote.mpi_args = "--mca btl 'tcp";
  CHECK(error_of(quote) == "--mpi-args: unterminated ' quote in: --mca btl 'tcp");
  CHECK(error_of(job_of(2, {})) == "no program given");
}

TEST_CASE("--mpi-args split like sh") {
  struct Case {
    const char* text;
    Words words;
  };
  const Case cases[] = {
      {"", {}},
      {"   \t\n ", {}},
      {"-a  b\tc\nd", {"-a", "b", "c", "d"}},
      {"'a b' \"c d\"", {"a b", "c d"}},
      {"x'a b'y", {"xa by"}},
      {"'' \"\"", {"", ""}},
      {"'$HOME \\n'", {"$HOME \\n"}},
      {"\"a\\\"b\\\\c\\$d\\`e\\x\"", {"a\"b\\c$d`e\\x"}},
      {"a\\ b \\'c", {"a b", "'c"}},
      {"a\\\nb c \\\n d", {"ab", "c", "d"}},
      {"\"line\\\ncontinued\"", {"linecontinued"}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    CHECK(split_shell_words(c.text) == c.words);
  }
  for (const char* bad : {"'open", "\"open", "trailing\\", "\"a\\\""}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(split_shell_words(bad), trainrun::Error);
  }
}

TEST_CASE("shell_join reads back as the same words") {
  const Words words = {"mpirun", "-x", "A=b c", "it's", "", "--mca", "btl", "tcp,self", "$HOME"};
  CHECK(shell_join(words) == "mpirun -x 'A=b c' 'it'\\''s' '' --mca btl tcp,self '$HOME'");
  CHECK(split_shell_words(shell_join(words)) == words);
}
