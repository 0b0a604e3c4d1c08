// Conversions between float and the 16-bit types DataType::Float16 (IEEE
// binary16) and DataType::BFloat16, rounding to nearest even; NaN stays NaN
// and overflow becomes infinity. Pure, header-only, thread-safe.
#pragma once

#include <cstdint>
#include <cstring>

namespace trainrun {

namespace detail {
inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace detail

inline float float16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  const std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * detail::bits_float(0x33800000u);
    return detail::bits_float(detail::float_bits(magnitude) | sign);
  }
  if (exponent == 31) return detail::bits_float(sign | 0x7f800000u | (mantissa << 13));
  return detail::bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline std::uint16_t float_to_float16(float f) {
  std::uint32_t u = detail::float_bits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  if (u >= 0x47800000u) {  // |f| >= 65536, infinity or NaN
    if (u > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  }
  if (u < 0x38800000u) {
    // Result is subnormal or zero: adding 0.5 lines the half's subnormal
    // step (2^-24) up with the float's last mantissa bit, so the FPU does
    // the round-to-nearest-even for us.
    const float shifted = detail::bits_float(u) + 0.5f;
    return static_cast<std::uint16_t>(sign | (detail::float_bits(shifted) - 0x3f000000u));
  }
  // Normal: rebias the exponent and round the 13 dropped bits to even; a
  // carry out of the mantissa correctly bumps the exponent (up to infinity).
  const std::uint32_t odd = (u >> 13) & 1u;
  u += 0xc8000000u + 0xfffu + odd;  // (15 - 127) << 23, wrapping
  return static_cast<std::uint16_t>(sign | (u >> 13));
}

inline float bfloat16_to_float(std::uint16_t b) { return detail::bits_float(static_cast<std::uint32_t>(b) << 16); }

inline std::uint16_t float_to_bfloat16(float f) {
  const std::uint32_t u = detail::float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace trainrun
