"""trainrun.run: horovod.run's contract (every rank's return value, by rank)
through the real launcher, its arguments as trainrun's flags, and the
arguments it refuses in one line."""
import sys

import pytest

import trainrun


def rank_and_total(scale, offset=0):
    import torch

    import trainrun.torch as hvd
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum).item()
    return (hvd.rank(), hvd.size(), total * scale + offset)


def fail_on_rank_one():
    import trainrun.torch as hvd
    hvd.init()
    if hvd.rank() == 1:
        raise ValueError('no data on this rank')
    return 'fine'


def test_returns_every_ranks_value_by_rank():
    assert trainrun.run(rank_and_total, args=(10,), kwargs={'offset': 1}, np=3) == [
        (0, 3, 31.0), (1, 3, 31.0), (2, 3, 31.0)]
    assert trainrun.run(lambda: 'one', num_proc=1) == ['one']


def test_a_ranks_exception_names_the_rank():
    with pytest.raises(trainrun.RunnerError, match='rank 1 raised ValueError: no data on this rank') as error:
        trainrun.run(fail_on_rank_one, np=2)
    assert error.value.rank == 1


def test_horovod_run_arguments_become_trainrun_flags(monkeypatch):
    calls = []
    monkeypatch.setattr(trainrun.runner.Runner, '_run', lambda self, main, kwargs, every_rank: calls.append(
        (self._command(), main(), every_rank)) or ['done'])
    monkeypatch.setenv('TRAINRUN_BIN', sys.executable)  # any executable: only the command line is checked
    assert trainrun.run(max, args=(3, 4), np=8, hosts='h1:4,h2:4', slots=4, start_timeout=60, ssh_port=2222,
                        ssh_identity_file='/k', disable_cache=True, output_filename='/o', verbose=True,
                        use_gloo=True, network_interfaces=['eth0', 'eth1'], executable='/usr/bin/python3') == ['done']
    command, value, every_rank = calls[-1]
    assert value == 4 and every_rank
    assert command[1:5] == ['-H', 'h1:4,h2:4', '-np', '8']
    flags = command[command.index('-x', 5):]
    for expected in (['--slots-per-host', '4'], ['--start-timeout', '60'], ['-p', '2222'], ['-i', '/k'],
                     ['--output-filename', '/o'], ['--network-interfaces', 'eth0,eth1']):
        position = flags.index(expected[0])
        assert flags[position:position + 2] == expected
    for flag in ('--disable-cache', '--verbose', '--gloo'):
        assert flag in flags
    assert command[-3:] == ['/usr/bin/python3', '-m', 'trainrun._rank_main']
    trainrun.run(max, args=(1, 2), num_proc=2, hostfile='/etc/hosts.trainrun', use_mpi=True, mpi_args='-v')
    command = calls[-1][0]
    assert command[1:5] == ['--hostfile', '/etc/hosts.trainrun', '-np', '2']
    assert '--mpi' in command and command[command.index('--mpi-args') + 1] == '-v'
    trainrun.run(max, args=(1, 2), np=2)
    assert calls[-1][0][1:4] == ['--local', '-np', '2']


@pytest.mark.parametrize('arguments, message', [
    (dict(hosts='h1:2', hostfile='/f'), 'Argument hosts and hostfile only allow one provided.'),
    (dict(use_gloo=True, use_mpi=True), 'Argument use_gloo and use_mpi only allow one set True.'),
    (dict(np=0), 'num_proc must be a positive number of ranks, not 0'),
    (dict(min_np=1, host_discovery_script='./discover.sh'),
     'trainrun.run does not run elastic jobs (min_num_proc, host_discovery_script given): start them with '
     'trainrun --host-discovery-script SCRIPT and trainrun.elastic'),
])
def test_refused_arguments_say_why(arguments, message):
    with pytest.raises(ValueError) as error:
        trainrun.run(max, **arguments)
    assert str(error.value) == message


HOROVOD_STYLE_SCRIPT = '''
import argparse

import torch

import trainrun as horovod
import trainrun.torch as hvd

parser = argparse.ArgumentParser()
parser.add_argument('--num-proc', type=int)
parser.add_argument('--hosts')
parser.add_argument('--communication')


def main(args):
    hvd.init()
    total = hvd.allreduce(torch.tensor([hvd.rank() + 1.0]), op=hvd.Sum).item()
    print(f'rank {hvd.rank()} of {hvd.size()}: total {total}', flush=True)
    return total


if __name__ == '__main__':
    args = parser.parse_args()
    results = horovod.run(main, args=(args,), np=args.num_proc, hosts=args.hosts,
                          use_gloo=args.communication == 'gloo', use_mpi=args.communication == 'mpi')
    print('results', results)
'''


def test_a_horovod_script_that_calls_horovod_run_runs_with_its_imports_changed(tmp_path):
    """The shape of Horovod's examples/pytorch/pytorch_mnist.py: main defined
    in the script itself (sent by value), run through horovod.run."""
    import subprocess
    script = tmp_path / 'train.py'
    script.write_text(HOROVOD_STYLE_SCRIPT)
    job = subprocess.run([sys.executable, str(script), '--num-proc', '2', '--communication', 'gloo'],
                         capture_output=True, text=True, timeout=120)
    assert job.returncode == 0, job.stderr
    lines = job.stdout.splitlines()
    assert 'results [3.0, 3.0]' in lines
    assert sorted(line for line in lines if 'total' in line) == ['[0] rank 0 of 2: total 3.0',
                                                                  '[1] rank 1 of 2: total 3.0']
