"""One trainrun per node, as Kubeflow's PyTorchJob and `srun` per node start
it: three network-namespace "pods" (h1..h3, each its hostname and
/etc/hosts; no SSH), each running `trainrun --nnodes 3 --node-rank I
--master-addr h1 --nproc-per-node 2 ...` itself. A DDP job reaches the
parameters trainrun's own launcher reaches on the same hosts (and Gloo's
under the same per-node launch, Gloo's anywhere); a Horovod job
(trainrun.torch) trains and agrees; the job's output is node 0's, every node
exits with the job's status and nothing is left. Run by tests/integration's
with_ssh_hosts (meson test python-runner-ssh)."""
import os
import re
import subprocess
import sys
import uuid

import pytest

pytestmark = pytest.mark.skipif('SSH_HOSTS_ETC_HOSTS' not in os.environ,
                                reason='run by with_ssh_hosts (meson test python-runner-ssh)')

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from job_support import environment, free_port, processes_with, run  # noqa: E402

DDP_JOB = os.path.join(os.path.dirname(HERE), 'torch_launchers', 'ddp_job.py')
DIGEST = re.compile(r'rank (\d+) of 6 params ([0-9a-f]{16})')
HOROVOD_JOB = '''
import sys
import torch
import trainrun.torch as hvd  # was: import horovod.torch as hvd

hvd.init()
torch.manual_seed(0)
model = torch.nn.Linear(8, 2)
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1 * hvd.size()),
                                     named_parameters=model.named_parameters(), op=hvd.Average)
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
generator = torch.Generator().manual_seed(hvd.rank())
for _ in range(3):
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(torch.randn(4, 8, generator=generator)), torch.zeros(4, 2)).backward()
    optimizer.step()
weights = hvd.allgather(model.weight.detach().reshape(1, -1))
same = all(torch.equal(weights[0], w) for w in weights)
print(f"rank {hvd.rank()} of {hvd.size()} local {hvd.local_rank()} of {hvd.local_size()}: same weights {same}")
sys.exit(0 if same else 1)
'''


def pod(host, argv):
    """`argv` on host hN as a scheduler's pod runs it: its netns, hostname and /etc/hosts."""
    namespaces = os.environ['SSH_HOSTS_NETNS'].split(',')
    return ['ip', 'netns', 'exec', namespaces[host - 1], 'unshare', '--mount', '--uts', '/bin/sh', '-c',
            'mount --bind "$1" /etc/hosts && hostname "$2" && shift 2 && exec "$@"', 'sh',
            os.environ['SSH_HOSTS_ETC_HOSTS'], f'h{host}'] + argv


def on_three_pods(program, tag, cwd):
    """trainrun on h1..h3, two ranks each; h1 is node 0. Exit codes and outputs, by node."""
    nodes = []
    for node in (2, 1, 0):  # a scheduler starts them in any order
        argv = [os.environ['TRAINRUN_BIN'], '--nnodes', '3', '--node-rank', str(node), '--master-addr', 'h1',
                '--master-port', '29500', '--nproc-per-node', '2'] + program
        nodes.insert(0, subprocess.Popen(pod(node + 1, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True, cwd=cwd, env=environment(TRAINRUN_TEST_TAG=tag)))
    outputs = [node.communicate(timeout=300) for node in nodes]
    return [node.returncode for node in nodes], outputs


def digests(output):
    found = set(DIGEST.findall(output))
    assert len(found) == 6 and len({d for _, d in found}) == 1, output  # every rank holds the same parameters
    return found


def test_ddp_on_three_pods_reaches_the_parameters_of_trainruns_own_launcher_and_gloos(tmp_path):
    tag = f'trainrun-test-{uuid.uuid4().hex}'
    codes, outputs = on_three_pods([sys.executable, DDP_JOB, '--tag', tag], tag, tmp_path)
    assert codes == [0, 0, 0], outputs
    assert outputs[1][0] == '' and outputs[2][0] == '', outputs  # the job's output is node 0's
    # The same hosts and ranks from one launcher over SSH: the same bits
    # (the two-level allreduce adds in the same order).
    launched = run([os.environ['TRAINRUN_BIN'], '-H', 'h1:2,h2:2,h3:2', sys.executable, DDP_JOB, '--tag', tag],
                   cwd=tmp_path, env=environment())
    assert launched.returncode == 0, launched.stdout
    assert digests(outputs[0][0]) == digests(launched.stdout)
    # Gloo itself under the per-node launch (torch's env:// from trainrun's
    # MASTER_ADDR and MASTER_PORT) adds as Gloo does anywhere.
    reference = run([sys.executable, DDP_JOB, '--backend', 'gloo', '--spawn', '6', '--init',
                     f'tcp://127.0.0.1:{free_port()}'], env=environment())
    codes, gloo = on_three_pods([sys.executable, DDP_JOB, '--backend', 'gloo', '--tag', tag], tag, tmp_path)
    assert codes == [0, 0, 0], gloo
    assert digests(gloo[0][0]) == digests(reference.stdout)
    assert processes_with(tag) == []


def test_a_horovod_job_on_three_pods_trains_in_step(tmp_path):
    script = tmp_path / 'hvd_job.py'
    script.write_text(HOROVOD_JOB)
    tag = f'trainrun-test-{uuid.uuid4().hex}'
    codes, outputs = on_three_pods([sys.executable, str(script)], tag, tmp_path)
    assert codes == [0, 0, 0], outputs
    for rank in range(6):
        assert f'rank {rank} of 6 local {rank % 2} of 2: same weights True' in outputs[0][0], outputs
    assert processes_with(tag) == []
