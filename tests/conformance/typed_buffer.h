// TypedBuffer: a byte buffer of `count` elements of a runtime DataType,
// read and written as doubles, for tests that cover every dtype with one
// loop (a Bool is set to 1 from any nonzero value, and read as its byte, so
// that a byte other than 0 or 1 shows). When a program installs
// DeviceMemory, data() is device memory that mirrors the host copy: set()
// and get() work on the host copy, and each side is copied over when the
// other one was touched since. Not thread-safe.
#pragma once

#include <trainrun/types.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <trainrun/half.h>

namespace trainrun::test {

// Where TypedBuffer keeps the bytes that collectives see; none (host
// memory) unless a program installs one, as conformance_cuda does.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual bool usable(std::string& why) = 0;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* pointer) = 0;
  virtual void copy(void* to, const void* from, std::size_t bytes) = 0;
};

inline DeviceMemory*& device_memory() {
  static DeviceMemory* memory = nullptr;
  return memory;
}

class TypedBuffer {
 public:
  TypedBuffer(DataType type, std::size_t count, DeviceMemory* device = device_memory())
      : type_(type), count_(count), bytes_(std::max<std::size_t>(count * size_of(type), 1)), device_(device),
        mirror_(device ? device->allocate(bytes_.size()) : nullptr) {}
  ~TypedBuffer() {
    if (mirror_) device_->release(mirror_);
  }
  TypedBuffer(const TypedBuffer&) = delete;
  TypedBuffer& operator=(const TypedBuffer&) = delete;
  // Movable (returned from helpers, kept in vectors); the mirror moves along.
  TypedBuffer(TypedBuffer&& other) noexcept
      : type_(other.type_), count_(other.count_), bytes_(std::move(other.bytes_)), device_(other.device_),
        mirror_(std::exchange(other.mirror_, nullptr)), host_newer_(other.host_newer_),
        device_newer_(other.device_newer_) {}

  // What collectives get: the device mirror (brought up to date) when there is one.
  void* data() {
    if (!mirror_) return bytes_.data();
    if (host_newer_) device_->copy(mirror_, bytes_.data(), bytes_.size());
    host_newer_ = false;
    device_newer_ = true;  // a collective may write it
    return mirror_;
  }
  // The host copy, up to date.
  const void* host_data() const {
    if (device_newer_) device_->copy(bytes_.data(), mirror_, bytes_.size());
    device_newer_ = false;
    return bytes_.data();
  }
  std::size_t count() const { return count_; }

  void set(std::size_t i, double v) {
    host_data();
    host_newer_ = mirror_ != nullptr;
    char* p = bytes_.data() + i * size_of(type_);
    switch (type_) {
      case DataType::UInt8: store(p, static_cast<std::uint8_t>(static_cast<std::int64_t>(v))); break;
      case DataType::Int8: store(p, static_cast<std::int8_t>(v)); break;
      case DataType::Int16: store(p, static_cast<std::int16_t>(v)); break;
      case DataType::Bool: store(p, v != 0); break;
      case DataType::Int32: store(p, static_cast<std::int32_t>(v)); break;
      case DataType::Int64: store(p, static_cast<std::int64_t>(v)); break;
      case DataType::Float16: store(p, float_to_float16(static_cast<float>(v))); break;
      case DataType::BFloat16: store(p, float_to_bfloat16(static_cast<float>(v))); break;
      case DataType::Float32: store(p, static_cast<float>(v)); break;
      case DataType::Float64: store(p, v); break;
    }
  }

  double get(std::size_t i) const {
    const char* p = static_cast<const char*>(host_data()) + i * size_of(type_);
    switch (type_) {
      case DataType::UInt8: return load<std::uint8_t>(p);
      case DataType::Int8: return load<std::int8_t>(p);
      case DataType::Int16: return load<std::int16_t>(p);
      case DataType::Bool: return load<std::uint8_t>(p);
      case DataType::Int32: return load<std::int32_t>(p);
      case DataType::Int64: return static_cast<double>(load<std::int64_t>(p));
      case DataType::Float16: return float16_to_float(load<std::uint16_t>(p));
      case DataType::BFloat16: return bfloat16_to_float(load<std::uint16_t>(p));
      case DataType::Float32: return load<float>(p);
      case DataType::Float64: return load<double>(p);
    }
    return 0;
  }

  void fill(double v) {
    for (std::size_t i = 0; i < count_; ++i) set(i, v);
  }

  // The first element (of the first `n`, default all) that differs from
  // expected(i) by more than rel_tolerance * |expected|, described.
  template <typename Expected>
  std::optional<std::string> first_mismatch(Expected expected, double rel_tolerance,
                                            std::optional<std::size_t> n = std::nullopt) const {
    const std::size_t limit = n.value_or(count_);
    for (std::size_t i = 0; i < limit; ++i) {
      const double want = expected(i), got = get(i);
      if (std::fabs(got - want) > rel_tolerance * std::fabs(want)) {
        return "element " + std::to_string(i) + " is " + std::to_string(got) + ", expected " + std::to_string(want);
      }
    }
    return std::nullopt;
  }

 private:
  template <typename T>
  static void store(char* p, T v) {
    std::memcpy(p, &v, sizeof v);
  }
  template <typename T>
  static T load(const char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  DataType type_;
  std::size_t count_;
  mutable std::vector<char> bytes_;
  DeviceMemory* device_;
  void* mirror_;
  bool host_newer_ = false;
  mutable bool device_newer_ = false;
};

// v after a round trip through `type` (float types only).
inline double round_to(DataType type, double v) {
  TypedBuffer one(type, 1, nullptr);
  one.set(0, v);
  return one.get(0);
}

}  // namespace trainrun::test
