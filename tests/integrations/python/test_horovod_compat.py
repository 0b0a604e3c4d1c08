"""Horovod parity outside a job (issue 25): HorovodRunner's signature, the
HOROVOD_* settings honoured by real jobs (ours winning), the names and
modules a Horovod user's code imports."""
import os
import subprocess
import sys

import pytest

import trainrun
from trainrun.runner import find_trainrun


def hello():
    print('a line from the rank')
    return 'done'


def test_runner_takes_horovodrunners_driver_log_verbosity(capfd):
    assert trainrun.Runner(2, driver_log_verbosity='all').run(hello) == 'done'
    assert 'a line from the rank' in capfd.readouterr().out
    assert trainrun.Runner(np=-2, driver_log_verbosity='log_callback_only').run(hello) == 'done'
    assert 'a line from the rank' not in capfd.readouterr().out
    with pytest.raises(ValueError, match="driver_log_verbosity must be one of all, log_callback_only, not 'loud'"):
        trainrun.Runner(2, driver_log_verbosity='loud')


JOB = """
import torch, trainrun.torch as hvd
hvd.init()
for i in range(3):
    hvd.allreduce(torch.ones(4), name=f'step.{i}')
hvd.shutdown()
"""


@pytest.fixture(params=[2, 3], ids=lambda n: f'np{n}')
def ranks(request):
    return request.param


def run_job(tmp_path, env, ranks=2):
    script = tmp_path / 'job.py'
    script.write_text(JOB)
    full = {k: v for k, v in os.environ.items() if not k.startswith(('HOROVOD_', 'TRAINRUN_TIMELINE'))}
    full.update(env)
    return subprocess.run([find_trainrun(), '--local', '-np', str(ranks), sys.executable, str(script)], env=full,
                          capture_output=True, text=True, timeout=300)


def test_horovod_timeline_is_written_and_ours_wins(tmp_path, ranks):
    horovods = tmp_path / 'horovod.json'
    done = run_job(tmp_path, {'HOROVOD_TIMELINE': str(horovods)}, ranks)
    assert done.returncode == 0, done.stderr
    assert 'step.0' in horovods.read_text()

    ours = tmp_path / 'ours.json'
    horovods.unlink()
    done = run_job(tmp_path, {'HOROVOD_TIMELINE': str(horovods), 'TRAINRUN_TIMELINE': str(ours)}, ranks)
    assert done.returncode == 0, done.stderr
    assert ours.exists() and not horovods.exists()


def test_horovod_timeline_mark_cycles_marks_cycles(tmp_path, ranks):
    path = tmp_path / 'cycles.json'
    done = run_job(tmp_path, {'HOROVOD_TIMELINE': str(path), 'HOROVOD_TIMELINE_MARK_CYCLES': '1'}, ranks)
    assert done.returncode == 0, done.stderr
    assert '"CYCLE_START"' in path.read_text()
    plain = tmp_path / 'plain.json'
    assert run_job(tmp_path, {'HOROVOD_TIMELINE': str(plain)}, ranks).returncode == 0
    assert 'step.0' in plain.read_text() and 'CYCLE_START' not in plain.read_text()


def test_horovod_timeline_dynamic_writes_no_file(tmp_path, ranks):
    done = run_job(tmp_path, {'HOROVOD_TIMELINE': 'DYNAMIC'}, ranks)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / 'DYNAMIC').exists() and not os.path.exists('DYNAMIC')


def test_a_bad_horovod_setting_is_an_error_naming_it(tmp_path, ranks):
    done = run_job(tmp_path, {'HOROVOD_CYCLE_TIME': 'soon'}, ranks)
    assert done.returncode != 0
    assert 'soon' in done.stderr


def test_horovods_module_names_exist():
    import trainrun.torch as hvd
    from trainrun.torch import exceptions, mpi_ops
    assert hvd.Adasum == mpi_ops.Adasum
    assert exceptions.HorovodInternalError is hvd.HorovodInternalError
    for name in ('grouped_allgather', 'grouped_allgather_async', 'grouped_reducescatter',
                 'grouped_reducescatter_async', 'sparse_allreduce_async', 'SyncBatchNorm', 'ccl_built', 'ddl_built'):
        assert hasattr(hvd, name), name
