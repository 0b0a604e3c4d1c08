"""A build tree's trainrun gives its Python ranks that build's package: a
user who runs `./build/trainrun -np 2 /usr/bin/python3 train.py` without
setting PYTHONPATH imports trainrun; a PYTHONPATH the user forwards with -x
stands as given. Real jobs of the real launcher, 2 ranks."""
import os
import subprocess
import sys

import pytest

TRAINRUN = os.environ.get('TRAINRUN_BIN', '')
PROGRAM = 'import os, trainrun; print("from", os.path.dirname(os.path.dirname(trainrun.__file__)))'


def run(*args, env_pythonpath=None):
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    if env_pythonpath is not None:
        env['PYTHONPATH'] = env_pythonpath
    return subprocess.run([TRAINRUN, '--local', '-np', '2', *args], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(autouse=True)
def needs_the_launcher():
    if not os.path.isfile(TRAINRUN):
        pytest.skip('TRAINRUN_BIN is not set')


def test_python_ranks_import_the_build_trees_package_without_pythonpath():
    package = os.path.join(os.path.dirname(TRAINRUN), 'integrations', 'python')
    job = run(sys.executable, '-c', PROGRAM)
    assert job.returncode == 0, job.stderr
    assert sorted(job.stdout.splitlines()) == [f'[0] from {package}', f'[1] from {package}']


def test_the_launchers_pythonpath_follows_the_package(tmp_path):
    (tmp_path / 'helper_module.py').write_text('WHERE = "mine"\n')
    job = run(sys.executable, '-c', 'import trainrun, helper_module; print(helper_module.WHERE)',
              env_pythonpath=str(tmp_path))
    assert job.returncode == 0, job.stderr
    assert sorted(job.stdout.splitlines()) == ['[0] mine', '[1] mine']


def test_a_pythonpath_the_user_forwards_stands_as_given(tmp_path):
    job = run('-x', f'PYTHONPATH={tmp_path}', sys.executable, '-c', PROGRAM)
    assert job.returncode != 0
    assert "ModuleNotFoundError: No module named 'trainrun'" in job.stderr
