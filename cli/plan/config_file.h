// horovodrun's --config-file: a YAML file of engine and launcher settings
// (controller, params, timeline, stall_check, logging, autotune,
// library_options), turned into the command-line tokens of trainrun's own
// options. The command line wins: a setting whose option (or one of its
// aliases) was given there produces no token. A key trainrun does not know
// is an error naming it; a setting trainrun has no use for is accepted with
// a note. Reads the file; otherwise pure.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace trainrun::cli {

struct ConfigTokens {
  std::vector<std::string> tokens;  // "--fusion-threshold-mb=32", ...
  std::vector<std::string> keys;    // each token's YAML key: "params.fusion_threshold_mb", ...
  std::vector<std::string> notes;   // what accepted-but-unused settings do
  std::string error;                // one line, without "trainrun: error: "
};

// `given("--stall-warning")`: whether the command line set that option.
ConfigTokens config_file_tokens(const std::string& path, const std::function<bool(const std::string&)>& given);

// The YAML key whose token set `option` ("--stall-warning"), or "".
std::string config_key_of(const ConfigTokens& config, const std::string& option);

}  // namespace trainrun::cli
