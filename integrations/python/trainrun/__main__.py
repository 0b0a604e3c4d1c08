"""`python -m trainrun ARGS` runs the trainrun launcher, as `python -m
torch.distributed.run` runs torchrun: the launcher installed with this copy
of the package (a venv's bin/trainrun after pip install), $TRAINRUN_BIN,
or the first trainrun on PATH."""
import os
import sys

from trainrun.runner import find_trainrun


def main():
    try:
        launcher = find_trainrun()
    except FileNotFoundError as e:
        sys.exit(f'trainrun: error: {e}')
    os.execv(launcher, [launcher] + sys.argv[1:])


if __name__ == '__main__':
    main()
