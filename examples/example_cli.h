// How every example parses its command line with CLI11, as trainrun does:
// `--help` prints the usage (exit status 0), anything wrong is one line on
// stderr naming the option, then exit status 2. Header-only, so that a
// copied example needs only CLI11.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>

namespace examples {

// True when the program should go on; false with `exit_code` set (0 after
// --help, 2 after an error, printed as "PROGRAM: error: ... (see PROGRAM --help)").
inline bool parse_cli(CLI::App& app, int argc, char** argv, int& exit_code) {
  try {
    app.parse(argc, argv);
    return true;
  } catch (const CLI::CallForHelp& e) {
    exit_code = app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string program = app.get_name();
    std::fprintf(stderr, "%s: error: %s (see %s --help)\n", program.c_str(), e.what(), program.c_str());
    exit_code = 2;
  }
  return false;
}

}  // namespace examples
