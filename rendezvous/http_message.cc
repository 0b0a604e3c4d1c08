#include "rendezvous/http_message.h"

#include <charconv>

namespace trainrun::rendezvous {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string format_request(std::string_view method, std::string_view target, std::string_view host,
                           const HeaderList& headers, std::string_view body) {
  std::string out;
  out.reserve(256 + target.size() + body.size());
  out.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: ");
  out.append(host).append("\r\n");
  for (const auto& [name, value] : headers) out.append(name).append(": ").append(value).append("\r\n");
  out.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n\r\n");
  out.append(body);
  return out;
}

const std::string* HttpResponse::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return &value;
  }
  return nullptr;
}

namespace {

// How many bytes at the end of `s` may be the start of "\r\n\r\n".
std::size_t partial_terminator(std::string_view s) {
  constexpr std::string_view kEnd = "\r\n\r\n";
  for (std::size_t k = kEnd.size() - 1; k > 0; --k) {
    if (s.size() >= k && s.substr(s.size() - k) == kEnd.substr(0, k)) return k;
  }
  return 0;
}

}  // namespace

ResponseParser::State ResponseParser::fail(std::string message) {
  error_ = std::move(message);
  return state_ = State::Error;
}

ResponseParser::State ResponseParser::feed(std::string_view bytes) {
  if (state_ != State::NeedMore) return state_;
  buffer_.append(bytes);
  if (!have_header_) {
    const std::size_t end = buffer_.find("\r\n\r\n");
    // The limit holds however the bytes were split: a header that ends past
    // it is refused even when it arrived whole in one read.
    const std::size_t header_bytes = end != std::string::npos ? end : buffer_.size() - partial_terminator(buffer_);
    if (header_bytes > max_header_) return fail("response header too large");
    if (end == std::string::npos) return State::NeedMore;
    if (parse_header(end) == State::Error) return state_;
    buffer_.erase(0, end + 4);
  }
  if (buffer_.size() < body_length_) return State::NeedMore;
  response_.body = buffer_.substr(0, body_length_);
  buffer_.erase(0, body_length_);
  return state_ = State::Done;
}

ResponseParser::State ResponseParser::parse_header(std::size_t header_end) {
  const std::string_view header(buffer_.data(), header_end);
  std::size_t line_end = header.find("\r\n");
  const std::string_view status_line = header.substr(0, line_end);
  // "HTTP/1.1 200 OK"
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ') {
    return fail("malformed status line");
  }
  const auto parsed = std::from_chars(status_line.data() + 9, status_line.data() + 12, response_.status);
  if (parsed.ec != std::errc() || response_.status < 100 || response_.status > 599) {
    return fail("malformed status code");
  }
  response_.keep_alive = status_line[7] == '1';
  bool have_length = false;
  while (line_end != std::string_view::npos) {
    const std::size_t start = line_end + 2;
    line_end = header.find("\r\n", start);
    const std::string_view line = header.substr(start, line_end - start);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return fail("malformed header line");
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    const std::string_view name = line.substr(0, colon);
    if (iequals(name, "Content-Length")) {
      const auto r = std::from_chars(value.data(), value.data() + value.size(), body_length_);
      if (r.ec != std::errc() || r.ptr != value.data() + value.size()) return fail("bad Content-Length");
      if (body_length_ > max_body_) return fail("response body too large");
      have_length = true;
    } else if (iequals(name, "Transfer-Encoding")) {
      return fail("chunked responses are not supported");
    } else if (iequals(name, "Connection")) {
      if (iequals(value, "close")) response_.keep_alive = false;
    }
    response_.headers.emplace_back(std::string(name), std::string(value));
  }
  if (!have_length) body_length_ = 0;  // every server response carries one; 1xx/204 have none
  have_header_ = true;
  return State::NeedMore;
}

HttpResponse ResponseParser::take() {
  HttpResponse out = std::move(response_);
  response_ = HttpResponse();
  have_header_ = false;
  body_length_ = 0;
  state_ = State::NeedMore;
  error_.clear();
  return out;
}

}  // namespace trainrun::rendezvous
