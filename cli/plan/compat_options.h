// mpirun's and horovodrun's spellings of trainrun's options (torchrun's are
// in cli/plan/torchrun_options.h), listed in --help under "Compatibility":
// each sets the Options field of trainrun's own option, or is accepted with
// a note (Options::notes) saying what trainrun does instead. docs/running-jobs.md "Coming from mpirun / horovodrun /
// torchrun" has the table. Called from cli/plan/options.cc while the app is built.
#pragma once

#include <string>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace trainrun::cli {

struct Options;

void add_compat_options(CLI::App& app, Options& o);

// The --help group of every compatibility spelling.
inline constexpr const char* kCompatGroup =
    "Compatibility (mpirun, horovodrun and torchrun spellings; trainrun's own name in brackets)";

// A flag that trainrun accepts with one note (Options::notes) saying what it does instead.
void note_flag(CLI::App& app, Options& o, const char* name, std::string note, const char* help);

// The same for an option with one value of type T (int, double or
// std::string): checked, then unused.
template <typename T>
void note_option(CLI::App& app, Options& o, const char* name, std::string note, const char* help);

// A flag whose meaning is trainrun's default: accepted, nothing to say.
void default_flag(CLI::App& app, const char* name, const char* help);

// trainrun's --map-by, with mpirun's values: slot, node, core, hwthread,
// socket, numa (slot, binding each rank to such a unit), ppr:N:node (N
// ranks on each host, as -npernode N) and ppr:N:socket. In compat_options.cc.
void add_map_by(CLI::App& app, Options& o, const char* group);

// A floating-point option: finite and within [min, max] (CLI::Range alone
// lets nan through: every comparison with nan is false). In options.cc.
CLI::Option* add_float(CLI::App& app, const char* name, double& value, const char* description, double min, double max);

}  // namespace trainrun::cli
