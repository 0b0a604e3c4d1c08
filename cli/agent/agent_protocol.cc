#include "cli/agent/agent_protocol.h"

#include <charconv>
#include <stdexcept>

namespace trainrun::cli {
namespace {

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

bool known_type(std::uint8_t type) {
  return (type >= 1 && type <= 14) || (type >= 20 && type <= 32) || (type >= 40 && type <= 46);
}

void put_string(std::string& out, std::string_view s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

void put_strings(std::string& out, const std::vector<std::string>& list) {
  put_u32(out, static_cast<std::uint32_t>(list.size()));
  for (const auto& s : list) put_string(out, s);
}

// Bounds-checked reader over a job payload.
class Cursor {
 public:
  explicit Cursor(std::string_view data) : data_(data) {}
  bool u32(std::uint32_t& v) {
    if (data_.size() - pos_ < 4) return false;
    v = get_u32(data_.data() + pos_);
    pos_ += 4;
    return true;
  }
  bool string(std::string& s) {
    std::uint32_t n = 0;
    if (!u32(n) || data_.size() - pos_ < n) return false;
    s.assign(data_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool strings(std::vector<std::string>& list) {
    std::uint32_t n = 0;
    if (!u32(n) || n > data_.size()) return false;  // every entry takes >= 4 bytes
    list.resize(n);
    for (auto& s : list) {
      if (!string(s)) return false;
    }
    return true;
  }
  bool done() const { return pos_ == data_.size(); }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

}  // namespace

void append_frame(std::string& out, FrameType type, std::uint32_t rank, std::uint8_t stream, std::string_view payload) {
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(stream));
  out.append(2, '\0');
  put_u32(out, rank);
  put_u32(out, static_cast<std::uint32_t>(payload.size()));
  out.append(payload);
}

std::string encode_frame(const Frame& frame) {
  std::string out;
  append_frame(out, frame.type, frame.rank, frame.stream, frame.payload);
  return out;
}

std::size_t FrameReader::missing() const {
  if (buffered() < kFrameHeaderBytes) return kFrameHeaderBytes - buffered();
  const std::size_t whole = kFrameHeaderBytes + get_u32(buffer_.data() + consumed_ + 8);
  return whole > buffered() ? whole - buffered() : 0;
}

std::optional<Frame> FrameReader::next() {
  if (buffered() < kFrameHeaderBytes) return std::nullopt;
  const char* header = buffer_.data() + consumed_;
  const auto type = static_cast<std::uint8_t>(header[0]);
  const std::uint32_t length = get_u32(header + 8);
  if (!known_type(type)) throw std::runtime_error("agent protocol: unknown frame type " + std::to_string(type));
  if (length > kMaxFramePayload) throw std::runtime_error("agent protocol: oversized frame");
  if (buffered() < kFrameHeaderBytes + length) return std::nullopt;
  Frame frame;
  frame.type = static_cast<FrameType>(type);
  frame.stream = static_cast<std::uint8_t>(header[1]);
  frame.rank = get_u32(header + 4);
  frame.payload.assign(header + kFrameHeaderBytes, length);
  consumed_ += kFrameHeaderBytes + length;
  // Compact once the consumed prefix dominates, keeping appends amortised O(1).
  if (consumed_ > 64 * 1024 && consumed_ * 2 > buffer_.size()) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  return frame;
}

namespace {

// The job's header, then ranks [first, last).
std::string encode_ranks(const JobSpec& job, std::size_t first, std::size_t last) {
  std::string out;
  put_string(out, job.cwd);
  put_u32(out, job.grace_ms);
  put_u32(out, static_cast<std::uint32_t>(job.stdin_rank + 1));  // 0 = none
  put_u32(out, static_cast<std::uint32_t>(last - first));
  for (std::size_t i = first; i < last; ++i) {
    const RankSpec& rank = job.ranks[i];
    put_u32(out, rank.rank);
    put_strings(out, rank.argv);
    put_strings(out, rank.env);
  }
  return out;
}

std::size_t encoded_size(const RankSpec& rank) {
  std::size_t n = 12;  // rank, two list counts
  for (const auto* list : {&rank.argv, &rank.env}) {
    for (const std::string& s : *list) n += 4 + s.size();
  }
  return n;
}

}  // namespace

std::string encode_job(const JobSpec& job) { return encode_ranks(job, 0, job.ranks.size()); }

void append_job_frames(std::string& out, const JobSpec& job) {
  std::size_t first = 0;
  do {
    std::size_t last = first, bytes = 0;
    while (last < job.ranks.size() && (last == first || bytes + encoded_size(job.ranks[last]) <= kJobFrameBytes)) {
      bytes += encoded_size(job.ranks[last++]);
    }
    const bool more = last < job.ranks.size();
    append_frame(out, FrameType::Job, 0, more ? 1 : 0, encode_ranks(job, first, last));
    first = last;
  } while (first < job.ranks.size());
}

std::optional<JobSpec> decode_job(std::string_view payload) {
  Cursor in(payload);
  JobSpec job;
  std::uint32_t stdin_rank = 0, count = 0;
  if (!in.string(job.cwd) || !in.u32(job.grace_ms) || !in.u32(stdin_rank) || !in.u32(count) || count > payload.size()) {
    return std::nullopt;
  }
  job.stdin_rank = static_cast<std::int64_t>(stdin_rank) - 1;
  job.ranks.resize(count);
  for (RankSpec& rank : job.ranks) {
    if (!in.u32(rank.rank) || !in.strings(rank.argv) || !in.strings(rank.env) || rank.argv.empty()) {
      return std::nullopt;
    }
  }
  if (!in.done()) return std::nullopt;
  return job;
}

std::string encode_stack_skips(const std::vector<int>& ranks) {
  std::string out;
  for (int rank : ranks) out += (out.empty() ? "" : " ") + std::to_string(rank);
  return out;
}

std::vector<std::uint32_t> decode_stack_skips(std::string_view payload) {
  std::vector<std::uint32_t> ranks;
  while (!payload.empty()) {
    const std::size_t space = payload.find(' ');
    const std::string_view token = payload.substr(0, space);
    std::uint32_t rank = 0;
    const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), rank);
    if (error == std::errc() && end == token.data() + token.size()) ranks.push_back(rank);
    payload.remove_prefix(space == std::string_view::npos ? payload.size() : space + 1);
  }
  return ranks;
}

}  // namespace trainrun::cli
