// elastic::State (trainrun/elastic.h): snapshots in memory, and the two
// collectives that keep ranks consistent (commit's membership check, sync's
// broadcast). A snapshot travels as one blob: per part, an 8-byte
// little-endian length then the bytes.
#include <cstdint>
#include <set>

#include "lib/api/membership.h"
#include "trainrun/communicator.h"
#include "trainrun/elastic.h"

namespace trainrun::elastic {
namespace {

constexpr std::size_t kLengthBytes = 8;

std::string encode(const std::vector<std::string>& parts) {
  std::string blob;
  for (const std::string& part : parts) {
    std::uint64_t n = part.size();
    for (std::size_t i = 0; i < kLengthBytes; ++i, n >>= 8) blob.push_back(static_cast<char>(n & 0xff));
    blob += part;
  }
  return blob;
}

std::vector<std::string> decode(const std::string& blob, std::size_t parts) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos + kLengthBytes <= blob.size()) {
    std::uint64_t n = 0;
    for (std::size_t i = kLengthBytes; i-- > 0;) n = (n << 8) | static_cast<unsigned char>(blob[pos + i]);
    pos += kLengthBytes;
    if (n > blob.size() - pos) break;
    out.push_back(blob.substr(pos, n));
    pos += n;
  }
  if (pos != blob.size() || out.size() != parts) {
    throw Error(Error::Code::Mismatch, "elastic state: the synchronized state has " + std::to_string(out.size()) +
                                           " parts, this rank's State has " + std::to_string(parts) +
                                           " (every rank must add the same parts)");
  }
  return out;
}

}  // namespace

void State::check_size(const std::string& name, std::size_t got, std::size_t want) {
  if (got != want) {
    throw Error(Error::Code::Mismatch, "elastic state '" + name + "': " + std::to_string(got) +
                                           " bytes to load into a value of " + std::to_string(want));
  }
}

void State::add(std::string name, Save save, Load load) {
  for (const Part& part : parts_) {
    if (part.name == name) throw Error(Error::Code::InvalidArgument, "elastic state '" + name + "' was added twice");
  }
  if (!save || !load)
    throw Error(Error::Code::InvalidArgument, "elastic state '" + name + "': save and load are required");
  parts_.push_back({std::move(name), std::move(save), std::move(load)});
}

std::vector<std::string> State::save_all() const {
  std::vector<std::string> out;
  out.reserve(parts_.size());
  for (const Part& part : parts_) out.push_back(part.save());
  return out;
}

void State::load_all(const std::vector<std::string>& bytes) const {
  for (std::size_t i = 0; i < parts_.size(); ++i) parts_[i].load(bytes[i]);
}

void State::commit() {
  snapshot_ = save_all();
  has_snapshot_ = true;
  ++commits_;
  const detail::Membership m = detail::membership();
  if (!m.elastic) return;  // the same on every rank: none makes the call below
  std::int32_t newest = m.newest_generation;
  init().allreduce(&newest, &newest, 1, DataType::Int32, ReduceOp::Max);
  if (newest > m.generation) {
    throw HostsUpdated("elastic generation " + std::to_string(newest) + " replaces generation " +
                       std::to_string(m.generation) + " (workers were added or removed)");
  }
}

void State::restore() {
  if (has_snapshot_) load_all(snapshot_);
}

void State::sync() {
  Communicator& comm = init();
  std::int32_t root = has_snapshot_ ? comm.rank() : comm.size();
  comm.allreduce(&root, &root, 1, DataType::Int32, ReduceOp::Min);
  if (root == comm.size()) root = 0;
  std::string blob;
  if (comm.rank() == root) blob = encode(has_snapshot_ ? snapshot_ : save_all());
  std::int64_t length = static_cast<std::int64_t>(blob.size());
  comm.broadcast(&length, 1, DataType::Int64, root);
  blob.resize(static_cast<std::size_t>(length));
  comm.broadcast(blob.data(), blob.size(), DataType::UInt8, root);
  snapshot_ = decode(blob, parts_.size());
  has_snapshot_ = true;
  load_all(snapshot_);
}

void State::on_reset(std::function<void()> callback) { on_reset_.push_back(std::move(callback)); }

void State::reset() const {
  for (const auto& callback : on_reset_) callback();
}

}  // namespace trainrun::elastic
