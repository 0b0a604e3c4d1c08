// What an agent tells the launcher when a rank ends (the Exited frame's
// payload, cli/agent/agent_protocol.h): the raw wait status, then the rank's
// resource use from wait4: "STATUS MAXRSS_KB USER_US SYSTEM_US". The
// launcher reads the status with atoi as before, so either side may be
// older; usage fields are absent when the agent did not send them. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainrun::cli {

struct ExitRecord {
  int status = 0;  // as wait() returns it
  struct Usage {
    std::int64_t max_rss_kb = 0;
    std::int64_t user_us = 0;
    std::int64_t system_us = 0;
  };
  std::optional<Usage> usage;
};

std::string encode_exit(const ExitRecord& record);
// nullopt when the status is not a number; usage is dropped when malformed.
std::optional<ExitRecord> decode_exit(std::string_view payload);

}  // namespace trainrun::cli
