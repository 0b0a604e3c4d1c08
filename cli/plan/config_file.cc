#include "cli/plan/config_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "cli/plan/job_plan.h"
#include "cli/plan/printable.h"

namespace trainrun::cli {
namespace {

// One YAML section read into tokens; every key must be handled or noted.
class Section {
 public:
  Section(const YAML::Node& node, std::string name, ConfigTokens& out,
          const std::function<bool(const std::string&)>& given)
      : node_(node), name_(std::move(name)), out_(out), given_(given) {}

  // key -> "--option=value" unless any of `options` was given on the command line.
  void value(const char* key, const char* option, std::initializer_list<const char*> also = {}) {
    const YAML::Node v = take(key);
    if (!v) return;
    if (!v.IsScalar()) return fail(key, "not a single value");
    if (!was_given(option, also)) add(key, std::string(option) + "=" + v.Scalar());
  }
  // A boolean key: `option` when true.
  void flag(const char* key, const char* option, std::initializer_list<const char*> also = {}) {
    if (boolean(key) && !was_given(option, also)) add(key, option);
  }
  // A boolean key's value; false when absent or not a boolean (an error).
  bool boolean(const char* key) {
    const YAML::Node v = take(key);
    bool on = false;
    if (v && !YAML::convert<bool>::decode(v, on))
      fail(key, quoted(v.IsScalar() ? v.Scalar() : "...") + " is not true or false");
    return on;
  }
  // A key trainrun accepts and has no use for: a note.
  void unused(const char* key, const std::string& why) {
    if (take(key)) out_.notes.push_back(where(key) + ": " + why);
  }
  // The key's node, if the section has it (an error if the section is not a mapping).
  YAML::Node take(const char* key) {
    seen_.push_back(key);
    const YAML::Node& node = node_;  // const: a missing key is not added
    if (!node || node.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
    if (!node.IsMap()) {
      if (seen_.size() == 1) fail("", "not a mapping of settings");
      return YAML::Node(YAML::NodeType::Undefined);
    }
    const YAML::Node v = node[key];
    return v && !v.IsNull() ? v : YAML::Node(YAML::NodeType::Undefined);
  }
  void add(const std::string& key, std::string token) {
    out_.tokens.push_back(std::move(token));
    out_.keys.push_back(where(key));
  }
  void fail(const std::string& key, const std::string& why) {
    if (out_.error.empty()) out_.error = (key.empty() ? name_ : where(key)) + ": " + why;
  }
  bool was_given(const char* option, std::initializer_list<const char*> also) const {
    if (given_(option)) return true;
    for (const char* o : also) {
      if (given_(o)) return true;
    }
    return false;
  }
  std::string where(const std::string& key) const { return name_.empty() ? key : name_ + "." + key; }
  // The first key of this section nobody took, or "".
  std::string unknown_key() const {
    const YAML::Node& node = node_;
    if (!node || !node.IsMap()) return "";
    for (const auto& entry : node) {
      const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "...";
      if (std::find(seen_.begin(), seen_.end(), key) == seen_.end()) return where(key);
    }
    return "";
  }

 private:
  YAML::Node node_;
  std::string name_;
  ConfigTokens& out_;
  const std::function<bool(const std::string&)>& given_;
  std::vector<std::string> seen_;
};

void read_config(const YAML::Node& root, ConfigTokens& out, const std::function<bool(const std::string&)>& given) {
  Section top(root, "", out, given);
  if (const YAML::Node c = top.take("controller");
      c && !top.was_given("--backend", {"--gloo", "--launcher", "--mpi"})) {
    const std::string controller = c.IsScalar() ? c.Scalar() : "...";
    if (controller == "gloo" || controller == "GLOO") top.add("controller", "--backend=tcp");
    else if (controller == "mpi" || controller == "MPI") top.add("controller", "--launcher=mpirun");
    else out.error = "controller: " + quoted(controller) + " is not gloo or mpi";
  }
  Section params(top.take("params"), "params", out, given);
  params.value("fusion_threshold_mb", "--fusion-threshold-mb");
  params.value("cycle_time_ms", "--cycle-time-ms");
  params.value("cache_capacity", "--cache-capacity");
  params.flag("hierarchical_allreduce", "--hierarchical-allreduce");
  params.flag("hierarchical_allgather", "--hierarchical-allgather");
  Section timeline(top.take("timeline"), "timeline", out, given);
  timeline.value("filename", "--timeline", {"--timeline-filename"});
  timeline.flag("mark_cycles", "--timeline-mark-cycles");
  Section stall(top.take("stall_check"), "stall_check", out, given);
  const bool disabled = stall.take("enabled") && !stall.boolean("enabled");
  stall.value("warning_time_seconds", "--stall-warning", {"--stall-check-warning-time-seconds", "--no-stall-check"});
  stall.value("shutdown_time_seconds", "--stall-shutdown", {"--stall-check-shutdown-time-seconds", "--no-stall-check"});
  if (disabled && !stall.was_given("--no-stall-check", {})) stall.add("enabled", "--no-stall-check");
  Section logging(top.take("logging"), "logging", out, given);
  logging.value("level", "--log-level");
  logging.flag("with_timestamp", "--timestamp-output", {"--prefix-output-with-timestamp"});
  Section autotune(top.take("autotune"), "autotune", out, given);
  // Horovod reads the other autotune keys only when it is enabled.
  if (autotune.boolean("enabled")) {
    out.notes.push_back("autotune.enabled: trainrun does not autotune; the params are used as given");
  }
  for (const char* key :
       {"log_file", "warmup_samples", "steps_per_sample", "bayes_opt_max_samples", "gaussian_process_noise"}) {
    autotune.take(key);
  }
  Section library(top.take("library_options"), "library_options", out, given);
  // Horovod's Gloo timeout is trainrun's collective timeout.
  library.value("gloo_timeout_seconds", "--gloo-timeout-seconds");
  for (const char* key : {"mpi_threads_disable", "num_nccl_streams", "ccl_bgt_affinity"}) {
    library.unused(key, "no such setting in trainrun; no effect");
  }
  for (const Section* s : {&top, &params, &timeline, &stall, &logging, &autotune, &library}) {
    if (std::string key = s->unknown_key(); !key.empty() && out.error.empty()) out.error = "unknown key " + quoted(key);
  }
}

// The first key a mapping (at any depth) holds twice, as "section.key";
// yaml-cpp keeps one of them silently.
std::string duplicate_key(const YAML::Node& node, const std::string& prefix) {
  if (!node.IsMap()) return "";
  std::set<std::string> seen;
  for (const auto& entry : node) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    if (!seen.insert(key).second) return prefix + key;
    if (std::string inner = duplicate_key(entry.second, prefix + key + "."); !inner.empty()) return inner;
  }
  return "";
}

}  // namespace

std::string config_key_of(const ConfigTokens& config, const std::string& option) {
  for (std::size_t i = 0; i < config.tokens.size(); ++i) {
    const std::string& token = config.tokens[i];
    if (token == option || token.rfind(option + "=", 0) == 0) return config.keys[i];
  }
  return "";
}

ConfigTokens config_file_tokens(const std::string& path, const std::function<bool(const std::string&)>& given) {
  ConfigTokens out;
  std::string why;
  const auto text = read_text_file(path, &why);
  if (!text) {
    out.error = "--config-file " + printable(path) + ": " + why;
    return out;
  }
  try {
    const std::vector<YAML::Node> documents = YAML::LoadAll(*text);
    if (documents.size() > 1) {
      out.error = "--config-file " + printable(path) + ": holds " + std::to_string(documents.size()) +
                  " YAML documents; one is read, so one may be given";
      return out;
    }
    const YAML::Node root = documents.empty() ? YAML::Node() : documents.front();
    if (root && !root.IsNull() && !root.IsMap()) {
      out.error = "--config-file " + printable(path) + ": not a YAML mapping of settings";
      return out;
    }
    if (const std::string key = duplicate_key(root, ""); !key.empty()) {
      out.error = "--config-file " + printable(path) + ": the key " + quoted(key) + " is given twice";
      return out;
    }
    read_config(root, out, given);
  } catch (const YAML::Exception& e) {
    out.error = std::string(e.what());
  }
  if (!out.error.empty() && out.error.rfind("--config-file", 0) != 0) {
    out.error = "--config-file " + printable(path) + ": " + printable(out.error);
  }
  for (std::string& note : out.notes) note = "--config-file " + printable(path) + ": " + note;
  return out;
}

}  // namespace trainrun::cli
