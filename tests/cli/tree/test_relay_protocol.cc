#include <doctest/doctest.h>

#include "cli/tree/relay_protocol.h"

using namespace trainrun::cli;

TEST_CASE("a relay request survives its encoding") {
  RelayRequest request;
  request.options.ssh_port = 2222;
  request.options.ssh_identity_file = "/k/id";
  request.options.ssh_connect_timeout_s = 7;
  request.options.ssh_accept_new = true;
  request.options.remote_trainrun = "/opt/trainrun";
  request.options.network = "10.0.0.0/8";
  request.probe.program = "./train";
  request.probe.cwd = "/work";
  request.hosts = {{"h3", 8, "alice", ""}, {"10.0.0.4", 1, "", ""}};
  request.radix = 16;
  const std::optional<RelayRequest> back = decode_relay_request(encode_relay_request(request));
  REQUIRE(back);
  CHECK(back->options.ssh_port == 2222);
  CHECK(back->options.ssh_identity_file == "/k/id");
  CHECK(back->options.ssh_connect_timeout_s == 7);
  CHECK(back->options.ssh_accept_new);
  CHECK(back->options.remote_trainrun == "/opt/trainrun");
  CHECK(back->options.network == "10.0.0.0/8");
  CHECK(back->options.network_interface.empty());
  CHECK(back->probe.program == "./train");
  CHECK(back->probe.cwd == "/work");
  REQUIRE(back->hosts.size() == 2);
  CHECK(back->hosts[0].host == "h3");
  CHECK(back->hosts[0].slots == 8);
  CHECK(back->hosts[0].user == "alice");
  CHECK(back->hosts[1].host == "10.0.0.4");
  CHECK(back->radix == 16);
}

TEST_CASE("a relay report survives its encoding") {
  RelayReport report;
  report.ok = true;
  report.rows = {{"h3", "connect", "ok: root@h3:22", true}, {"h4", "program", "no such file: ./x", false}};
  ProbeAnswer answer;
  answer.address = "10.0.0.3";
  answer.free_port = 4242;
  report.answers = {answer, ProbeAnswer{}};
  const std::optional<RelayReport> back = decode_relay_report(encode_relay_report(report));
  REQUIRE(back);
  CHECK(back->ok);
  REQUIRE(back->rows.size() == 2);
  CHECK(back->rows[1].host == "h4");
  CHECK(back->rows[1].check == "program");
  CHECK(back->rows[1].result == "no such file: ./x");
  CHECK_FALSE(back->rows[1].ok);
  REQUIRE(back->answers.size() == 2);
  CHECK(back->answers[0].address == "10.0.0.3");
  CHECK(back->answers[0].free_port == 4242);
}

TEST_CASE("malformed relay payloads are refused, not guessed at") {
  CHECK_FALSE(decode_relay_request(""));
  CHECK_FALSE(decode_relay_report("garbage"));
  RelayRequest request;
  request.hosts = {{"h1", 1, "", ""}};
  const std::string good = encode_relay_request(request);
  for (std::size_t cut = 0; cut < good.size(); cut += 7) CHECK_FALSE(decode_relay_request(good.substr(0, cut)));
  request.radix = 0;
  CHECK_FALSE(decode_relay_request(encode_relay_request(request)));  // a radix of 0 reaches no one
}
