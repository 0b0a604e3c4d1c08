#include "lib/engine/request.h"

#include <algorithm>
#include <cstring>

#include "contract/decimal.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

constexpr std::uint32_t kMaxDims = 64;
constexpr std::uint32_t kMaxStringBytes = 1 << 20;

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof value];
  std::memcpy(bytes, &value, sizeof value);
  out.append(bytes, sizeof value);
}

void put_string(std::string& out, const std::string& s) {
  put<std::uint32_t>(out, static_cast<std::uint32_t>(s.size()));
  out += s;
}

void put_shape(std::string& out, const std::vector<std::int64_t>& shape) {
  put<std::uint32_t>(out, static_cast<std::uint32_t>(shape.size()));
  for (auto d : shape) put<std::int64_t>(out, d);
}

// Reads fields in order; the first bad one throws, naming the sender.
class Reader {
 public:
  Reader(std::string_view bytes, int from_rank) : bytes_(bytes), from_rank_(from_rank) {}

  template <typename T>
  T get() {
    T value;
    need(sizeof value);
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }

  std::string get_string() {
    const auto size = get<std::uint32_t>();
    if (size > kMaxStringBytes) fail("a string of " + std::to_string(size) + " bytes");
    need(size);
    std::string s(bytes_.substr(at_, size));
    at_ += size;
    return s;
  }

  std::vector<std::int64_t> get_shape() {
    const auto dims = get<std::uint32_t>();
    if (dims > kMaxDims) fail(std::to_string(dims) + " dimensions");
    std::vector<std::int64_t> shape;
    for (std::uint32_t d = 0; d < dims; ++d) {
      shape.push_back(get<std::int64_t>());
      if (shape.back() < 0) fail("a negative dimension");
    }
    return shape;
  }

  template <typename E>
  E get_enum(E last) {
    const auto raw = get<std::uint8_t>();
    if (raw > static_cast<std::uint8_t>(last)) fail("enum value " + std::to_string(raw));
    return static_cast<E>(raw);
  }

  bool done() const { return at_ == bytes_.size(); }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(Error::Code::Internal, "engine: rank " + std::to_string(from_rank_) +
                                           " sent a malformed negotiation message (" + what + " at byte " +
                                           std::to_string(at_) + ")");
  }

 private:
  void need(std::size_t n) const {
    if (bytes_.size() - at_ < n) fail("truncated");
  }

  std::string_view bytes_;
  std::size_t at_ = 0;
  int from_rank_;
};

std::string dims_after_first(const std::vector<std::int64_t>& shape) {
  return shape_text(std::vector<std::int64_t>(shape.begin() + (shape.empty() ? 0 : 1), shape.end()));
}

std::string memory_text(int device) { return device >= 0 ? "CUDA" : "host"; }

}  // namespace

const char* to_string(OpType op) {
  switch (op) {
    case OpType::Allreduce: return "allreduce";
    case OpType::Allgather: return "allgather";
    case OpType::Broadcast: return "broadcast";
    case OpType::Alltoall: return "alltoall";
    case OpType::Reducescatter: return "reducescatter";
    case OpType::Barrier: return "barrier";
    case OpType::Join: return "join";
    case OpType::Core: return "core";
  }
  return "?";
}

namespace {
std::size_t elements(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}
}  // namespace

std::size_t Request::count() const {
  if (members.empty()) return elements(shape);
  std::size_t n = 0;
  for (const Member& m : members) n += elements(m.shape);
  return n;
}

std::string op_label(const Request& r) {
  return r.op == OpType::Core ? std::string("core ") + to_string(r.core_op) : to_string(r.op);
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::optional<std::string> disagreement(const Request& a, int a_rank, const Request& b, int b_rank) {
  // Fields in the order a user would look at them; the first difference wins.
  auto differ = [&](const std::string& field, const std::string& va, const std::string& vb) {
    return op_label(a) + " '" + a.name + "': rank " + std::to_string(b_rank) + " " + field + " " + vb + " != rank " +
           std::to_string(a_rank) + " " + field + " " + va;
  };
  if (a.op != b.op || a.core_op != b.core_op) return differ("op", op_label(a), op_label(b));
  if (a.type != b.type) return differ("dtype", to_string(a.type), to_string(b.type));
  // Ops that do not reduce leave reduce_op at its default on every rank.
  if (a.reduce_op != b.reduce_op) {
    return differ("reduce op", to_string(a.reduce_op), to_string(b.reduce_op));
  }
  if (a.first_dim_varies()) {
    const bool same_rank = a.shape.size() == b.shape.size() && !a.shape.empty();
    if (!same_rank || !std::equal(a.shape.begin() + 1, a.shape.end(), b.shape.begin() + 1)) {
      return differ("shape after the first dimension", dims_after_first(a.shape), dims_after_first(b.shape));
    }
  } else if (a.shape != b.shape) {
    return differ("shape", shape_text(a.shape), shape_text(b.shape));
  }
  if (a.root != b.root) return differ("root", std::to_string(a.root), std::to_string(b.root));
  // Each rank has its own GPU: only host against CUDA memory disagrees.
  if (a.on_cuda() != b.on_cuda()) {
    return differ("memory", memory_text(a.device), memory_text(b.device));
  }
  if (a.prescale != b.prescale) return differ("prescale", shortest_decimal(a.prescale), shortest_decimal(b.prescale));
  if (a.postscale != b.postscale) {
    return differ("postscale", shortest_decimal(a.postscale), shortest_decimal(b.postscale));
  }
  for (std::size_t i = 0; i < std::max(a.members.size(), b.members.size()); ++i) {
    auto member = [](const Request& r, std::size_t i) {
      return i < r.members.size() ? "'" + r.members[i].name + "'" : std::string("nothing");
    };
    if (i >= a.members.size() || i >= b.members.size() || a.members[i].name != b.members[i].name) {
      return differ("group member " + std::to_string(i), member(a, i), member(b, i));
    }
    if (a.members[i].shape != b.members[i].shape) {
      return differ("shape of '" + a.members[i].name + "'", shape_text(a.members[i].shape),
                    shape_text(b.members[i].shape));
    }
  }
  return std::nullopt;
}

std::string encode_requests(const std::vector<Request>& requests) {
  std::string out;
  put<std::uint32_t>(out, static_cast<std::uint32_t>(requests.size()));
  for (const Request& r : requests) {
    put_string(out, r.name);
    put<std::uint8_t>(out, static_cast<std::uint8_t>(r.op));
    put<std::uint8_t>(out, static_cast<std::uint8_t>(r.type));
    put<std::uint8_t>(out, static_cast<std::uint8_t>(r.reduce_op));
    put<std::int32_t>(out, r.root);
    put<std::int32_t>(out, r.device);
    put<double>(out, r.prescale);
    put<double>(out, r.postscale);
    put_shape(out, r.shape);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(r.members.size()));
    for (const Member& m : r.members) {
      put_string(out, m.name);
      put_shape(out, m.shape);
    }
    put<std::uint8_t>(out, static_cast<std::uint8_t>(r.core_op));
    put<std::uint32_t>(out, r.age_ms);
  }
  return out;
}

std::vector<Request> decode_requests(std::string_view bytes, int from_rank) {
  Reader in(bytes, from_rank);
  const auto count = in.get<std::uint32_t>();
  std::vector<Request> requests;
  for (std::uint32_t i = 0; i < count; ++i) {
    Request r;
    r.name = in.get_string();
    r.op = in.get_enum(OpType::Core);
    r.type = in.get_enum(DataType::Bool);  // the last DataType
    r.reduce_op = in.get_enum(ReduceOp::Product);
    r.root = in.get<std::int32_t>();
    r.device = in.get<std::int32_t>();
    r.prescale = in.get<double>();
    r.postscale = in.get<double>();
    r.shape = in.get_shape();
    const auto members = in.get<std::uint32_t>();
    for (std::uint32_t m = 0; m < members; ++m) {
      Member member;
      member.name = in.get_string();
      member.shape = in.get_shape();
      r.members.push_back(std::move(member));
    }
    r.core_op = in.get_enum(kLastCoreOp);  // 0: not a core call
    r.age_ms = in.get<std::uint32_t>();
    requests.push_back(std::move(r));
  }
  if (!in.done()) in.fail("trailing bytes");
  return requests;
}

}  // namespace trainrun::detail
