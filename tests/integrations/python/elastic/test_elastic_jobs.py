"""hvd.elastic in real elastic jobs: the real trainrun launcher and Python
workers (elastic_worker.py) lose a worker to kill -9 or an error exit, or
gain one through a discovery script, and train on from the last commit
with every sample of every epoch processed and the same parameters on
every rank. Nothing of a job may be left running."""
import os
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest

from job_processes import processes_with
from trainrun.runner import find_trainrun

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = [sys.executable, os.path.join(HERE, 'elastic_worker.py')]
MNIST = [sys.executable, os.path.join(HERE, '..', '..', '..', 'examples', 'pytorch', 'mnist.py')]
MNIST_DATA = os.path.join(HERE, '..', '..', '..', 'data', 'mnist', 'mnist.bin')
SAMPLES = 480


class Job:
    """A trainrun job (of elastic_worker.py unless told) whose processes carry a unique tag."""

    def __init__(self, launcher_args, worker_args=(), timeout=300, program=WORKER):
        self.tag = f'ELASTIC_TEST_TAG={uuid.uuid4().hex}'
        key, value = self.tag.split('=')
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), **{key: value})
        self.timeout = timeout
        self.out_path = f'/tmp/trainrun-elastic-{value}.out'
        self.out_file = open(self.out_path, 'w+')
        self.process = subprocess.Popen([find_trainrun()] + launcher_args + program + list(worker_args),
                                        stdout=self.out_file, stderr=subprocess.STDOUT, env=env, text=True)

    def output(self):
        self.out_file.flush()
        with open(self.out_path) as f:
            return f.read()

    def wait_for(self, pattern, timeout=180):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, self.output()):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        pytest.fail(f'no {pattern!r} in:\n{self.output()}')

    def kill_worker(self, worker):
        pids = processes_with(self.tag, worker)
        assert pids, f'worker {worker} not found'
        os.kill(pids[0], signal.SIGKILL)

    def finish(self):
        try:
            code = self.process.wait(self.timeout)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(30)
            pytest.fail(f'the job did not end in {self.timeout} s:\n{self.output()}')
        finally:
            self.out_file.close()
        out = self.output_at_end()
        left = processes_with(self.tag)
        assert not left, f'processes left: {left}'
        return code, out

    def output_at_end(self):
        with open(self.out_path) as f:
            out = f.read()
        os.unlink(self.out_path)
        return out


def steps(out):
    """Rank 0's (step, size, generation, epoch) lines."""
    return [tuple(int(v) for v in m) for m in re.findall(r'\] step (\d+) size (\d+) gen (\d+) epoch (\d+)', out)]


def check_trained(out, code, size, workers, commit_every=2):
    assert code == 0, out
    assert 'wrong result' not in out
    done = re.findall(r'\[(\d+)\] done step (\d+) size (\d+) params (\w+) resets (\[[^]]*\]) loss ([0-9.e+-]+)', out)
    assert sorted(int(d[0]) for d in done) == sorted(workers), out
    assert len({d[1] for d in done}) == 1, done  # one step counter: the committed one
    assert all(int(d[2]) == size and d[3] == 'agree' for d in done), done
    assert all(float(d[5]) < 1e-2 for d in done), done  # y = x @ [1..8] is learnt
    # Every epoch processed each sample (some twice, from the last commit).
    assert re.findall(r'epoch (\d+) processed (\d+) of (\d+)', out) == \
        [(str(e), str(SAMPLES), str(SAMPLES)) for e in range(3)], out
    seen = steps(out)
    for (s0, *_), (s1, *_) in zip(seen, seen[1:]):
        assert s0 - commit_every <= s1 - 1 <= s0, f'step {s1} after {s0}'
    return seen, done


def test_kill_9_of_a_worker_mid_epoch_the_others_go_on_from_the_last_commit():
    job = Job(['--local', '-np', '4', '--min-np', '2'], ['--sleep-ms', '20'])
    job.wait_for(r'\] step 12 size 4 ')
    job.kill_worker(2)
    code, out = job.finish()
    seen, done = check_trained(out, code, 3, [0, 1, 3])
    assert 'trainrun: elastic: worker 2 (host ' in out and 'was killed by SIGKILL' in out
    assert '; generation 1: 3 rank(s) on 1 host(s)' in out
    assert out.count('joined generation 1 as rank') == 3
    assert {d[4] for d in done} == {'[3]'}  # each survivor's reset callback ran once, at size 3
    assert (seen[0][1], seen[-1][1], seen[-1][2]) == (4, 3, 1)


def test_a_worker_exiting_with_an_error_the_job_goes_on_without_it():
    job = Job(['--local', '-np', '3', '--min-np', '1'], ['--exit-at', '9:1:7'])
    code, out = job.finish()
    check_trained(out, code, 2, [0, 2])
    assert 'trainrun: elastic: worker 1 (host ' in out and 'exited with code 7; generation 1: 2 rank(s)' in out


def test_scale_up_a_new_worker_joins_at_a_commit_and_gets_the_state(tmp_path):
    hosts = tmp_path / 'hosts'
    hosts.write_text('localhost:2\n')
    script = tmp_path / 'discover.sh'
    script.write_text(f'#!/bin/sh\nexec cat {hosts}\n')
    script.chmod(0o755)
    # 100 ms steps: 18 s at size 2, time enough for a loaded machine to start the new worker.
    job = Job(['--host-discovery-script', str(script), '--min-np', '2', '--max-np', '3'], ['--sleep-ms', '100'])
    job.wait_for(r'\] step 10 size 2 ')
    (tmp_path / 'hosts.new').write_text('localhost:3\n')
    os.rename(tmp_path / 'hosts.new', hosts)
    code, out = job.finish()
    seen, done = check_trained(out, code, 3, [0, 1, 2])
    assert 'joined generation 1 as rank' in out
    assert (seen[0][1], seen[-1][1]) == (2, 3)
    # The survivors' reset callbacks ran at size 3; the new worker started in generation 1.
    assert sorted(d[4] for d in done) == ['[3]', '[3]', '[]']


def test_without_elastic_flags_run_is_one_call_and_a_failure_ends_the_job():
    job = Job(['--local', '-np', '2'])
    code, out = job.finish()
    check_trained(out, code, 2, [0, 1])
    assert 'generation' not in out
    # Rank 1 leaves (sys.exit runs its atexit shutdown): the job ends, and
    # whichever rank the launcher saw fail first, rank 1 is named.
    failing = Job(['--local', '-np', '2'], ['--exit-at', '3:1:7'])
    code, out = failing.finish()
    assert 'joined generation' not in out
    if code == 7:
        assert 'trainrun: job failed: rank 1 (host ' in out and 'exited with code 7' in out, out
    else:
        assert code == 1, out
        assert "[0] trainrun.InvalidArgumentError: rank 0 (" in out, out
        assert "the engine was shut down by rank 1 (trainrun::shutdown()" in out, out


@pytest.mark.skipif(not os.path.exists(MNIST_DATA), reason=f'{MNIST_DATA} missing: run scripts/build.sh')
def test_mnist_example_elastic_a_rank_killed_mid_epoch_the_survivors_reach_the_same_accuracy():
    job = Job(['--local', '-np', '3', '--min-np', '1'], ['--elastic', '--epochs', '2', '--commit-every', '10'],
              program=MNIST, timeout=600)
    job.wait_for(r'\[0\] epoch 1/2: ', timeout=400)
    job.kill_worker(2)  # in epoch 2, or its commit: that commit's snapshot is epoch 2 already
    code, out = job.finish()
    assert code == 0, out
    assert 'trainrun: elastic: worker 2 (host ' in out and 'was killed by SIGKILL' in out
    assert re.search(r'\[0\] elastic: generation 1, 2 ranks, resuming at epoch 2 with \d+ digits left', out), out
    assert out.count('[0] epoch 2/2: ') == 1
    accuracy = float(re.search(r'\[0\] accuracy ([0-9.]+)', out).group(1))
    assert accuracy >= 0.95, out
