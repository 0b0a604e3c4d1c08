// The rendezvous server's request-header path as rendezvous/http_server.cc
// runs it: Boost.Beast's request_parser<empty_body> with the server's limits,
// fed the bytes in the chunks the input's first bytes choose (as
// async_read_header would), then parse_kv_request on method and target, the
// authentication header split and the body-length checks.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <limits>
#include <string>

#include "rendezvous/auth.h"
#include "rendezvous/kv_request.h"
#include "contract/auth_scheme.h"
#include "contract/limits.h"
#include "tests/fuzz/fuzz_input.h"

namespace beast = boost::beast;
namespace http = beast::http;
namespace p = trainrun::contract;
using namespace trainrun::rendezvous;

namespace {

std::string_view view(beast::string_view s) { return {s.data(), s.size()}; }

void on_header(const http::request_parser<http::empty_body>& parser) {
  const auto& req = parser.get();
  (void)req.keep_alive();
  if (req.version() != 11 && req.version() != 10) return;
  const KvParse parsed = parse_kv_request(view(req.method_string()), view(req.target()));
  if (!parsed.request) {
    FUZZ_CHECK(parsed.status >= 400 && parsed.status < 500);
    return;
  }
  const std::string_view authorization = view(req[p::kHeaderAuthorization.data()]);
  const std::string scheme = std::string(p::kAuthScheme) + " ";
  const std::string_view signature =
      authorization.substr(0, scheme.size()) == scheme ? authorization.substr(scheme.size()) : std::string_view();
  const SignedRequest signed_request{view(req.method_string()), view(req.target()),
                                     view(req[p::kHeaderContentSha256.data()]), view(req[p::kHeaderTimestamp.data()]),
                                     view(req[p::kHeaderNonce.data()])};
  // The seeds are signed with this secret at this time, so that mutations
  // reach the checks after authentication too.
  Authenticator auth(*secret_from_hex(std::string(64, '0')));
  if (auth.check(signed_request, signature, 1'704'067'200'000) != AuthResult::Ok) return;
  // What the server then asks Beast before it reads a body.
  (void)req.chunked();
  (void)parser.content_length();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto input = trainrun::fuzz::chunked(data, size);
  http::request_parser<http::empty_body> parser;
  parser.header_limit(p::kMaxHeaderBytes);
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  std::string buffer;  // what async_read_header keeps between reads
  bool failed = false;
  input.for_each_chunk([&](std::string_view chunk) {
    buffer.append(chunk);
    while (!parser.is_header_done() && !buffer.empty()) {
      beast::error_code ec;
      const std::size_t used = parser.put(boost::asio::buffer(buffer.data(), buffer.size()), ec);
      FUZZ_CHECK(used <= buffer.size());
      buffer.erase(0, used);
      if (ec == http::error::need_more) break;
      if (ec) {
        failed = true;
        return false;
      }
      if (used == 0) break;
    }
    return !parser.is_header_done();
  });
  if (!failed && parser.is_header_done()) on_header(parser);
  return 0;
}
