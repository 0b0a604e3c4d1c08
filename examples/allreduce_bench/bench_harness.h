// The measuring loop of allreduce_bench, shared with the plain-library
// baselines in tests/bench so that every program is timed the same way:
// nccl-tests' table (size, count, type, op, time, algbw, busbw), sizes
// doubling from min to max, warm-up iterations, then timed ones. Each rank
// times its own iterations; the table reports the slowest rank. Header-only;
// single-threaded.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace bench {

struct Config {
  std::size_t min_bytes = 4;
  std::size_t max_bytes = 256u << 20;
  int factor = 2;
  int iters = 0;                    // 0: as many as move `budget` bytes per size, 5..1000
  std::size_t budget = 256u << 20;  // bytes moved per size when iters is 0
  int max_iters = 1000;             // the most iterations `budget` may ask for
  int warmup = 5;
  bool csv = false;
  std::string type = "float32";
  std::string op = "sum";
  std::string device = "host";           // where the buffers live: host | allocated | cuda
  std::string collective = "allreduce";  // allreduce | allgather | broadcast | alltoall | reducescatter
  std::string process_set = "all";  // all | half: the first half of the ranks, as a process set (allreduce_bench only)
  bool in_place = false;            // allreduce with send == recv, as DDP's buckets are (allreduce_bench only)
  bool rewrite = false;             // the send buffer written before every iteration, untimed (allreduce_bench only)
};

// Parses --min-bytes/--max-bytes (with K/M/G suffixes), --factor, --iters,
// --budget, --max-iters, --warmup, --csv, --dtype, --op, --device, --collective. Unknown
// options are an error.
inline bool parse_size(const char* text, std::size_t& out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || v < 0) return false;
  double scale = 1;
  if (*end == 'K' || *end == 'k') scale = 1024.0, ++end;
  else if (*end == 'M' || *end == 'm') scale = 1024.0 * 1024, ++end;
  else if (*end == 'G' || *end == 'g') scale = 1024.0 * 1024 * 1024, ++end;
  if (*end == 'B' || *end == 'b') ++end;
  if (*end) return false;
  out = static_cast<std::size_t>(v * scale);
  return true;
}

inline bool parse_args(int argc, char** argv, Config& c, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    auto need = [&](bool ok) {
      if (!ok) error = "bad or missing value for " + a;
      ++i;
      return ok;
    };
    if (a == "--csv") c.csv = true;
    else if (a == "--min-bytes") {
      if (!need(value && parse_size(value, c.min_bytes))) return false;
    } else if (a == "--max-bytes") {
      if (!need(value && parse_size(value, c.max_bytes))) return false;
    } else if (a == "--factor") {
      if (!need(value && (c.factor = std::atoi(value)) >= 2)) return false;
    } else if (a == "--iters") {
      if (!need(value && (c.iters = std::atoi(value)) >= 1)) return false;
    } else if (a == "--budget") {
      if (!need(value && parse_size(value, c.budget) && c.budget > 0)) return false;
    } else if (a == "--max-iters") {
      if (!need(value && (c.max_iters = std::atoi(value)) >= 5)) return false;
    } else if (a == "--warmup") {
      if (!need(value && (c.warmup = std::atoi(value)) >= 0)) return false;
    } else if (a == "--dtype") {
      if (!need(value != nullptr)) return false;
      c.type = value;
    } else if (a == "--op") {
      if (!need(value != nullptr)) return false;
      c.op = value;
    } else if (a == "--collective") {
      if (!need(value && (std::strcmp(value, "allreduce") == 0 || std::strcmp(value, "allgather") == 0 ||
                          std::strcmp(value, "broadcast") == 0 || std::strcmp(value, "alltoall") == 0 ||
                          std::strcmp(value, "reducescatter") == 0))) {
        return false;
      }
      c.collective = value;
    } else if (a == "--device") {
      if (!need(value && (std::strcmp(value, "host") == 0 || std::strcmp(value, "cuda") == 0))) return false;
      c.device = value;
    } else {
      error = "unknown option " + a;
      return false;
    }
  }
  if (c.min_bytes > c.max_bytes) {
    error = "--min-bytes exceeds --max-bytes";
    return false;
  }
  return true;
}

struct Hooks {
  int rank = 0;
  int size = 1;
  std::size_t element_size = 4;
  std::function<void(std::size_t count)> run;      // one collective of `count` elements
  std::function<double(double)> max_across_ranks;  // for the reported time
  std::function<void()> barrier;
  std::function<void(std::size_t count)> prepare;  // when set: before every iteration, untimed
  double bus_factor = 1.0;                         // busbw = algbw * bus_factor
};

inline int pick_iters(const Config& c, std::size_t bytes) {
  if (c.iters > 0) return c.iters;
  return static_cast<int>(
      std::clamp(static_cast<double>(c.budget) / std::max<double>(bytes, 1), 5.0, static_cast<double>(c.max_iters)));
}

// Runs the sweep; rank 0 prints. Returns 0.
inline int run(const Config& c, const Hooks& h, const char* title) {
  if (h.rank == 0) {
    if (c.csv) {
      std::printf("bytes,count,type,op,iters,time_us,p50_us,algbw_gbs,busbw_gbs\n");
    } else {
      std::printf("# %s: %d ranks, %s %s\n", title, h.size, c.type.c_str(), c.op.c_str());
      std::printf("# %12s %12s %8s %6s %6s %11s %11s %10s %10s\n", "size(B)", "count", "type", "redop", "iters",
                  "time(us)", "p50(us)", "algbw(GB/s)", "busbw(GB/s)");
    }
  }
  for (std::size_t bytes = c.min_bytes; bytes <= c.max_bytes; bytes *= c.factor) {
    const std::size_t count = std::max<std::size_t>(bytes / h.element_size, 1);
    const std::size_t real_bytes = count * h.element_size;
    const int iters = pick_iters(c, real_bytes);
    for (int i = 0; i < c.warmup; ++i) {
      if (h.prepare) h.prepare(count);
      h.run(count);
    }
    h.barrier();
    std::vector<double> samples(static_cast<std::size_t>(iters));
    double total = 0;
    for (int i = 0; i < iters; ++i) {
      if (h.prepare) h.prepare(count);
      const auto before = std::chrono::steady_clock::now();
      h.run(count);
      const double took = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - before).count();
      samples[static_cast<std::size_t>(i)] = took;
      total += took;
    }
    const double mean = total / iters;
    std::nth_element(samples.begin(), samples.begin() + iters / 2, samples.end());
    const double p50 = h.max_across_ranks(samples[static_cast<std::size_t>(iters / 2)]);
    const double time_us = h.max_across_ranks(mean);
    const double algbw = real_bytes / time_us / 1e3;
    const double busbw = algbw * h.bus_factor;
    if (h.rank == 0) {
      if (c.csv) {
        std::printf("%zu,%zu,%s,%s,%d,%.2f,%.2f,%.4f,%.4f\n", real_bytes, count, c.type.c_str(), c.op.c_str(), iters,
                    time_us, p50, algbw, busbw);
      } else {
        std::printf("  %12zu %12zu %8s %6s %6d %11.2f %11.2f %10.3f %10.3f\n", real_bytes, count, c.type.c_str(),
                    c.op.c_str(), iters, time_us, p50, algbw, busbw);
      }
      std::fflush(stdout);
    }
    if (bytes > c.max_bytes / c.factor) break;
  }
  return 0;
}

}  // namespace bench
