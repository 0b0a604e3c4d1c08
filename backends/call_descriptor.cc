#include "backends/call_descriptor.h"

#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

struct Unpacked {
  CoreOp op;
  DataType type;
  ReduceOp reduce;
  int root;
};

Unpacked unpack(const CallDescriptor& d) {
  return {static_cast<CoreOp>(d.what & 0xff), static_cast<DataType>((d.what >> 8) & 0xff),
          static_cast<ReduceOp>((d.what >> 16) & 0xff), static_cast<int>(static_cast<std::uint32_t>(d.what >> 32))};
}

}  // namespace

const char* to_string(CoreOp op) {
  const auto n = static_cast<std::size_t>(op);
  return n >= 1 && n <= std::size(kCoreOps) ? kCoreOps[n - 1].name : "?";
}

CallDescriptor describe_call(CoreOp op, DataType type, const std::vector<std::size_t>& counts) {
  std::uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a over the counts, a word at a time
  for (std::size_t c : counts) hash = (hash ^ c) * 0x100000001b3ull;
  return {pack_call(op, type, ReduceOp::Sum, 0), hash};
}

std::string call_disagreement(const CallDescriptor* by_rank, int n, const std::function<std::string(int)>& name) {
  int a = 0;
  while (a < n && by_rank[a].empty()) ++a;
  int b = a + 1;
  while (b < n && (by_rank[b].empty() || by_rank[b] == by_rank[a])) ++b;
  if (b >= n) return "";
  const Unpacked x = unpack(by_rank[b]), y = unpack(by_rank[a]);
  const std::string first = name(b) + " called " + to_string(x.op), second = name(a);
  if (x.op != y.op) return first + ", " + second + " called " + to_string(y.op);
  if (x.type != y.type) {
    return first + " with dtype " + to_string(x.type) + ", " + second + " with dtype " + to_string(y.type);
  }
  if (x.reduce != y.reduce) {
    return first + " with reduce op " + to_string(x.reduce) + ", " + second + " with reduce op " + to_string(y.reduce);
  }
  if (x.root != y.root) {
    return first + " with root " + std::to_string(x.root) + ", " + second + " with root " + std::to_string(y.root);
  }
  if (x.op == CoreOp::Allgatherv) return first + " with other counts than " + second;
  return first + " with count " + std::to_string(by_rank[b].count) + ", " + second + " with count " +
         std::to_string(by_rank[a].count);
}

void check_calls_agree(const CallDescriptor* by_rank, int n, const std::function<std::string(int)>& name) {
  const std::string disagreement = call_disagreement(by_rank, n, name);
  if (disagreement.empty()) return;
  throw Error(Error::Code::Mismatch, "mismatched collective calls: " + disagreement +
                                         " (every rank must make the same core calls in the same order, with "
                                         "the same dtype, count, reduce op and root)");
}

}  // namespace trainrun::detail
