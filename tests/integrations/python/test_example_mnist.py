"""examples/pytorch/mnist.py trains to >= 95% held-out accuracy, under the
launcher and through trainrun.Runner (needs data/mnist/mnist.bin)."""
import os
import re
import subprocess
import sys

import pytest

from trainrun.runner import find_trainrun

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, 'examples', 'pytorch', 'mnist.py')
DATA = os.path.join(ROOT, 'data', 'mnist', 'mnist.bin')

pytestmark = pytest.mark.skipif(not os.path.exists(DATA),
                                reason=f'{DATA} missing: run scripts/setup.sh and scripts/build.sh')


def run(command):
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))
    assert done.returncode == 0, done.stdout
    return done.stdout


def test_under_the_launcher(tmp_path):
    checkpoint = tmp_path / 'mnist.pt'
    out = run([find_trainrun(), '--local', '-np', '2', sys.executable, EXAMPLE, '--checkpoint', str(checkpoint)])
    accuracy = float(re.search(r'\[0\] accuracy ([0-9.]+)', out).group(1))
    assert accuracy >= 0.95, out
    assert checkpoint.exists()


def test_through_runner():
    out = run([sys.executable, EXAMPLE, '--runner', '-2', '--epochs', '2'])
    result = re.search(r"Runner: rank 0 returned \{'loss': [0-9.]+, 'accuracy': ([0-9.]+)\}", out)
    assert result and float(result.group(1)) >= 0.95, out
