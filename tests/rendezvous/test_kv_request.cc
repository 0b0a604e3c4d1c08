#include <doctest/doctest.h>

#include "rendezvous/kv_request.h"
#include "contract/limits.h"

using namespace trainrun::rendezvous;
using std::chrono::milliseconds;

TEST_CASE("targets built by the client parse back on the server") {
  auto put = parse_kv_request("PUT", kv_target("tcp.0", "addr.3"));
  REQUIRE(put.request);
  CHECK(put.request->op == KvOp::Put);
  CHECK(put.request->keys == std::vector<std::string>{"tcp.0/addr.3"});

  auto get = parse_kv_request("GET", kv_get_target("job", "rank.1", milliseconds(2500)));
  REQUIRE(get.request);
  CHECK(get.request->op == KvOp::Get);
  CHECK(get.request->wait == milliseconds(2500));

  auto add = parse_kv_request("POST", kv_add_target("s", "counter"));
  REQUIRE(add.request);
  CHECK(add.request->op == KvOp::Add);

  auto many = parse_kv_request("GET", kv_get_many_target("s", {"a", "b", "c"}, milliseconds(1)));
  REQUIRE(many.request);
  CHECK(many.request->op == KvOp::GetMany);
  CHECK(many.request->keys == std::vector<std::string>{"s/a", "s/b", "s/c"});

  auto range = parse_kv_request("GET", kv_get_range_target("g", "addr.", 2, 3, milliseconds(0)));
  REQUIRE(range.request);
  CHECK(range.request->keys == std::vector<std::string>{"g/addr.2", "g/addr.3", "g/addr.4"});

  auto health = parse_kv_request("GET", "/v1/health");
  REQUIRE(health.request);
  CHECK(health.request->op == KvOp::Health);
}

TEST_CASE("wait_ms is clamped to the protocol maximum") {
  auto get = parse_kv_request("GET", "/v1/kv/s/k?wait_ms=999999999");
  REQUIRE(get.request);
  CHECK(get.request->wait == trainrun::contract::kMaxWait);
}

TEST_CASE("bad requests get the documented status") {
  struct Case {
    const char* method;
    const char* target;
    int status;
  };
  const Case cases[] = {
      {"GET", "/nope", 404},
      {"GET", "/v1/kv/s/k/extra/more", 404},
      {"GET", "/v1/kv/s/k/other", 404},
      {"DELETE", "/v1/kv/s/k", 405},
      {"POST", "/v1/kv/s/k", 405},
      {"GET", "/v1/kv/s/k/add", 405},
      {"PUT", "/v1/kv/s", 405},
      {"POST", "/v1/health", 405},
      {"GET", "/v1/kv/s/k?wait_ms=abc", 400},
      {"GET", "/v1/kv/s/k?wait_ms=-1", 400},
      {"GET", "/v1/kv/s/k?bogus=1", 400},
      {"GET", "/v1/kv/s/k?wait_ms=1&wait_ms=2", 400},
      {"GET", "/v1/kv/s/k?keys=a", 400},
      {"GET", "/v1/kv/s%2Fk/x", 400},
      {"GET", "/v1/kv/s/../k", 400},
      {"GET", "/v1/kv/s/", 400},
      {"GET", "/v1/kv/s?keys=a,,b", 400},
      {"GET", "/v1/kv/s?keys=a&prefix=b&first=0&count=1", 400},
      {"GET", "/v1/kv/s?prefix=a&first=0&count=70000", 400},
      {"GET", "/v1/kv/s?prefix=a&first=x&count=1", 400},
      {"GET", "/v1/kv/s", 400},
      {"PUT", "/v1/kv/s/k?wait_ms=5", 400},
      {"GET", "/v1/health?x=1", 400},
  };
  for (const Case& c : cases) {
    const KvParse parsed = parse_kv_request(c.method, c.target);
    const std::string what = std::string(c.method) + " " + c.target;
    CHECK_MESSAGE(parsed.status == c.status, what);
    CHECK_FALSE(parsed.request.has_value());
  }
}

TEST_CASE("names are limited in charset and length") {
  CHECK(is_valid_name("tcp.0"));
  CHECK(is_valid_name("A-z_9"));
  CHECK_FALSE(is_valid_name(""));
  CHECK_FALSE(is_valid_name("a b"));
  CHECK_FALSE(is_valid_name("a/b"));
  CHECK_FALSE(is_valid_name(".."));
  CHECK(is_valid_name("..."));
  CHECK_FALSE(is_valid_name(std::string(trainrun::contract::kMaxNameBytes + 1, 'a')));
  CHECK(is_valid_name(std::string(trainrun::contract::kMaxNameBytes, 'a')));
}

TEST_CASE("frames round-trip binary values and reject truncation") {
  const std::vector<std::string> values = {"", std::string("\0\1\2", 3), std::string(300, 'x')};
  const std::string body = encode_frames(values);
  CHECK(decode_frames(body, 3) == values);
  CHECK_FALSE(decode_frames(body, 2).has_value());
  CHECK_FALSE(decode_frames(body, 4).has_value());
  CHECK_FALSE(decode_frames(body.substr(0, body.size() - 1), 3).has_value());
  std::string huge_length(8, '\xff');
  CHECK_FALSE(decode_frames(huge_length, 1).has_value());
}
