// The per-node launch's handshake (cli/node/node_protocol.h): what a join
// and a welcome carry, and that each side's proof of the shared secret is
// checked, with a message for the node that says what differs.
#include <doctest/doctest.h>

#include "cli/node/node_protocol.h"

using namespace trainrun;
using namespace trainrun::cli::node;

namespace {

SharedSecret secret_of(const std::string& text) {
  rendezvous::Secret s{};
  REQUIRE(derive_secret(text, s).empty());
  return s;
}

Join a_join() {
  Join j;
  j.kind = ConnectionKind::Agent;
  j.job = "job7";
  j.node_rank = 2;
  j.nproc = 4;
  j.host = "h3";
  j.version = "1.2.3";
  j.attempt = 1;
  j.token = "abcd";
  j.nonce = "n1";
  return j;
}

}  // namespace

TEST_CASE("a join carries who joins, and node 0 reads it back") {
  const SharedSecret secret = secret_of("0123456789abcdef-secret");
  const JoinCheck check = check_join(encode_join(a_join(), secret, "challenge"), secret, "challenge");
  REQUIRE(check.join);
  CHECK(check.join->kind == ConnectionKind::Agent);
  CHECK(check.join->job == "job7");
  CHECK(check.join->node_rank == 2);
  CHECK(check.join->nproc == 4);
  CHECK(check.join->host == "h3");
  CHECK(check.join->attempt == 1);
  CHECK(check.join->token == "abcd");
  CHECK(check.join->nonce == "n1");
  const JoinCheck open = check_join(encode_join(a_join(), std::nullopt, "c"), std::nullopt, "c");
  CHECK(open.join);  // no secret on either side: torchrun's trust
}

TEST_CASE("a join's proof: another challenge, another secret, or one side without are refused, saying which") {
  const SharedSecret secret = secret_of("0123456789abcdef-secret");
  const std::string join = encode_join(a_join(), secret, "challenge");
  CHECK(check_join(join, secret, "another").refusal ==
        "node 0's shared secret differs from this node's: give every node the same --rdzv-secret-file (or "
        "TRAINRUN_RDZV_SECRET)");  // a replay to a new challenge fails alike
  CHECK(check_join(join, secret_of("another secret, 16+"), "challenge")
            .refusal.rfind("node 0's shared secret differs", 0) == 0);
  CHECK(check_join(join, std::nullopt, "challenge").refusal.rfind("node 0 has no shared secret and this node one", 0) ==
        0);
  CHECK(check_join(encode_join(a_join(), std::nullopt, "challenge"), secret, "challenge")
            .refusal.rfind("node 0 holds a shared secret and this node none", 0) == 0);
  std::string tampered = join;
  tampered.replace(tampered.find("nproc=4"), 7, "nproc=9");
  CHECK_FALSE(check_join(tampered, secret, "challenge").join);
  CHECK(check_join("garbage", secret, "challenge").refusal.find("malformed") != std::string::npos);
}

TEST_CASE("a welcome proves node 0 holds the secret, for this node's nonce only") {
  const SharedSecret secret = secret_of("0123456789abcdef-secret");
  const std::string welcome = encode_welcome({2, 3, "tok"}, secret, "nonce");
  std::string error;
  const std::optional<Welcome> w = check_welcome(welcome, secret, "nonce", &error);
  REQUIRE(w);
  CHECK(w->node_rank == 2);
  CHECK(w->nodes == 3);
  CHECK(w->token == "tok");
  CHECK_FALSE(check_welcome(welcome, secret, "another nonce", &error));
  CHECK(error.rfind("node 0's shared secret differs", 0) == 0);
  CHECK_FALSE(check_welcome(encode_welcome({2, 3, "tok"}, std::nullopt, "nonce"), secret, "nonce", &error));
  CHECK(error.rfind("node 0 has no shared secret and this node one", 0) == 0);
  CHECK_FALSE(check_welcome(welcome, std::nullopt, "nonce", &error));
  CHECK(error.rfind("node 0 holds a shared secret and this node none", 0) == 0);
}

TEST_CASE("the shared secret: at least 16 characters, a trailing newline ignored; the ranks' secret differs per run") {
  rendezvous::Secret a{}, b{};
  CHECK(derive_secret("short", a).find("needs at least 16") != std::string::npos);
  CHECK(derive_secret("0123456789abcdef\n", a).empty());
  CHECK(derive_secret("0123456789abcdef", b).empty());
  CHECK(a == b);
  CHECK(ranks_secret(a, "job1") != ranks_secret(a, "job2"));
  CHECK(ranks_secret(a, "job1") != a);
}

TEST_CASE("the job's end: status, outcome and summary; a summary's newline cannot add a field") {
  const std::optional<JobEnd> end = decode_end(encode_end({1, "rank_failed", "trainrun: rank 3\nstatus=0"}));
  REQUIRE(end);
  CHECK(end->status == 1);
  CHECK(end->outcome == "rank_failed");
  CHECK(end->summary == "trainrun: rank 3 status=0");
  CHECK_FALSE(decode_end("status=x\n"));
}
