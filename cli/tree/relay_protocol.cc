#include "cli/tree/relay_protocol.h"

#include <charconv>

#include "rendezvous/kv_request.h"

namespace trainrun::cli {
namespace {

using rendezvous::decode_frames;
using rendezvous::encode_frames;

constexpr std::size_t kHostFields = 3, kRowFields = 4;

std::optional<long long> parse_number(std::string_view text) {
  long long value = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// A list of records of `width` fields each: its count, then every field.
std::string encode_records(std::size_t count, const std::vector<std::string>& fields) {
  return encode_frames({std::to_string(count), encode_frames(fields)});
}

std::optional<std::vector<std::string>> decode_records(std::string_view payload, std::size_t width,
                                                       std::size_t* count) {
  const auto outer = decode_frames(payload, 2);
  if (!outer) return std::nullopt;
  const auto n = parse_number((*outer)[0]);
  if (!n || *n < 0 || static_cast<std::size_t>(*n) > payload.size()) return std::nullopt;
  *count = static_cast<std::size_t>(*n);
  return decode_frames((*outer)[1], width * *count);
}

std::string encode_options(const RemoteOptions& o) {
  return encode_frames({std::to_string(o.ssh_port), o.ssh_identity_file, std::to_string(o.ssh_connect_timeout_s),
                        o.ssh_accept_new ? "1" : "0", o.remote_trainrun, o.network, o.network_interface});
}

std::optional<RemoteOptions> decode_options(std::string_view payload) {
  const auto v = decode_frames(payload, 7);
  if (!v) return std::nullopt;
  const auto port = parse_number((*v)[0]), timeout = parse_number((*v)[2]);
  if (!port || !timeout) return std::nullopt;
  return RemoteOptions{
      static_cast<int>(*port), (*v)[1], static_cast<int>(*timeout), (*v)[3] == "1", (*v)[4], (*v)[5], (*v)[6]};
}

}  // namespace

std::string encode_relay_request(const RelayRequest& request) {
  std::vector<std::string> hosts;
  for (const HostSlots& h : request.hosts) hosts.insert(hosts.end(), {h.host, std::to_string(h.slots), h.user});
  return encode_frames({encode_options(request.options), encode_probe_request(request.probe),
                        std::to_string(request.radix), encode_records(request.hosts.size(), hosts)});
}

std::optional<RelayRequest> decode_relay_request(std::string_view payload) {
  const auto v = decode_frames(payload, 4);
  if (!v) return std::nullopt;
  auto options = decode_options((*v)[0]);
  auto probe = decode_probe_request((*v)[1]);
  const auto radix = parse_number((*v)[2]);
  std::size_t count = 0;
  const auto fields = decode_records((*v)[3], kHostFields, &count);
  if (!options || !probe || !radix || *radix < 1 || !fields) return std::nullopt;
  RelayRequest request{std::move(*options), std::move(*probe), {}, static_cast<std::size_t>(*radix)};
  for (std::size_t i = 0; i < count; ++i) {
    const auto slots = parse_number((*fields)[kHostFields * i + 1]);
    if (!slots) return std::nullopt;
    request.hosts.push_back({(*fields)[kHostFields * i], static_cast<int>(*slots), (*fields)[kHostFields * i + 2], ""});
  }
  return request;
}

std::string encode_relay_report(const RelayReport& report) {
  std::vector<std::string> rows, answers;
  for (const CheckRow& r : report.rows) rows.insert(rows.end(), {r.host, r.check, r.result, r.ok ? "1" : "0"});
  for (const ProbeAnswer& a : report.answers) answers.push_back(encode_probe_answer(a));
  return encode_frames({report.ok ? "1" : "0", encode_records(report.rows.size(), rows),
                        encode_records(report.answers.size(), answers)});
}

std::optional<RelayReport> decode_relay_report(std::string_view payload) {
  const auto v = decode_frames(payload, 3);
  if (!v) return std::nullopt;
  std::size_t row_count = 0, answer_count = 0;
  const auto rows = decode_records((*v)[1], kRowFields, &row_count);
  const auto answers = decode_records((*v)[2], 1, &answer_count);
  if (!rows || !answers) return std::nullopt;
  RelayReport report;
  report.ok = (*v)[0] == "1";
  for (std::size_t i = 0; i < row_count; ++i) {
    const std::string* r = &(*rows)[kRowFields * i];
    report.rows.push_back({r[0], r[1], r[2], r[3] == "1"});
  }
  for (const std::string& encoded : *answers) {
    auto answer = decode_probe_answer(encoded);
    if (!answer) return std::nullopt;
    report.answers.push_back(std::move(*answer));
  }
  return report;
}

}  // namespace trainrun::cli
