#include "bench_options.h"

#include "../example_cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include <trainrun/trainrun.h>

namespace bench {
namespace {

// "4", "64K", "256M", "1G", "1GB": bytes.
CLI::Validator byte_size() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::size_t bytes = 0;
        if (parse_size(text.c_str(), bytes)) {
          text = std::to_string(bytes);
          return "";
        }
        return "'" + text + "' is not a size in bytes (e.g. 4, 64K, 256M, 1G)";
      },
      "SIZE");
}

std::vector<std::string> names(bool types) {
  std::vector<std::string> out;
  if (types) {
    for (auto t : trainrun::kAllDataTypes) out.push_back(trainrun::to_string(t));
  } else {
    for (auto o : trainrun::kAllReduceOps) out.push_back(trainrun::to_string(o));
  }
  return out;
}

}  // namespace

std::optional<Config> parse_options(int argc, char** argv, int& exit_code) {
  Config c;
  CLI::App app(
      "allreduce_bench: throughput and latency of a collective per message size, in the style of "
      "nccl-tests (trainrun --local -np 2 allreduce_bench --min-bytes 4 --max-bytes 256M)",
      "allreduce_bench");
  app.add_option("--min-bytes", c.min_bytes, "Smallest message")->transform(byte_size())->capture_default_str();
  app.add_option("--max-bytes", c.max_bytes, "Largest message")->transform(byte_size())->capture_default_str();
  app.add_option("--factor", c.factor, "Each size is the previous one times this")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  app.add_option("--iters", c.iters, "Timed iterations per size (default: as many as move --budget bytes, 5 to 1000)")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--budget", c.budget, "Bytes to move per size when --iters is not given")
      ->transform(byte_size())
      ->capture_default_str();
  app.add_option("--max-iters", c.max_iters, "The most iterations --budget may ask for")
      ->check(CLI::Range(5, 1 << 30))
      ->capture_default_str();
  app.add_option("--warmup", c.warmup, "Untimed iterations per size")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_option("--dtype", c.type, "Element type")->check(CLI::IsMember(names(true)))->capture_default_str();
  app.add_option("--op", c.op, "Reduction")->check(CLI::IsMember(names(false)))->capture_default_str();
  app.add_option("--collective", c.collective,
                 "allreduce, allgather (the size is the whole result), broadcast (from rank 0), alltoall or "
                 "reducescatter (the size is the whole input)")
      ->check(CLI::IsMember({"allreduce", "allgather", "broadcast", "alltoall", "reducescatter"}))
      ->capture_default_str();
  app.add_option("--device", c.device,
                 "Where the buffers live: host, allocated (host memory from Communicator::allocate_memory, which "
                 "shared memory reads in place) or cuda")
      ->check(CLI::IsMember({"host", "allocated", "cuda"}))
      ->capture_default_str();
  app.add_option("--process-set", c.process_set,
                 "all: every rank; half: the first half of the ranks as a process set (Communicator::subset), "
                 "the others wait")
      ->check(CLI::IsMember({"all", "half"}))
      ->capture_default_str();
  app.add_flag("--in-place", c.in_place, "allreduce: send and recv are one buffer, as DDP's buckets are");
  app.add_flag("--rewrite", c.rewrite,
               "allreduce: each rank writes its send buffer before every iteration, untimed, as backward writes "
               "DDP's buckets (no line stays cached where the call before left it)");
  app.add_flag("--csv", c.csv, "One CSV line per size");
  if (!examples::parse_cli(app, argc, argv, exit_code)) return std::nullopt;
  if ((c.in_place || c.rewrite) && c.collective != "allreduce") {
    std::fprintf(stderr, "allreduce_bench: error: --%s is for --collective allreduce\n",
                 c.in_place ? "in-place" : "rewrite");
    exit_code = 2;
    return std::nullopt;
  }
  if (c.rewrite && c.device == "cuda") {
    std::fprintf(stderr, "allreduce_bench: error: --rewrite is for host and allocated buffers\n");
    exit_code = 2;
    return std::nullopt;
  }
  if (c.min_bytes > c.max_bytes) {
    std::fprintf(stderr, "allreduce_bench: error: --min-bytes exceeds --max-bytes\n");
    exit_code = 2;
    return std::nullopt;
  }
  return c;
}

}  // namespace bench
