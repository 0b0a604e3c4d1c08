"""trainrun.Runner(hosts=...) over real SSH: run by tests/integration's
with_ssh_hosts, which makes four network-namespace hosts (h1..h4) with their
own sshd and runs this file as their launcher. Databricks' HorovodRunner
users run on a cluster, not one box."""
import os
import socket

import pytest

import trainrun

# The ranks import this module too (main travels by reference): no skip at import.
pytestmark = pytest.mark.skipif('SSH_HOSTS_LAUNCHER_ADDRESS' not in os.environ,
                                reason='run by with_ssh_hosts (meson test python-runner-ssh)')
DRIVER = os.environ.get('SSH_HOSTS_LAUNCHER_ADDRESS')


def where_and_sum(offset):
    import torch

    import trainrun.torch as hvd
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum).item()
    return {'hosts': hvd.allgather_object(socket.gethostname()), 'total': total + offset}


def fail_on_h2():
    import trainrun.torch as hvd
    hvd.init()
    if socket.gethostname() == 'h2':
        raise ValueError('no data on h2')
    hvd.barrier()


def test_runner_runs_main_on_every_host_and_returns_rank_zeros_value():
    result = trainrun.Runner(np=3, hosts='h1:1,h2:1,h3:1', driver_address=DRIVER).run(where_and_sum, offset=100)
    assert result == {'hosts': ['h1', 'h2', 'h3'], 'total': 106.0}


def test_a_remote_ranks_exception_comes_back_naming_its_rank():
    with pytest.raises(trainrun.RunnerError) as raised:
        trainrun.Runner(np=2, hosts='h1:1,h2:1', driver_address=DRIVER,
                        driver_log_verbosity='log_callback_only').run(fail_on_h2)
    assert raised.value.rank == 1 and 'no data on h2' in str(raised.value)
