#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>

#include "cli/plan/argv_scan.h"
#include "cli/plan/options.h"
#include "cli/plan/program_path.h"

using namespace trainrun::cli;

namespace {

ParseResult parse(std::vector<const char*> args) {
  args.insert(args.begin(), "trainrun");
  return parse_options(static_cast<int>(args.size()), args.data());
}

}  // namespace

TEST_CASE("-np with one dash works, and the program's own -np is left alone") {
  const ParseResult r = parse({"--local", "-np", "4", "./prog", "-np", "9", "--local"});
  REQUIRE(r.exit_code == -1);
  CHECK(r.options.np == 4);
  CHECK(r.options.local);
  CHECK(r.options.command == std::vector<std::string>{"./prog", "-np", "9", "--local"});
}

TEST_CASE("--np=N, -np=N and option values that look like -np") {
  CHECK(parse({"--np=3", "p"}).options.np == 3);
  CHECK(parse({"-np=2", "p"}).options.np == 2);
  const ParseResult r = parse({"--backend", "tcp", "-np", "2", "p", "a b"});
  CHECK(r.options.backend == "tcp");
  CHECK(r.options.command == std::vector<std::string>{"p", "a b"});
}

TEST_CASE("--backend gloo, the tcp backend's former name, is tcp") {
  CHECK(parse({"--backend", "gloo", "-np", "2", "p"}).options.backend == "tcp");
}

TEST_CASE("usage errors exit 2") {
  CHECK(parse({"-np", "0", "p"}).exit_code == 2);
  CHECK(parse({"-np", "x", "p"}).exit_code == 2);
  CHECK(parse({"--backend", "udp", "-np", "1", "p"}).exit_code == 2);
  CHECK(parse({"--no-such-option"}).exit_code == 2);
}

TEST_CASE("a usage error keeps its line and the --report FILE read before it (for the report)") {
  const ParseResult bad_value = parse({"-np", "0", "--report", "r.json", "p"});
  CHECK(bad_value.exit_code == 2);
  CHECK(bad_value.error.rfind("trainrun: error: --np: ", 0) == 0);
  CHECK(bad_value.options.report == "r.json");  // CLI11 read every option before it checked -np
  const ParseResult unknown = parse({"--report=r.json", "--no-such-option", "p"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.error.rfind("trainrun: error: unknown option '--no-such-option'", 0) == 0);
  CHECK(unknown.options.report == "r.json");
  // After the unknown option nothing is read: it may be the program's.
  CHECK(parse({"--no-such-option", "--report", "r.json", "p"}).options.report.empty());
  CHECK(parse({"-H", "", "--report", "r.json", "p"}).options.report == "r.json");
  // The help is no error.
  CHECK(parse({"--help"}).error.empty());
}

TEST_CASE("the argv scan stops at -- and at the program") {
  OptionNames names;
  names.long_names = {{"np", true}, {"hostfile", true}};
  names.short_names = {{'v', false}, {'x', true}};
  CHECK(scan_options({"-np", "2", "--", "-np"}, names).args == std::vector<std::string>{"--np", "2", "--", "-np"});
  CHECK(scan_options({"prog", "-np"}, names).args == std::vector<std::string>{"prog", "-np"});
  CHECK(scan_options({"-x", "-np", "-hostfile", "h", "p", "-hostfile"}, names).args ==
        std::vector<std::string>{"-x", "-np", "--hostfile", "h", "p", "-hostfile"});
  CHECK(scan_options({"-hostfle", "h"}, names).error ==
        "unknown option '-hostfle'; did you mean --hostfile? (trainrun --help lists every option)");
  CHECK(scan_options({"--zzzzzz"}, names).error == "unknown option '--zzzzzz' (trainrun --help lists every option)");
  CHECK(scan_options({"-vx"}, names).error.empty());  // a cluster: -v, then -x
  CHECK(scan_options({"-h", "--help"}, names).error.empty());
  CHECK_FALSE(scan_options({"-hx"}, names).error.empty());  // the help is never part of a cluster
  CHECK_FALSE(scan_options({"-help"}, names).error.empty());
  // Two values: one token, joined by the option's delimiter (',' unless it has its own).
  names.long_names["mca"] = 2;
  names.long_names["range"] = 2;
  names.delimiters["mca"] = '\x1f';
  CHECK(scan_options({"-mca", "btl", "tcp,self", "-range", "1", "2", "p", "-mca", "a", "b"}, names).args ==
        std::vector<std::string>{"--mca=btl\x1ftcp,self", "--range=1,2", "p", "-mca", "a", "b"});
}

TEST_CASE("programs are found like execvp finds them, or named in the error") {
  const ProgramLookup sh = find_program("sh", "/nonexistent:/bin:/usr/bin");
  REQUIRE(sh.path);
  CHECK(sh.path->find("/sh") != std::string::npos);
  const ProgramLookup missing = find_program("no-such-program-xyz", "/bin:/usr/bin");
  CHECK_FALSE(missing.path);
  CHECK(missing.exit_code == 127);
  CHECK(missing.error == "program 'no-such-program-xyz' not found in PATH");
  const ProgramLookup absent = find_program("./no/such/file", nullptr);
  CHECK(absent.error == "no such file: ./no/such/file");
  char dir[] = "/tmp/trainrun-test-XXXXXX";
  REQUIRE(mkdtemp(dir));
  const std::string plain = std::string(dir) + "/plain";
  std::ofstream(plain) << "data";
  const ProgramLookup not_exec = find_program(plain, nullptr);
  CHECK(not_exec.exit_code == 126);
  CHECK(not_exec.error == "not executable: " + plain);
  CHECK(find_program(dir, nullptr).exit_code == 126);
  ::unlink(plain.c_str());
  ::rmdir(dir);
}

TEST_CASE("--launcher mpirun, its --mpi alias and its options") {
  const ParseResult plain = parse({"-np", "2", "p"});
  CHECK(plain.options.launcher == "");  // srun inside a Slurm allocation, else local
  CHECK(plain.options.tag_output);
  CHECK_FALSE(plain.options.dry_run);
  CHECK(parse({"--launcher", "mpirun", "-np", "2", "p"}).options.launcher == "mpirun");
  const ParseResult mpi =
      parse({"--mpi", "-np", "2", "--mpi-args", "--mca btl 'tcp,self'", "--no-tag-output", "--dry-run", "p", "--mpi"});
  REQUIRE(mpi.exit_code == -1);
  CHECK(mpi.options.launcher == "mpirun");
  CHECK(mpi.options.mpi_args == "--mca btl 'tcp,self'");
  CHECK_FALSE(mpi.options.tag_output);
  CHECK(mpi.options.dry_run);
  CHECK(mpi.options.command == std::vector<std::string>{"p", "--mpi"});
  CHECK(parse({"--launcher", "slurm", "-np", "2", "p"}).exit_code == 2);
}

TEST_CASE("every float option refuses nan and inf, naming the option and the value") {
  for (const char* option :
       {"--timeout", "--grace", "--fusion-threshold-mb", "--cycle-time-ms", "--stall-warning", "--stall-shutdown"}) {
    for (const char* value : {"nan", "NaN", "inf", "-inf", "1e999"}) {
      CAPTURE(option);
      CAPTURE(value);
      CHECK(parse({option, value, "-np", "1", "p"}).exit_code == 2);
    }
    CHECK(parse({option, "1", "-np", "1", "p"}).exit_code == -1);
  }
}

TEST_CASE("an empty -H or --hostfile is a usage error, not 'no hosts given'") {
  CHECK(parse({"-H", "", "p"}).exit_code == 2);
  CHECK(parse({"--hostfile", "", "p"}).exit_code == 2);
}

TEST_CASE("elastic flags: Horovod's and torchrun's names, elastic mode only when asked") {
  CHECK_FALSE(parse({"-np", "2", "p"}).options.elastic());
  const ParseResult r = parse({"-np", "4", "--min-np", "2", "--max-np", "8", "--reset-limit", "3", "--elastic-timeout",
                               "30", "--blacklist-cooldown", "5.5", "p"});
  REQUIRE(r.exit_code == -1);
  CHECK(r.options.elastic());
  CHECK(r.options.min_np == 2);
  CHECK(r.options.max_np == 8);
  CHECK(r.options.reset_limit == 3);
  CHECK(r.options.elastic_timeout_s == 30);
  CHECK(r.options.blacklist_cooldown_s == 5.5);
  CHECK(parse({"--max-restarts", "2", "--host-discovery-script", "./d.sh", "p"}).options.reset_limit == 2);
  CHECK(parse({"--host-discovery-script", "./d.sh", "p"}).options.elastic());
  CHECK(parse({"--min-np", "0", "p"}).exit_code == 2);
  CHECK(parse({"--elastic-timeout", "nan", "p"}).exit_code == 2);
  CHECK(parse({"--blacklist-cooldown", "-1", "p"}).exit_code == 2);
  CHECK(r.options.elastic_hang_timeout_s == 30);  // on by default
  CHECK(parse({"--elastic-hang-timeout", "12.5", "p"}).options.elastic_hang_timeout_s == 12.5);
  CHECK(parse({"--elastic-hang-timeout", "-1", "p"}).exit_code == 2);
}

TEST_CASE("horovodrun's remaining flags: mapped to trainrun's setting, values consumed, the program intact") {
  const ParseResult r = parse({"--min-num-proc",
                               "2",
                               "--max-num-proc",
                               "6",
                               "--slots-per-host",
                               "3",
                               "--blacklist-cooldown-range",
                               "60",
                               "300",
                               "--gloo-timeout-seconds",
                               "45",
                               "--no-mpi-threads-disable",
                               "--timeline-mark-cycles",
                               "--log-with-timestamp",
                               "--thread-affinity",
                               "1",
                               "--num-nccl-streams",
                               "2",
                               "--autotune-log-file",
                               "a.csv",
                               "--autotune-warmup-samples",
                               "3",
                               "--autotune-steps-per-sample",
                               "4",
                               "--autotune-bayes-opt-max-samples",
                               "5",
                               "--autotune-gaussian-process-noise",
                               "0.5",
                               "--binding-args",
                               "--bind-to core",
                               "./train",
                               "--epochs",
                               "3"});
  REQUIRE(r.exit_code == -1);
  const Options& o = r.options;
  CHECK(o.min_np == 2);
  CHECK(o.max_np == 6);
  CHECK(o.slots_per_host == 3);
  CHECK(o.blacklist_cooldown_s == 60);
  CHECK(o.env_forward == std::vector<std::string>{"TRAINRUN_COLLECTIVE_TIMEOUT=45", "TRAINRUN_MPI_THREADS=multiple"});
  CHECK(o.timeline_mark_cycles);
  CHECK(o.timestamp_output);
  CHECK(o.mpi_args.empty());  // --binding-args go to mpirun only
  CHECK(o.command == std::vector<std::string>{"./train", "--epochs", "3"});
  // One note per flag that trainrun does not do as asked.
  CHECK(o.notes.size() == 10);
}

TEST_CASE("--binding-args reach mpirun's command line with --launcher mpirun") {
  const ParseResult r = parse({"--mpi", "--mpi-args", "--mca x y", "--binding-args", "--bind-to core", "p"});
  REQUIRE(r.exit_code == -1);
  CHECK(r.options.mpi_args == "--mca x y --bind-to core");
  CHECK(r.options.notes.empty());
}

TEST_CASE("flags that name trainrun's default are accepted without a word") {
  for (const char* flag :
       {"--stall-check", "--log-without-timestamp", "--log-hide-timestamp", "--no-autotune", "--no-torus-allreduce",
        "--no-hierarchical-allgather", "--mpi-threads-disable", "--no-timeline-mark-cycles"}) {
    CAPTURE(flag);
    const ParseResult r = parse({flag, "-np", "1", "p"});
    CHECK(r.exit_code == -1);
    CHECK(r.options.notes.empty());
    CHECK(r.options.command == std::vector<std::string>{"p"});
  }
}

TEST_CASE("a two-value option never takes the program's words; a bad range is exit 2") {
  const ParseResult r = parse({"-np", "1", "--blacklist-cooldown-range", "5", "10", "p", "7", "8"});
  REQUIRE(r.exit_code == -1);
  CHECK(r.options.blacklist_cooldown_s == 5);
  CHECK(r.options.command == std::vector<std::string>{"p", "7", "8"});
  CHECK(parse({"--blacklist-cooldown-range=5,10", "p"}).options.blacklist_cooldown_s == 5);
  CHECK(parse({"--blacklist-cooldown-range", "10", "5", "p"}).exit_code == 2);
  CHECK(parse({"--blacklist-cooldown-range", "10", "p"}).exit_code == 2);
  CHECK(parse({"--slots-per-host", "0", "p"}).exit_code == 2);
  CHECK(parse({"--jsrun", "-np", "1", "p"}).exit_code == 2);
}
