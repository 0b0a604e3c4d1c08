#!/usr/bin/env python3
"""Builds trainrun._c10d, the torch.distributed backend "trainrun", against
the torch of the Python that runs this script, with that torch's own
compiler flags, pybind11 and ABI (torch.utils.cpp_extension). Meson builds
the module against the torch it finds (Debian 12's 1.13); this is for
another one, e.g. a pip torch 2.x on a GPU machine.

    python3 scripts/build_c10d.py SOURCE_ROOT PACKAGE_DIR

SOURCE_ROOT is a trainrun source tree (integrations/torch_distributed,
integrations/python/core/core_group.h, lib/include, vocabulary); PACKAGE_DIR is the trainrun package
whose _core the module will call: it lands there as _c10d<EXT_SUFFIX>.
Needs a C++17 compiler and ninja. Prints the module's path; exit 1 with
the compiler's words when the build fails.
"""
import glob
import os
import shutil
import sys
import sysconfig
import tempfile


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0] + "\nusage: build_c10d.py SOURCE_ROOT PACKAGE_DIR", file=sys.stderr)
        return 2
    root, package = (os.path.abspath(p) for p in sys.argv[1:])
    from torch.utils import cpp_extension

    sources = sorted(glob.glob(os.path.join(root, "integrations", "torch_distributed", "*.cc")))
    if not sources:
        print(f"build_c10d: no integrations/torch_distributed/*.cc under {root}", file=sys.stderr)
        return 1
    build = tempfile.mkdtemp(prefix="trainrun-c10d-")
    try:
        cpp_extension.load(name="_c10d", sources=sources, build_directory=build,
                           extra_include_paths=[root, os.path.join(root, "lib", "include"), os.path.join(root, "vocabulary")],
                           extra_cflags=["-O2", "-std=c++17"], is_python_module=False, verbose=False)
        target = os.path.join(package, "_c10d" + sysconfig.get_config_var("EXT_SUFFIX"))
        shutil.copy(os.path.join(build, "_c10d.so"), target)
        print(target)
        return 0
    except Exception as e:  # the compiler's output is in the message
        print(f"build_c10d: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(build, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
