// The main() of a doctest program whose tests run on SshHosts: the hosts
// are made (or the program exits 77 saying why they cannot be), `*hosts`
// points to them while the tests run, and they are removed afterwards.
#pragma once

#include <doctest/doctest.h>

#include <memory>

#include "tests/integration/ssh_hosts.h"

namespace trainrun::test {

inline int run_with_ssh_hosts(int argc, char** argv, SshHosts*& hosts) {
  const std::unique_ptr<SshHosts> fixture = SshHosts::make_or_say_why();
  if (!fixture) return 77;
  hosts = fixture.get();
  doctest::Context context(argc, argv);
  return context.run();
}

}  // namespace trainrun::test
