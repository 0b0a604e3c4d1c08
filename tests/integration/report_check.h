// Checks a JSON job report (trainrun --report) the way a CI script would:
// validated against cli/report/report.schema.json by Debian's
// python3-jsonschema (REPORT_SCHEMA names the schema), then parsed for
// values. Header-only; for tests that link doctest and nlohmann-json.
#pragma once

#include <doctest/doctest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/process_runner.h"

namespace trainrun::test {

inline constexpr const char* kSchemaValidator =
    "import json, sys, jsonschema\n"
    "schema = json.load(open(sys.argv[1]))\n"
    "jsonschema.Draft202012Validator.check_schema(schema)\n"
    "jsonschema.Draft202012Validator(schema).validate(json.load(open(sys.argv[2])))\n";

// A report path in a fresh directory under /tmp, removed with what trainrun
// left there.
struct TempReport {
  std::string dir;
  std::string path;
  TempReport() {
    char name[] = "/tmp/trainrun-report-XXXXXX";
    REQUIRE(::mkdtemp(name));
    dir = name;
    path = dir + "/report.json";
  }
  ~TempReport() {
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
  }
  TempReport(const TempReport&) = delete;
  TempReport& operator=(const TempReport&) = delete;
};

// Why the validator cannot run here (for a skip), or "".
inline std::string schema_validator_missing() {
  const ProcessResult r = run_process({"/usr/bin/python3", "-c", "import jsonschema"});
  return r.exit_code == 0 ? "" : "/usr/bin/python3 lacks jsonschema (Debian: python3-jsonschema)";
}

// The report at `path`, checked against the schema (a failed check fails
// the test case and returns null).
inline nlohmann::json checked_report(const std::string& path) {
  const ProcessResult r =
      run_process({"/usr/bin/python3", "-c", kSchemaValidator, program_path("REPORT_SCHEMA"), path});
  INFO("report ", path, ":\n", read_file(path), "\nvalidator: ", r.err);
  CHECK(r.exit_code == 0);
  if (r.exit_code != 0) return nullptr;
  return nlohmann::json::parse(read_file(path));
}

}  // namespace trainrun::test
