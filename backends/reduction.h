// Element-wise reduction kernels shared by every backend that reduces on
// the CPU (Gloo's reduce callback, MPI user ops, staging paths).
// Float16/BFloat16 accumulate each pair in float and round to nearest even.
// Pure functions, thread-safe.
#pragma once

#include <cstddef>

#include "trainrun/types.h"

namespace trainrun::detail {

// out[i] = a[i] (op) b[i]; out may alias a or b. Average reduces as Sum.
using ReduceFn = void (*)(void* out, const void* a, const void* b, std::size_t n);
ReduceFn reduce_function(DataType type, ReduceOp op);

// memcpy's contract (no overlap) with vector moves only. glibc's memcpy
// copies with REP MOVSB from 2 KiB up to its non-temporal threshold, which
// ran 3-7x slower than vector moves on this project's AMD EPYC machines for
// copies into and out of memory another rank's CPU just touched (the
// shared-memory transport's slots): a 256 KiB allreduce of 2 ranks took
// 235 us against 33 us (tests/bench/shm_model_bench.py). `streaming`:
// non-temporal stores, for destinations larger than the caches (no read of
// each line before it is written; the lines are not cached).
void copy_bytes(void* to, const void* from, std::size_t bytes, bool streaming = false);

// The divide step of Average: buf[i] /= divisor (integers truncate toward zero).
void divide_in_place(void* buf, std::size_t n, DataType type, int divisor);

// buf[i] *= factor, for floating types (16-bit types round to nearest even).
void scale_in_place(void* buf, std::size_t n, DataType type, double factor);
// buf[i] = the identity of `op` (0 for Sum/Average, 1 for Product, the
// type's largest value for Min and smallest for Max; infinities for floats).
void fill_identity(void* buf, std::size_t n, DataType type, ReduceOp op);

}  // namespace trainrun::detail
