#include <doctest/doctest.h>
#include <trainrun/half.h>

#include <cmath>
#include <initializer_list>
#include <limits>

using namespace trainrun;

TEST_CASE("float16 exact values round-trip") {
  for (float v : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f /* min normal */,
                  5.9604644775390625e-08f /* min subnormal */, 0.333251953125f}) {
    CHECK(float16_to_float(float_to_float16(v)) == v);
  }
  CHECK(float_to_float16(1.0f) == 0x3c00);
  CHECK(float_to_float16(-2.0f) == 0xc000);
  CHECK(float_to_float16(65504.0f) == 0x7bff);
}

TEST_CASE("float16 rounds to nearest even, overflows to infinity, keeps NaN") {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
  CHECK(float_to_float16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even).
  CHECK(float_to_float16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  // Just above halfway rounds up.
  CHECK(float_to_float16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3c01);
  CHECK(float_to_float16(65519.0f) == 0x7bff);
  CHECK(float_to_float16(65520.0f) == 0x7c00);
  CHECK(float_to_float16(1e10f) == 0x7c00);
  CHECK(float_to_float16(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(std::isnan(float16_to_float(float_to_float16(std::nanf("")))));
  // Subnormals: half of the smallest subnormal ties to even (zero).
  CHECK(float_to_float16(std::ldexp(1.0f, -25)) == 0x0000);
  CHECK(float_to_float16(3 * std::ldexp(1.0f, -25)) == 0x0002);
  CHECK(float_to_float16(std::ldexp(1.0f, -30)) == 0x0000);
}

TEST_CASE("float16 agrees with an exhaustive reference on every half value") {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = float16_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    CHECK(float_to_float16(f) == h);
  }
}

TEST_CASE("bfloat16 rounds to nearest even and keeps NaN") {
  CHECK(float_to_bfloat16(1.0f) == 0x3f80);
  CHECK(bfloat16_to_float(0x3f80) == 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even.
  CHECK(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  CHECK(float_to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
  CHECK(float_to_bfloat16(std::numeric_limits<float>::max()) == 0x7f80);
}
