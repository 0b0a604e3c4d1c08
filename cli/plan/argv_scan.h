// The option part of trainrun's argv, checked before CLI11 sees it. CLI11
// reads "-hostfile" as the flag cluster "-h -o -s ...", i.e. --help, so
// mpirun's single-dash long spellings (-np, -hostfile, -host, -cb, ...)
// become their double-dash forms here, and every token that names no
// option is refused with one line (and a "did you mean"). Everything from
// the program name (or "--") on is the program's and is never touched. An
// option with several values ("--blacklist-cooldown-range MIN MAX") becomes
// "--name=MIN,MAX" (its delimiter between them), so that CLI11 cannot take
// the program's words as more.
// Pure; no I/O.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace trainrun::cli {

// What the scan knows of the options: each name, and how many values it
// takes. The help is not among them: only "-h" and "--help" ask for it.
struct OptionNames {
  std::map<std::string, int> long_names;  // "hostfile" -> 1, "blacklist-cooldown-range" -> 2
  std::map<char, bool> short_names;       // 'H' -> takes a value
  // An option with several values gets them as one "--name=A<d>B", d its
  // delimiter here (default ','): "mca" -> '\x1f', as its values may hold commas.
  std::map<std::string, char> delimiters;
};

struct ArgvScan {
  std::vector<std::string> args;  // rewritten (valid when error is empty)
  std::string error;              // one line, without "trainrun: error: "
  std::size_t error_at = 0;       // with an error: args[0, error_at) are well-formed options
};

ArgvScan scan_options(const std::vector<std::string>& args, const OptionNames& names);

// The known long name nearest to `name` (edit distance), or "" when none
// is close enough to be a likely typo.
std::string nearest_name(const std::string& name, const OptionNames& names);

}  // namespace trainrun::cli
