"""torchrun across two hosts with its c10d rendezvous (--rdzv_backend c10d),
each node started over SSH as a cluster's scheduler would, and the backend
"trainrun" built from torch's store: the DDP job reaches Gloo's parameters,
and a rank killed on one host is named on the other within a second. Run by
tests/integration's with_ssh_hosts (meson test python-runner-ssh): h1..h4 are
network-namespace hosts with their own sshd."""
import os
import re
import subprocess
import sys
import uuid

import pytest

pytestmark = pytest.mark.skipif('SSH_HOSTS_LAUNCHER_ADDRESS' not in os.environ,
                                reason='run by with_ssh_hosts (meson test python-runner-ssh)')

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from job_support import environment, free_port, processes_with, run  # noqa: E402

JOB = os.path.join(os.path.dirname(HERE), 'torch_launchers', 'ddp_job.py')
DIGEST = re.compile(r'rank (\d+) of 2 params ([0-9a-f]{16})')


def on_two_hosts(args, tag, tmp_path):
    """torchrun on h1 and h2, one rank each; h1 serves torch's rendezvous."""
    pythonpath = os.pathsep.join(p for p in sys.path if p)
    endpoint = f'h1:{free_port()}'
    nodes = []
    for host in ('h1', 'h2'):
        command = (f'cd {tmp_path} && PYTHONPATH={pythonpath} {sys.executable} -m torch.distributed.run --nnodes 2 '
                   f'--nproc_per_node 1 --rdzv_backend c10d --rdzv_endpoint {endpoint} --rdzv_id {tag} '
                   f'--redirects 1 --tee 1 --log_dir {tmp_path}/logs-{host} {JOB} --tag {tag} {" ".join(args)}')
        nodes.append(subprocess.Popen(['ssh', host, command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, env=environment()))
    outputs = [node.communicate(timeout=300)[0] for node in nodes]
    return [node.returncode for node in nodes], ''.join(outputs)


def test_ddp_under_torchrun_on_two_hosts_reaches_gloo_parameters(tmp_path):
    reference = run([sys.executable, JOB, '--backend', 'gloo', '--spawn', '2', '--init',
                     f'tcp://127.0.0.1:{free_port()}'], env=environment())
    gloo = set(DIGEST.findall(reference.stdout))
    assert len(gloo) == 2 and len({d for _, d in gloo}) == 1, reference.stdout
    tag = f'trainrun-test-{uuid.uuid4().hex}'
    codes, output = on_two_hosts([], tag, tmp_path)
    assert codes == [0, 0], output
    assert set(DIGEST.findall(output)) == gloo, output
    assert processes_with(tag) == []


def test_a_rank_killed_on_one_host_is_named_on_the_other_within_a_second(tmp_path):
    tag = f'trainrun-test-{uuid.uuid4().hex}'
    mark = tmp_path / 'killed_at'
    codes, output = on_two_hosts(['--kill-rank', '1', '--mark', str(mark)], tag, tmp_path)
    assert codes[0] != 0 and codes[1] != 0, output
    failed = re.search(r'rank 0 failed at ([0-9.]+): (.*)', output)
    assert failed, output
    assert re.search(r'rank 0 \(h1\): allreduce: .*rank 1\b', failed.group(2)), output
    assert float(failed.group(1)) - float(mark.read_text()) < 1.0, output
    assert processes_with(tag) == []
