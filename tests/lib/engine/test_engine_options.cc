#include <doctest/doctest.h>

#include <map>
#include <string>

#include "lib/engine/engine_options.h"
#include "trainrun/error.h"

using namespace trainrun;
using namespace trainrun::detail;

namespace {

EngineOptions from(const std::map<std::string, std::string>& vars) {
  return engine_options_from_env([&](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST_CASE("defaults") {
  const auto o = from({});
  CHECK(o.fusion_threshold == 64u << 20);
  CHECK(o.cycle_time.count() == 1.0);
  CHECK(o.cache_capacity == 1024);
  CHECK(o.timeline_path.empty());
  CHECK(o.stall_warning.count() == 60.0);
  CHECK(o.stall_shutdown.count() == 0.0);
}

TEST_CASE("every variable") {
  const auto o = from({{"TRAINRUN_FUSION_THRESHOLD", "0"},
                       {"TRAINRUN_CYCLE_TIME_MS", "2.5"},
                       {"TRAINRUN_CACHE_CAPACITY", "16"},
                       {"TRAINRUN_TIMELINE", "/tmp/t.json"},
                       {"TRAINRUN_STALL_WARNING", "0.5"},
                       {"TRAINRUN_STALL_SHUTDOWN", "30"}});
  CHECK(o.fusion_threshold == 0);
  CHECK(o.cycle_time.count() == 2.5);
  CHECK(o.cache_capacity == 16);
  CHECK(o.timeline_path == "/tmp/t.json");
  CHECK(o.stall_warning.count() == 0.5);
  CHECK(o.stall_shutdown.count() == 30.0);
}

TEST_CASE("bad values name the variable and the value") {
  auto message = [](const char* name, const char* value) {
    try {
      from({{name, value}});
    } catch (const Error& e) {
      CHECK(e.code() == Error::Code::InvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message("TRAINRUN_CYCLE_TIME_MS", "fast") == "TRAINRUN_CYCLE_TIME_MS='fast' is not a number");
  CHECK(message("TRAINRUN_CYCLE_TIME_MS", "0") == "TRAINRUN_CYCLE_TIME_MS='0' is out of range [0.01, 60000]");
  CHECK(message("TRAINRUN_FUSION_THRESHOLD", "64MB") == "TRAINRUN_FUSION_THRESHOLD='64MB' is not an integer");
  CHECK(message("TRAINRUN_CACHE_CAPACITY", "-1") == "TRAINRUN_CACHE_CAPACITY='-1' is out of range [0, 1048576]");
  CHECK(message("TRAINRUN_STALL_SHUTDOWN", "nan") == "TRAINRUN_STALL_SHUTDOWN='nan' is out of range [0, 2.592e+06]");
}

TEST_CASE("Horovod's names are honoured when trainrun's are unset, and ours win") {
  const auto o = from({{"HOROVOD_FUSION_THRESHOLD", "1024"},
                       {"HOROVOD_CYCLE_TIME", "3.5"},
                       {"HOROVOD_CACHE_CAPACITY", "8"},
                       {"HOROVOD_TIMELINE", "/tmp/h.json"},
                       {"HOROVOD_STALL_CHECK_TIME_SECONDS", "7"},
                       {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "9"}});
  CHECK(o.fusion_threshold == 1024);
  CHECK(o.cycle_time.count() == 3.5);
  CHECK(o.cache_capacity == 8);
  CHECK(o.timeline_path == "/tmp/h.json");
  CHECK(o.stall_warning.count() == 7.0);
  CHECK(o.stall_shutdown.count() == 9.0);
  const auto both = from({{"HOROVOD_CYCLE_TIME", "3.5"},
                          {"TRAINRUN_CYCLE_TIME_MS", "2"},
                          {"HOROVOD_TIMELINE", "/tmp/h.json"},
                          {"TRAINRUN_TIMELINE", "/tmp/t.json"}});
  CHECK(both.cycle_time.count() == 2.0);
  CHECK(both.timeline_path == "/tmp/t.json");
}

TEST_CASE("HOROVOD_TIMELINE=DYNAMIC opens no file and HOROVOD_STALL_CHECK_DISABLE=1 silences stall warnings") {
  const auto o = from({{"HOROVOD_TIMELINE", "DYNAMIC"},
                       {"HOROVOD_STALL_CHECK_DISABLE", "1"},
                       {"HOROVOD_STALL_CHECK_TIME_SECONDS", "7"}});
  CHECK(o.timeline_path.empty());
  CHECK(o.stall_warning.count() == 0.0);
}
