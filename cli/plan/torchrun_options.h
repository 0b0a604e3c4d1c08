// torchrun's spellings (torch.distributed.run, 1.13 and 2.x, in both their
// '-' and '_' forms): each sets trainrun's own option, is accepted with a
// note (Options::notes) saying what trainrun does instead, or is refused
// with one line naming what to use. docs/running-jobs.md "Coming from
// mpirun / horovodrun / torchrun" has the table. Called from
// cli/plan/compat_options.cc while the app is built.
#pragma once

#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace trainrun::cli {

struct Options;

void add_torchrun(CLI::App& app, Options& o);

// After the parse (cli/plan/options.cc): -m with --no-python is refused;
// otherwise Options::python_run is set and --run-path, --tee and
// --redirects get their notes (which depend on --log-dir). The error's
// text, or "".
std::string finish_torchrun(Options& o);

// Before the elastic checks: --nnodes MIN:MAX with hosts (-H, --hostfile, a
// discovery script) is an elastic job of MIN to MAX hosts' ranks
// (--min-np, --max-np: --nproc-per-node each, default 1), with a note. The
// error's text, or "".
std::string finish_nnodes_range(Options& o);

}  // namespace trainrun::cli
