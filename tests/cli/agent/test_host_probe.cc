#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/agent/host_probe.h"

using namespace trainrun::cli;

namespace {

ProbeAnswer ask(HostProbe& probe, const ProbeRequest& request) {
  const auto answer = decode_probe_answer(probe.answer(encode_probe_request(request)));
  REQUIRE(answer);
  return *answer;
}

}  // namespace

TEST_CASE("probe and reach messages survive encoding, and malformed ones are refused") {
  const ProbeRequest request{"./train", "/opt/bin:/usr/bin", "/work dir", "10.0.0.254", "10.0.0.0/24", "eth1", true};
  const auto back = decode_probe_request(encode_probe_request(request));
  REQUIRE(back);
  CHECK(back->program == "./train");
  CHECK(back->path == "/opt/bin:/usr/bin");
  CHECK(back->cwd == "/work dir");
  CHECK(back->rendezvous_addr == "10.0.0.254");
  CHECK(back->network == "10.0.0.0/24");
  CHECK(back->interface == "eth1");
  CHECK(back->listen);
  const ProbeAnswer answer{"no such file: /x", "", "10.0.0.2", "", 40000, 40001};
  const auto answer_back = decode_probe_answer(encode_probe_answer(answer));
  REQUIRE(answer_back);
  CHECK(answer_back->program_error == "no such file: /x");
  CHECK(answer_back->address == "10.0.0.2");
  CHECK(answer_back->free_port == 40000);
  CHECK(answer_back->listen_port == 40001);
  const auto targets = decode_reach_request(encode_reach_request({{"rendezvous", "10.0.0.254", 80}, {"h2", "::1", 9}}));
  REQUIRE(targets);
  REQUIRE(targets->size() == 2);
  CHECK((*targets)[1].name == "h2");
  CHECK((*targets)[1].address == "::1");
  CHECK((*targets)[1].port == 9);
  CHECK(decode_reach_answer(encode_reach_answer({"", "timed out"}), 2) == std::vector<std::string>{"", "timed out"});
  CHECK_FALSE(decode_probe_request("garbage"));
  CHECK_FALSE(decode_probe_answer(encode_probe_request(request)));
  CHECK_FALSE(decode_reach_request("x"));
  CHECK_FALSE(decode_reach_answer(encode_reach_answer({""}), 2));
}

TEST_CASE("the probe finds the program as the rank will: in the job's directory, along its PATH") {
  HostProbe probe;
  ProbeRequest request;
  request.cwd = "/usr";
  request.rendezvous_addr = "127.0.0.1";
  request.program = "bin/sh";  // relative to the job's directory
  ProbeAnswer a = ask(probe, request);
  CHECK(a.program_error.empty());
  CHECK(a.cwd_error.empty());
  CHECK(a.address == "127.0.0.1");
  CHECK(a.address_error.empty());
  CHECK(a.free_port > 0);
  CHECK(a.listen_port == 0);
  request.program = "/nonexistent/prog";
  CHECK(ask(probe, request).program_error == "no such file: /nonexistent/prog");
  request.program = "sh";
  request.path = "/nonexistent";
  CHECK(ask(probe, request).program_error == "program 'sh' not found in PATH");
  request.program = "";
  request.cwd = "/nonexistent/dir";
  CHECK(ask(probe, request).cwd_error == "no such directory: /nonexistent/dir");
  request.cwd = "/etc/hostname";
  CHECK(ask(probe, request).cwd_error == "not a directory: /etc/hostname");
}

TEST_CASE("the probe's address follows --network and --network-interface, and says why not") {
  HostProbe probe;
  ProbeRequest request;
  request.cwd = "/";
  request.network = "127.0.0.0/8";
  CHECK(ask(probe, request).address == "127.0.0.1");
  request.network = "";
  request.interface = "lo";
  CHECK(ask(probe, request).address == "127.0.0.1");
  request.interface = "nosuch0";
  const ProbeAnswer a = ask(probe, request);
  CHECK(a.address.empty());
  CHECK(a.address_error.rfind("no interface 'nosuch0'", 0) == 0);
}

TEST_CASE("reach: a listening port is reached, a closed one is named") {
  HostProbe probe;
  ProbeRequest request;
  request.cwd = "/";
  request.rendezvous_addr = "127.0.0.1";
  request.listen = true;
  const ProbeAnswer a = ask(probe, request);
  REQUIRE(a.listen_port > 0);
  const std::vector<ReachTarget> targets = {{"open", "127.0.0.1", a.listen_port}, {"closed", "127.0.0.1", a.free_port}};
  const auto errors = decode_reach_answer(probe.reach(encode_reach_request(targets)), 2);
  REQUIRE(errors);
  CHECK((*errors)[0].empty());
  CHECK((*errors)[1] == "Connection refused (ECONNREFUSED)");
}
