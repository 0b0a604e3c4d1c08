#include "contract/elastic_protocol.h"

#include <charconv>

namespace trainrun::elastic_protocol {
namespace {

// The next space- or newline-separated word of `text` from `pos`.
std::string_view word(std::string_view text, std::size_t& pos) {
  while (pos < text.size() && text[pos] == ' ') ++pos;
  const std::size_t start = pos;
  while (pos < text.size() && text[pos] != ' ' && text[pos] != '\n') ++pos;
  return text.substr(start, pos - start);
}

bool number(std::string_view text, int& out) {
  const auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size() && out >= 0;
}

}  // namespace

const Slot* Assignment::find(int worker) const {
  for (const Slot& slot : slots) {
    if (slot.worker == worker) return &slot;
  }
  return nullptr;
}

std::string encode_assignment(const Assignment& assignment) {
  std::string out = "generation " + std::to_string(assignment.generation) + "\n";
  for (const Slot& s : assignment.slots) {
    for (int n : {s.worker, s.rank, s.local_rank, s.local_size, s.cross_rank, s.cross_size}) {
      out += std::to_string(n) + " ";
    }
    out += s.host + "\n";
  }
  return out;
}

std::optional<Assignment> decode_assignment(std::string_view text) {
  Assignment a;
  std::size_t pos = 0;
  if (word(text, pos) != "generation" || !number(word(text, pos), a.generation)) return std::nullopt;
  if (pos >= text.size() || text[pos] != '\n') return std::nullopt;
  ++pos;
  while (pos < text.size()) {
    Slot s;
    for (int* field : {&s.worker, &s.rank, &s.local_rank, &s.local_size, &s.cross_rank, &s.cross_size}) {
      if (!number(word(text, pos), *field)) return std::nullopt;
    }
    s.host = std::string(word(text, pos));
    if (s.host.empty() || pos >= text.size() || text[pos] != '\n') return std::nullopt;
    ++pos;
    if (s.rank != a.size() || s.local_rank >= s.local_size || s.cross_rank >= s.cross_size) return std::nullopt;
    if (a.find(s.worker)) return std::nullopt;
    a.slots.push_back(std::move(s));
  }
  if (a.slots.empty()) return std::nullopt;
  return a;
}

std::string assignment_key(int generation) { return std::string(kKeyAssignmentPrefix) + std::to_string(generation); }
std::string ready_key(int worker) { return std::string(kKeyReadyPrefix) + std::to_string(worker); }
std::string alive_key(int worker) { return std::string(kKeyAlivePrefix) + std::to_string(worker); }
std::string probe_key(int worker) { return std::string(kKeyProbePrefix) + std::to_string(worker); }
std::string reach_key(int worker) { return std::string(kKeyReachPrefix) + std::to_string(worker); }
std::string left_key(int worker) { return std::string(kKeyLeftPrefix) + std::to_string(worker); }

}  // namespace trainrun::elastic_protocol
