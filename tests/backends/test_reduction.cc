#include <doctest/doctest.h>
#include <trainrun/half.h>

#include <cstdint>
#include <vector>

#include "backends/reduction.h"

using namespace trainrun;
using detail::reduce_function;

TEST_CASE("every dtype and op has a kernel, and Average reduces as Sum") {
  for (DataType type : kAllDataTypes) {
    for (ReduceOp op : kAllReduceOps) CHECK(static_cast<bool>(reduce_function(type, op)));
    const bool same = reduce_function(type, ReduceOp::Average) == reduce_function(type, ReduceOp::Sum);
    CHECK(same);
  }
}

TEST_CASE("float32 kernels, in place included") {
  std::vector<float> a = {1, -2, 3, 4.5f}, b = {10, 20, -30, 0.5f}, out(4);
  reduce_function(DataType::Float32, ReduceOp::Sum)(out.data(), a.data(), b.data(), 4);
  CHECK(out == std::vector<float>{11, 18, -27, 5});
  reduce_function(DataType::Float32, ReduceOp::Max)(a.data(), a.data(), b.data(), 4);
  CHECK(a == std::vector<float>{10, 20, 3, 4.5f});
  reduce_function(DataType::Float32, ReduceOp::Min)(out.data(), out.data(), b.data(), 4);
  CHECK(out == std::vector<float>{10, 18, -30, 0.5f});
  reduce_function(DataType::Float32, ReduceOp::Product)(out.data(), out.data(), b.data(), 4);
  CHECK(out == std::vector<float>{100, 360, 900, 0.25f});
}

TEST_CASE("integer sums wrap instead of overflowing") {
  std::vector<std::int32_t> a = {INT32_MAX}, b = {1}, out(1);
  reduce_function(DataType::Int32, ReduceOp::Sum)(out.data(), a.data(), b.data(), 1);
  CHECK(out[0] == INT32_MIN);
  std::vector<std::uint8_t> x = {250}, y = {10}, z(1);
  reduce_function(DataType::UInt8, ReduceOp::Sum)(z.data(), x.data(), y.data(), 1);
  CHECK(z[0] == 4);
  std::vector<std::int8_t> p = {-128}, q = {-1}, r(1);
  reduce_function(DataType::Int8, ReduceOp::Min)(r.data(), p.data(), q.data(), 1);
  CHECK(r[0] == -128);
}

TEST_CASE("float16 sums accumulate in float and round once to nearest even") {
  // 2048 + 1 is not representable in half (spacing 2 there): ties to even gives 2048;
  // 2048 + 3 rounds to 2052 (tie between 2050 and 2052 → even mantissa).
  std::vector<std::uint16_t> a = {float_to_float16(2048), float_to_float16(2048)};
  std::vector<std::uint16_t> b = {float_to_float16(1), float_to_float16(3)}, out(2);
  reduce_function(DataType::Float16, ReduceOp::Sum)(out.data(), a.data(), b.data(), 2);
  CHECK(float16_to_float(out[0]) == 2048);
  CHECK(float16_to_float(out[1]) == 2052);
  std::vector<std::uint16_t> c = {float_to_bfloat16(1.5f)}, d = {float_to_bfloat16(-4)}, e(1);
  reduce_function(DataType::BFloat16, ReduceOp::Product)(e.data(), c.data(), d.data(), 1);
  CHECK(bfloat16_to_float(e[0]) == -6);
}

TEST_CASE("divide_in_place implements Average's final step") {
  std::vector<std::int32_t> i = {7, -7, 9};
  detail::divide_in_place(i.data(), 3, DataType::Int32, 2);
  CHECK(i == std::vector<std::int32_t>{3, -3, 4});
  std::vector<double> d = {1, 2};
  detail::divide_in_place(d.data(), 2, DataType::Float64, 3);
  CHECK(d[0] == 1.0 / 3.0);
  std::vector<std::uint16_t> h = {float_to_float16(3)};
  detail::divide_in_place(h.data(), 1, DataType::Float16, 4);
  CHECK(float16_to_float(h[0]) == 0.75f);
}

TEST_CASE("scales multiply floating types, rounding 16-bit ones") {
  std::vector<float> f = {1, -2, 3};
  detail::scale_in_place(f.data(), 3, DataType::Float32, 0.5);
  CHECK(f == std::vector<float>{0.5f, -1, 1.5f});
  std::vector<std::uint16_t> h = {float_to_float16(3.0f)};
  detail::scale_in_place(h.data(), 1, DataType::Float16, 1.0 / 3);
  CHECK(h[0] == float_to_float16(1.0f));
}

TEST_CASE("identity fills leave the other operand unchanged") {
  for (DataType type : kAllDataTypes) {
    for (ReduceOp op : kAllReduceOps) {
      // Bytes of 3, or of 1 for Bool (whose only values are 0 and 1).
      const unsigned char byte = type == DataType::Bool ? 1 : 3;
      std::vector<unsigned char> identity(4 * size_of(type)), value(4 * size_of(type), byte), out(value.size());
      detail::fill_identity(identity.data(), 4, type, op);
      reduce_function(type, op)(out.data(), identity.data(), value.data(), 4);
      CHECK_MESSAGE(out == value, to_string(type) << " " << to_string(op));
    }
  }
}

TEST_CASE("int16 wraps like the other integers and bool reduces logically") {
  std::vector<std::int16_t> a = {32767, -5, 3}, b = {1, -7, 4}, out(3);
  reduce_function(DataType::Int16, ReduceOp::Sum)(out.data(), a.data(), b.data(), 3);
  CHECK(out == std::vector<std::int16_t>{-32768, -12, 7});
  bool x[] = {true, true, false, false}, y[] = {true, false, true, false}, r[4];
  reduce_function(DataType::Bool, ReduceOp::Sum)(r, x, y, 4);
  CHECK((r[0] && r[1] && r[2] && !r[3]));
  reduce_function(DataType::Bool, ReduceOp::Min)(r, x, y, 4);
  CHECK((r[0] && !r[1] && !r[2] && !r[3]));
  detail::fill_identity(r, 4, DataType::Bool, ReduceOp::Product);
  CHECK((r[0] && r[3]));
}

TEST_CASE("integers scale as Horovod scales them: in double, truncated toward zero") {
  std::vector<std::int32_t> v = {3, -3, 7};
  detail::scale_in_place(v.data(), v.size(), DataType::Int32, 1.5);
  CHECK(v == std::vector<std::int32_t>{4, -4, 10});
  std::vector<std::uint8_t> u = {200, 9};
  detail::scale_in_place(u.data(), u.size(), DataType::UInt8, 0.5);
  CHECK(u == std::vector<std::uint8_t>{100, 4});
}

TEST_CASE("copy_bytes copies every byte and no other, at any alignment, cached or streaming") {
  for (bool streaming : {false, true}) {
    for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{63}, std::size_t{64},
                              std::size_t{65}, std::size_t{1000}, std::size_t{4096 + 17}, std::size_t{1} << 20}) {
      for (std::size_t shift : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{16}, std::size_t{33}}) {
        std::vector<unsigned char> from(bytes + 64), to(bytes + 128, 0xEE);
        for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<unsigned char>(i * 131 + 7);
        detail::copy_bytes(to.data() + shift, from.data() + (shift * 3) % 64, bytes, streaming);
        bool same = true;
        for (std::size_t i = 0; i < bytes; ++i) same &= to[shift + i] == from[(shift * 3) % 64 + i];
        bool untouched = true;
        for (std::size_t i = 0; i < shift; ++i) untouched &= to[i] == 0xEE;
        for (std::size_t i = shift + bytes; i < to.size(); ++i) untouched &= to[i] == 0xEE;
        CHECK_MESSAGE(same, bytes << " bytes, shift " << shift << (streaming ? ", streaming" : ""));
        CHECK_MESSAGE(untouched, bytes << " bytes, shift " << shift << (streaming ? ", streaming" : ""));
      }
    }
  }
}
