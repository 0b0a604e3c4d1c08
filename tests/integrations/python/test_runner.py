"""trainrun.Runner: HorovodRunner's contract, through the real launcher."""
import os
import sys
import tempfile

import pytest

import trainrun


def sum_of_ranks(offset):
    import torch

    import trainrun.torch as hvd
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum).item()
    print(f'rank {hvd.rank()} of {hvd.size()} says hello')
    return {'rank': hvd.rank(), 'size': hvd.size(), 'total': total + offset}


def fail_on_rank_one():
    import trainrun.torch as hvd
    hvd.init()
    if hvd.rank() == 1:
        raise ValueError('no data on this rank')
    return 'fine'


def exit_with(status):
    sys.exit(status)


def test_returns_rank_zeros_value(capfd, tmp_path, monkeypatch):
    private_tmp = tmp_path / 'tmp'
    private_tmp.mkdir()
    monkeypatch.setenv('TMPDIR', str(private_tmp))  # the Runner's and the ranks'
    monkeypatch.setattr(tempfile, 'tempdir', None)
    assert trainrun.Runner(np=2).run(sum_of_ranks, offset=10) == {'rank': 0, 'size': 2, 'total': 11.0}
    out = capfd.readouterr().out
    assert 'rank 0 of 2 says hello' in out and 'rank 1 of 2 says hello' in out
    assert os.listdir(private_tmp) == []  # no file left behind


def test_local_mode_and_closures():
    factor = 7
    assert trainrun.Runner(np=-2).run(lambda x: x * factor, x=6) == 42


def test_exception_names_the_rank_and_carries_its_traceback():
    with pytest.raises(trainrun.RunnerError) as info:
        trainrun.Runner(np=2).run(fail_on_rank_one)
    error = info.value
    assert error.rank == 1
    assert 'rank 1 raised ValueError: no data on this rank' in str(error)
    assert 'fail_on_rank_one' in error.traceback and 'Traceback' in error.traceback
    assert isinstance(error.__cause__, ValueError)


def test_np_zero_is_refused():
    with pytest.raises(ValueError):
        trainrun.Runner(np=0)


def test_sys_exit_zero_is_success_and_nonzero_an_error():
    assert trainrun.Runner(np=-2).run(sys.exit) is None
    with pytest.raises(trainrun.RunnerError, match='rank [01] raised SystemExit: 3'):
        trainrun.Runner(np=-2).run(exit_with, status=3)


def test_np_without_hosts_says_the_ranks_run_here(capsys):
    trainrun.Runner(np=2)
    assert capsys.readouterr().err == ("trainrun.Runner: no hosts given: the 2 rank(s) run on this machine (name them "
                                       "with Runner(np=2, hosts='host1:4,host2:4'); np=-2 asks for this machine "
                                       "without this line)\n")
    trainrun.Runner(np=-2)
    trainrun.Runner(np=2, hosts='h1:2')
    assert capsys.readouterr().err == ''


def test_launcher_command_line(monkeypatch):
    monkeypatch.setenv('TRAINRUN_BIN', sys.executable)  # any executable: only the command line is checked
    hosts = trainrun.Runner(np=8, hosts='h1:4,h2:4', backend='gloo', env={'NCCL_DEBUG': 'INFO'})._command()
    assert hosts[:6] == [sys.executable, '-H', 'h1:4,h2:4', '-np', '8', '--backend']
    for name in ('TRAINRUN_RUNNER_ADDRESS', 'TRAINRUN_RUNNER_KEY', 'PYTHONPATH', 'NCCL_DEBUG'):
        assert hosts[hosts.index(name) - 1] == '-x'
    assert hosts[-3:] == [sys.executable, '-m', 'trainrun._rank_main']
    local = trainrun.Runner(np=-3, hosts='h1:4')._command()  # np < 0: this machine, whatever hosts says
    assert local[1:4] == ['--local', '-np', '3']
