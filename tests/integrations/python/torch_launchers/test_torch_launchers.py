"""init_process_group("trainrun") wherever DDP users launch: mp.spawn with
tcp:// and file://, MASTER_ADDR/RANK/WORLD_SIZE set by hand (what Slurm and
Kubernetes scripts do), torchrun --standalone, and trainrun's own launcher.
Each trains the same DDP job to the parameters Gloo reaches (bit for bit at
two ranks), and a rank killed in the middle is named by the others within a
second. torchrun across two hosts: ssh/test_torchrun_hosts.py."""
import os
import re
import shutil
import subprocess
import sys
import uuid

import pytest

from trainrun.runner import find_trainrun

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from job_support import environment, free_port, processes_with, run  # noqa: E402

pytest.importorskip('trainrun._c10d', reason='trainrun._c10d not built (needs LibTorch and libtorch_python)')

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'ddp_job.py')
DIGEST = re.compile(r'rank (\d+) of (\d+) params ([0-9a-f]{16})')


def digests(output):
    return {int(rank): digest for rank, size, digest in DIGEST.findall(output)}


@pytest.fixture(scope='module')
def gloo_digest():
    """The parameters Gloo reaches at two ranks (its exit status aside: torch's Gloo
    now and then aborts at exit here, pytorch/pytorch#190489)."""
    done = run([sys.executable, JOB, '--backend', 'gloo', '--spawn', '2', '--init',
                f'tcp://127.0.0.1:{free_port()}'], env=environment())
    found = digests(done.stdout)
    assert len(found) == 2 and len(set(found.values())) == 1, done.stdout
    return found[0]


def by_hand(args, tag, np=2):
    """The ranks started one by one with torch's env:// variables, as a Slurm or Kubernetes script does."""
    port = str(free_port())
    ranks = [subprocess.Popen([sys.executable, JOB, '--tag', tag] + args, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              env=environment(MASTER_ADDR='127.0.0.1', MASTER_PORT=port, RANK=str(r),
                                              WORLD_SIZE=str(np), LOCAL_RANK=str(r)))
             for r in range(np)]
    outputs, codes = [], []
    for p in ranks:
        out, _ = p.communicate(timeout=300)
        outputs.append(out)
        codes.append(p.returncode)
    return codes, ''.join(outputs)


def spawn(init):
    def start(args, tag, tmp_path):
        where = init.format(port=free_port(), dir=tmp_path)
        done = run([sys.executable, JOB, '--tag', tag, '--spawn', '2', '--init', where] + args, env=environment())
        return [done.returncode], done.stdout
    return start


def torchrun(args, tag, tmp_path):
    # Debian's torch 1.13 on Python 3.11 cannot parse --redirects 0 (IntFlag
    # iteration skips 0 and 3), its default: stdout goes to files, teed back.
    done = run(['torchrun', '--standalone', '--nproc_per_node', '2', '--redirects', '1', '--tee', '1', '--log_dir',
                str(tmp_path / 'logs'), JOB, '--tag', tag] + args, env=environment(), cwd=tmp_path)
    return [done.returncode], done.stdout


def trainrun(args, tag, tmp_path):
    done = run([find_trainrun(), '--local', '-np', '2', sys.executable, JOB, '--tag', tag] + args, env=environment(),
               cwd=tmp_path)
    return [done.returncode], done.stdout


LAUNCHERS = {
    'mp.spawn-tcp': spawn('tcp://127.0.0.1:{port}'),
    'mp.spawn-file': spawn('file://{dir}/store'),
    'by-hand': lambda args, tag, tmp_path: by_hand(args, tag),
    'torchrun': torchrun,
    'trainrun': trainrun,
}


def needs(name):
    if name == 'torchrun' and shutil.which('torchrun') is None:
        pytest.skip('torchrun not installed (Debian: python3-torch)')


@pytest.mark.parametrize('name', LAUNCHERS)
def test_ddp_reaches_gloo_parameters(name, tmp_path, gloo_digest):
    needs(name)
    tag = f'trainrun-test-{uuid.uuid4().hex}'
    codes, output = LAUNCHERS[name]([], tag, tmp_path)
    assert codes == [0] * len(codes), output
    assert digests(output) == {0: gloo_digest, 1: gloo_digest}, output
    assert processes_with(tag) == []


@pytest.mark.parametrize('name', LAUNCHERS)
def test_a_killed_rank_is_named_within_a_second(name, tmp_path):
    needs(name)
    tag = f'trainrun-test-{uuid.uuid4().hex}'
    mark = tmp_path / 'killed_at'
    codes, output = LAUNCHERS[name](['--kill-rank', '1', '--mark', str(mark)], tag, tmp_path)
    assert all(code != 0 for code in codes), output
    failed = re.search(r'rank 0 failed at ([0-9.]+): (.*)', output)
    assert failed, output
    assert re.search(r'rank 0 \([^)]*\): allreduce: .*rank 1\b', failed.group(2)), output
    assert float(failed.group(1)) - float(mark.read_text()) < 1.0, output
    assert processes_with(tag) == []


@pytest.mark.parametrize('np', [1, 3])
def test_one_and_three_ranks_by_hand_agree(np):
    tag = f'trainrun-test-{uuid.uuid4().hex}'
    codes, output = by_hand([], tag, np=np)
    assert codes == [0] * np, output
    found = digests(output)
    assert sorted(found) == list(range(np)) and len(set(found.values())) == 1, output


HOROVOD_AFTER = '''
import os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
import trainrun.torch.distributed

def main(rank, init):
    dist.init_process_group('trainrun', init_method=init, rank=rank, world_size=2)
    import trainrun.torch as hvd
    hvd.init()
    total = hvd.allreduce(torch.ones(2), op=hvd.Sum)
    line = f'hvd {hvd.rank()} {hvd.size()} {hvd.local_rank()} {hvd.local_size()} {total.tolist()}\\n'
    os.write(1, line.encode())  # one write: the spawned ranks share stdout

if __name__ == '__main__':
    mp.spawn(main, args=(sys.argv[1],), nprocs=2)
'''


def run_spawned(tmp_path, source):
    """`source` as a script whose mp.spawn'd ranks meet at a tcp:// address it is given."""
    script = tmp_path / 'spawned.py'
    script.write_text(source)
    return run([sys.executable, str(script), f'tcp://127.0.0.1:{free_port()}'], env=environment())


def test_horovod_api_after_init_process_group_uses_the_same_world(tmp_path):
    done = run_spawned(tmp_path, HOROVOD_AFTER)
    assert done.returncode == 0, done.stdout
    for r in range(2):
        assert f'hvd {r} 2 {r} 2 [2.0, 2.0]' in done.stdout, done.stdout


HOROVOD_BEFORE = '''
import os, sys, torch.distributed as dist, torch.multiprocessing as mp
import trainrun.torch as hvd, trainrun.torch.distributed

def main(rank, init):
    hvd.init()  # outside any launcher: a world of one
    try:
        dist.init_process_group('trainrun', init_method=init, rank=rank, world_size=2)
    except RuntimeError as e:
        os.write(1, f'failed: {e}\\n'.encode())  # one write: the spawned ranks share stdout

if __name__ == '__main__':
    mp.spawn(main, args=(sys.argv[1],), nprocs=2)
'''


def test_horovod_init_first_outside_a_launcher_conflicts_in_one_line(tmp_path):
    done = run_spawned(tmp_path, HOROVOD_BEFORE)
    for r in range(2):
        assert (f'failed: rank {r}: init: trainrun is already initialized as rank 0 of 1, but torch says rank {r} '
                'of 2: call init_process_group before trainrun\'s own init (hvd.init()), or shut trainrun down '
                'first\n') in done.stdout, done.stdout


RESTARTED = '''
import os, sys, torch, torch.distributed as dist
import trainrun.torch.distributed
dist.init_process_group('trainrun')
t = torch.ones(2)
dist.all_reduce(t)
attempt = os.environ['TORCHELASTIC_RESTART_COUNT']
print(f'attempt {attempt} rank {dist.get_rank()} sum {t.tolist()}', flush=True)
if attempt == '0' and dist.get_rank() == 1:
    sys.exit(5)
'''


def test_torchrun_restarts_every_rank_into_a_new_world(tmp_path):
    """torchrun --max_restarts: the restarted ranks build a new world from the new round's store."""
    needs('torchrun')
    script = tmp_path / 'restarted.py'
    script.write_text(RESTARTED)
    done = run(['torchrun', '--standalone', '--nproc_per_node', '2', '--max_restarts', '1', '--monitor_interval', '1',
                '--redirects', '1', '--tee', '1', '--log_dir', str(tmp_path / 'logs'), str(script)], env=environment(),
               cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    for attempt in (0, 1):
        for r in range(2):
            assert f'attempt {attempt} rank {r} sum [2.0, 2.0]' in done.stdout, done.stdout


SWAPPED = '''
import os, torch.distributed as dist
import trainrun.torch.distributed
try:
    dist.init_process_group('trainrun', rank=1 - int(os.environ['RANK']), world_size=2)
except RuntimeError as e:
    print(f'failed: {e}', flush=True)
'''


def test_under_trainrun_torch_must_agree_with_its_ranks(tmp_path):
    """Under trainrun's launcher the world is trainrun's: a rank torch is told otherwise says so in one line."""
    script = tmp_path / 'swapped.py'
    script.write_text(SWAPPED)
    done = run([find_trainrun(), '--local', '-np', '2', sys.executable, str(script)], env=environment(), cwd=tmp_path)
    for r in range(2):
        assert (f"[{r}] failed: backend trainrun: torch says rank {1 - r} of 2, but trainrun's launcher started this "
                f'process as rank {r} of 2; start the script either with `trainrun -np 2 python3 SCRIPT` (which '
                'sets RANK and WORLD_SIZE) or without trainrun (torchrun, mp.spawn)') in done.stdout, done.stdout
