#include "backends/reduction.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <trainrun/half.h>

namespace trainrun::detail {
namespace {

// Integer sums and products wrap (two's complement) instead of being
// undefined on overflow: computed in the unsigned type of the same width.
template <typename T>
using Wide = std::conditional_t<
    std::is_integral_v<T> && !std::is_same_v<T, bool>,
    std::make_unsigned_t<std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, T, int>>, T>;
struct Sum {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(static_cast<Wide<T>>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b)));
  }
};
struct Product {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(static_cast<Wide<T>>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b)));
  }
};
struct Min {
  template <typename T>
  static T apply(T a, T b) {
    return b < a ? b : a;
  }
};
struct Max {
  template <typename T>
  static T apply(T a, T b) {
    return a < b ? b : a;
  }
};

// Plain loops over plain types: compiled at -O3 so they vectorise.
template <typename T, typename Op>
void reduce_plain(void* out, const void* a, const void* b, std::size_t n) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < n; ++i) o[i] = Op::apply(x[i], y[i]);
}

struct Float16 {
  static float load(std::uint16_t v) { return float16_to_float(v); }
  static std::uint16_t store(float v) { return float_to_float16(v); }
};
struct BFloat16 {
  static float load(std::uint16_t v) { return bfloat16_to_float(v); }
  static std::uint16_t store(float v) { return float_to_bfloat16(v); }
};

template <typename Half, typename Op>
void reduce_half(void* out, const void* a, const void* b, std::size_t n) {
  auto* o = static_cast<std::uint16_t*>(out);
  const auto* x = static_cast<const std::uint16_t*>(a);
  const auto* y = static_cast<const std::uint16_t*>(b);
  for (std::size_t i = 0; i < n; ++i) {
    o[i] = Half::store(Op::apply(Half::load(x[i]), Half::load(y[i])));
  }
}

template <typename Op>
ReduceFn pick(DataType type) {
  switch (type) {
    case DataType::UInt8: return reduce_plain<std::uint8_t, Op>;
    case DataType::Int8: return reduce_plain<std::int8_t, Op>;
    case DataType::Int16: return reduce_plain<std::int16_t, Op>;
    case DataType::Bool: return reduce_plain<bool, Op>;
    case DataType::Int32: return reduce_plain<std::int32_t, Op>;
    case DataType::Int64: return reduce_plain<std::int64_t, Op>;
    case DataType::Float16: return reduce_half<Float16, Op>;
    case DataType::BFloat16: return reduce_half<BFloat16, Op>;
    case DataType::Float32: return reduce_plain<float, Op>;
    case DataType::Float64: return reduce_plain<double, Op>;
  }
  return nullptr;
}

template <typename T>
void divide_plain(void* buf, std::size_t n, int divisor) {
  T* p = static_cast<T*>(buf);
  if constexpr (std::is_floating_point_v<T>) {
    const T inverse = T(1) / static_cast<T>(divisor);
    // Multiplying by 1/n is not always the correctly rounded quotient; divide
    // when n is not a power of two so every rank gets the exact float result.
    if ((divisor & (divisor - 1)) == 0) {
      for (std::size_t i = 0; i < n; ++i) p[i] *= inverse;
    } else {
      for (std::size_t i = 0; i < n; ++i) p[i] /= static_cast<T>(divisor);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(divisor));
  }
}

template <typename Half>
void divide_half(void* buf, std::size_t n, int divisor) {
  auto* p = static_cast<std::uint16_t*>(buf);
  for (std::size_t i = 0; i < n; ++i) p[i] = Half::store(Half::load(p[i]) / static_cast<float>(divisor));
}

// Integers are scaled as Horovod scales them: the product computed in
// double, truncated toward zero.
template <typename T>
void scale_plain(void* buf, std::size_t n, double factor) {
  T* p = static_cast<T*>(buf);
  if constexpr (std::is_integral_v<T>) {
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<T>(factor * static_cast<double>(p[i]));
  } else {
    const T f = static_cast<T>(factor);
    for (std::size_t i = 0; i < n; ++i) p[i] *= f;
  }
}

template <typename Half>
void scale_half(void* buf, std::size_t n, double factor) {
  auto* p = static_cast<std::uint16_t*>(buf);
  const float f = static_cast<float>(factor);
  for (std::size_t i = 0; i < n; ++i) p[i] = Half::store(Half::load(p[i]) * f);
}

template <typename T>
T identity_of(ReduceOp op) {
  constexpr bool floating = std::is_floating_point_v<T>;
  switch (op) {
    case ReduceOp::Product: return T(1);
    case ReduceOp::Min: return floating ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    case ReduceOp::Max: return floating ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
    default: return T(0);
  }
}

template <typename T>
void fill_plain(void* buf, std::size_t n, T value) {
  T* p = static_cast<T*>(buf);
  for (std::size_t i = 0; i < n; ++i) p[i] = value;
}

}  // namespace

ReduceFn reduce_function(DataType type, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Average: return pick<Sum>(type);
    case ReduceOp::Product: return pick<Product>(type);
    case ReduceOp::Min: return pick<Min>(type);
    case ReduceOp::Max: return pick<Max>(type);
  }
  return nullptr;
}

void divide_in_place(void* buf, std::size_t n, DataType type, int divisor) {
  if (divisor == 1) return;
  switch (type) {
    case DataType::UInt8: return divide_plain<std::uint8_t>(buf, n, divisor);
    case DataType::Int8: return divide_plain<std::int8_t>(buf, n, divisor);
    case DataType::Int16: return divide_plain<std::int16_t>(buf, n, divisor);
    case DataType::Bool: return;  // an "or" of booleans is its own average
    case DataType::Int32: return divide_plain<std::int32_t>(buf, n, divisor);
    case DataType::Int64: return divide_plain<std::int64_t>(buf, n, divisor);
    case DataType::Float16: return divide_half<Float16>(buf, n, divisor);
    case DataType::BFloat16: return divide_half<BFloat16>(buf, n, divisor);
    case DataType::Float32: return divide_plain<float>(buf, n, divisor);
    case DataType::Float64: return divide_plain<double>(buf, n, divisor);
  }
}

void scale_in_place(void* buf, std::size_t n, DataType type, double factor) {
  if (factor == 1.0) return;
  switch (type) {
    case DataType::Float16: return scale_half<Float16>(buf, n, factor);
    case DataType::BFloat16: return scale_half<BFloat16>(buf, n, factor);
    case DataType::Float32: return scale_plain<float>(buf, n, factor);
    case DataType::Float64: return scale_plain<double>(buf, n, factor);
    case DataType::UInt8: return scale_plain<std::uint8_t>(buf, n, factor);
    case DataType::Int8: return scale_plain<std::int8_t>(buf, n, factor);
    case DataType::Int16: return scale_plain<std::int16_t>(buf, n, factor);
    case DataType::Int32: return scale_plain<std::int32_t>(buf, n, factor);
    case DataType::Int64: return scale_plain<std::int64_t>(buf, n, factor);
    case DataType::Bool: return;  // callers refuse scales on booleans
  }
}

void fill_identity(void* buf, std::size_t n, DataType type, ReduceOp op) {
  switch (type) {
    case DataType::UInt8: return fill_plain(buf, n, identity_of<std::uint8_t>(op));
    case DataType::Int8: return fill_plain(buf, n, identity_of<std::int8_t>(op));
    case DataType::Int16: return fill_plain(buf, n, identity_of<std::int16_t>(op));
    case DataType::Bool: return fill_plain(buf, n, op == ReduceOp::Product || op == ReduceOp::Min);
    case DataType::Int32: return fill_plain(buf, n, identity_of<std::int32_t>(op));
    case DataType::Int64: return fill_plain(buf, n, identity_of<std::int64_t>(op));
    case DataType::Float16: return fill_plain(buf, n, float_to_float16(identity_of<float>(op)));
    case DataType::BFloat16: return fill_plain(buf, n, float_to_bfloat16(identity_of<float>(op)));
    case DataType::Float32: return fill_plain(buf, n, identity_of<float>(op));
    case DataType::Float64: return fill_plain(buf, n, identity_of<double>(op));
  }
}

#if defined(__SSE2__)
namespace {

// 64 bytes (a cache line) a step, four 16-byte moves; Store is
// _mm_storeu_si128, or _mm_stream_si128 (`out` 16-byte aligned).
template <void (*Store)(__m128i*, __m128i)>
std::size_t copy_lines(char* out, const char* in, std::size_t bytes) {
  std::size_t done = 0;
  for (; done + 64 <= bytes; done += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + done));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + done + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + done + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + done + 48));
    Store(reinterpret_cast<__m128i*>(out + done), a);
    Store(reinterpret_cast<__m128i*>(out + done + 16), b);
    Store(reinterpret_cast<__m128i*>(out + done + 32), c);
    Store(reinterpret_cast<__m128i*>(out + done + 48), d);
  }
  return done;
}

}  // namespace
#endif

void copy_bytes(void* to, const void* from, std::size_t bytes, bool streaming) {
  char* out = static_cast<char*>(to);
  const char* in = static_cast<const char*>(from);
#if defined(__SSE2__)
  std::size_t done = 0;
  if (streaming) {
    done = std::min(bytes, (16 - reinterpret_cast<std::uintptr_t>(out) % 16) % 16);
    std::memcpy(out, in, done);
    done += copy_lines<_mm_stream_si128>(out + done, in + done, bytes - done);
    _mm_sfence();  // the streaming stores are visible before whatever follows
  } else {
    done = copy_lines<_mm_storeu_si128>(out, in, bytes);
  }
  if (done < bytes) std::memcpy(out + done, in + done, bytes - done);  // under 64 bytes: no REP MOVSB either
#else
  (void)streaming;
  std::memcpy(out, in, bytes);
#endif
}

}  // namespace trainrun::detail
