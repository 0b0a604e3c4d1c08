// HTTP/1.1 framing for the worker-side client: serializing a request and
// incrementally parsing a response (Content-Length bodies only; the
// rendezvous server never sends chunked). Pure, no sockets; a parser
// instance belongs to one connection and one thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainrun::rendezvous {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

std::string format_request(std::string_view method, std::string_view target, std::string_view host,
                           const HeaderList& headers, std::string_view body);

struct HttpResponse {
  int status = 0;
  HeaderList headers;
  std::string body;
  bool keep_alive = true;
  const std::string* header(std::string_view name) const;  // case-insensitive
};

class ResponseParser {
 public:
  enum class State { NeedMore, Done, Error };
  explicit ResponseParser(std::size_t max_header_bytes = 16 * 1024, std::size_t max_body_bytes = 64 * 1024 * 1024)
      : max_header_(max_header_bytes), max_body_(max_body_bytes) {}

  // Consumes bytes; returns Done once a whole response is parsed (bytes
  // after it are kept for the next response), Error on malformed input.
  State feed(std::string_view bytes);
  State state() const { return state_; }
  const std::string& error() const { return error_; }
  HttpResponse take();  // the finished response; resets for the next one

 private:
  State parse_header(std::size_t header_end);
  State fail(std::string message);

  std::size_t max_header_;
  std::size_t max_body_;
  std::string buffer_;
  bool have_header_ = false;
  std::size_t body_length_ = 0;
  HttpResponse response_;
  State state_ = State::NeedMore;
  std::string error_;
};

bool iequals(std::string_view a, std::string_view b);

}  // namespace trainrun::rendezvous
