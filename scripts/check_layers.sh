#!/usr/bin/env bash
# The layers depend one way: every #include "dir/x.h" in the library and
# the launcher must point at its own layer or one below it. Prints each
# offending line as `file:line: X includes Y (layer A may not depend on
# layer B)` and exits 1; also fails on an import cycle in the Python
# package (integrations/python/trainrun). Usage: scripts/check_layers.sh [SOURCE_ROOT]
#
# Library layers, bottom to top (meson.build builds one static library per
# layer and links each with only the layers below it):
#
#   layer        folder                    may include
#   vocabulary   vocabulary/               vocabulary
#   os           os/                       vocabulary
#   contract     contract/                 os, vocabulary
#   rendezvous   rendezvous/               contract, os, vocabulary
#   backends     backends/                 rendezvous, contract, os, vocabulary
#   lib          lib/ (api/, engine/,      backends, rendezvous, contract, os, vocabulary
#                elastic/)
#   integrations integrations/ (libtorch/, lib and everything below it
#                python/, torch_distributed/)
#   cli          cli/                      rendezvous, contract, os, vocabulary; never backends,
#                                          lib or integrations
#                                          (one exception: cli/main.cc includes backends/backend_versions.h
#                                          for `trainrun --version`)
#
# The vocabulary is trainrun/error.h, types.h, half.h and version.h
# (vocabulary/trainrun; vocabulary/names.cc implements them); the other
# public headers (lib/include/trainrun: communicator.h, engine.h, elastic.h,
# sampler.h, trainrun.h, torch.h) are the lib layer's API and include only
# <trainrun/*.h>.
#
# Inside cli, folders bottom to top; each may include its own and lower ones:
#
#   process < plan < output < report < agent < ssh < tree < job < mode < srun < elastic < node < mpirun < cli/*.cc
#
# (tree: a tree of agents for large multi-host jobs; mode: the launch-mode interface, which srun, node and
# mpirun implement; node: one trainrun per node. cli/*.cc:
# main.cc, launch.cc, doctor.cc: the commands, which use every folder, and
# choose_launch_mode.cc, which knows every mode.)
set -uo pipefail
cd "${1:-$(dirname "$0")/..}" || exit 2

library_layers=(vocabulary os contract rendezvous backends lib integrations cli)
cli_layers=(process plan output report agent ssh tree job mode srun elastic node mpirun top)

# Each helper sets REPLY rather than printing, so that the loop below forks
# nothing per #include line (the check reads ~2,000 of them).
declare -A library_rank cli_rank
for i in "${!library_layers[@]}"; do library_rank[${library_layers[i]}]=$i; done
for i in "${!cli_layers[@]}"; do cli_rank[${cli_layers[i]}]=$i; done

layer_of_file() {
  case $1 in
    vocabulary/*) REPLY=vocabulary ;;
    os/*) REPLY=os ;;
    contract/*) REPLY=contract ;; rendezvous/*) REPLY=rendezvous ;; backends/*) REPLY=backends ;;
    lib/*) REPLY=lib ;; integrations/*) REPLY=integrations ;; cli/*) REPLY=cli ;;
    *) REPLY= ;;
  esac
}

layer_of_include() {
  case $1 in
    trainrun/error.h|trainrun/types.h|trainrun/half.h|trainrun/version.h) REPLY=vocabulary ;;
    trainrun/*) REPLY=lib ;;
    *) layer_of_file "$1" ;;
  esac
}

cli_layer_of() {  # cli/<folder>/x.h -> folder; cli/x.cc -> top
  local rest=${1#cli/}
  [[ $rest == */* ]] && REPLY=${rest%%/*} || REPLY=top
}

bad=0
offend() { echo "$1: $2 includes $3 ($4)"; bad=1; }

include_line='^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)"'
while IFS= read -r file; do
  layer_of_file "$file"; from=$REPLY
  [[ -n $from ]] || continue
  while IFS=: read -r line text; do
    [[ $text =~ $include_line ]] || continue
    target=${BASH_REMATCH[1]}
    layer_of_include "$target"; to=$REPLY
    [[ -n $to ]] || continue  # trainrun_config.h, a sibling, a third-party header
    if [[ $file == lib/include/trainrun/* ]]; then
      [[ $target == trainrun/* ]] || offend "$file:$line" "$file" "$target" "a public header may include only <trainrun/*.h>"
      continue
    fi
    if [[ $from == cli && ( $to == backends || $to == lib || $to == integrations ) ]]; then
      [[ $file == cli/main.cc && $target == backends/backend_versions.h ]] && continue
      offend "$file:$line" "$file" "$target" "layer cli may not depend on layer $to"
    elif ((library_rank[$to] > library_rank[$from])); then
      offend "$file:$line" "$file" "$target" "layer $from may not depend on layer $to"
    elif [[ $from == cli && $to == cli ]]; then
      cli_layer_of "$file"; a=$REPLY
      cli_layer_of "$target"; b=$REPLY
      if ((cli_rank[$b] > cli_rank[$a])); then
        offend "$file:$line" "$file" "$target" "cli/$a may not depend on cli/$b"
      fi
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file")
done < <(git ls-files 'vocabulary/*' 'os/*' 'lib/*' 'integrations/*' 'contract/*' 'rendezvous/*' 'backends/*' 'cli/*' 2>/dev/null | grep -E '\.(h|cc|h\.in)$' ||
         find vocabulary os lib integrations contract rendezvous backends cli -name '*.h' -o -name '*.cc' -o -name '*.h.in')

# The Python package: module -> the trainrun modules it imports (anywhere in
# it, function bodies included); a cycle is printed as a -> b -> a. A module
# that injects names at run time (globals()[...] = ...) would hide a cycle
# from this graph: it fails too.
python3 - integrations/python <<'EOF' || bad=1
import ast, pathlib, sys
root = pathlib.Path(sys.argv[1])
modules = {}
for path in root.rglob('*.py'):
    parts = path.relative_to(root).with_suffix('').parts
    name = '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)
    modules[name] = path
graph = {}
for name, path in modules.items():
    package = name if path.name == '__init__.py' else name.rpartition('.')[0]
    edges = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                base = '.'.join(package.split('.')[:len(package.split('.')) - node.level + 1] + ([base] if base else []))
            targets = [base + '.' + a.name if base + '.' + a.name in modules else base for a in node.names]
        else:
            continue
        # Not the packages above this module: Python imports them first anyway.
        edges |= {t for t in targets if t in modules and t != name and not name.startswith(t + '.')}
    graph[name] = edges
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        injected = (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Call) and getattr(node.value.func, 'id', '') == 'globals')
        if injected:
            print(f'{path}:{node.lineno}: a name injected with globals()[...] = hides an import from the cycle check')
            sys.exit(1)
state = {}
def visit(name, stack):
    state[name] = 'open'
    for nxt in sorted(graph[name]):
        if state.get(nxt) == 'open':
            cycle = stack[stack.index(nxt):] + [name, nxt]
            print(f'{modules[name]}: import cycle ' + ' -> '.join(cycle) + ' (a module may not import one that imports it)')
            return False
        if nxt not in state and not visit(nxt, stack + [name]):
            return False
    state[name] = 'done'
    return True
sys.exit(0 if all(visit(n, []) for n in sorted(graph) if n not in state) else 1)
EOF

exit $bad
