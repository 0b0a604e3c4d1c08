"""hvd.elastic's costs from Python, in one run:

  commit   TorchState.commit() of the MNIST example's network and its SGD
           with momentum (one process), beside what Horovod's TorchState
           does on a commit (copy.deepcopy of both state dicts);
  recovery kill -9 of one of 4 workers of tests/integrations/python/elastic/elastic_worker.py
           (a 4-rank Python job): from rank 0's last step before the kill to
           the first step after it, median of KILLS jobs.

    PYTHONPATH=build/integrations/python /usr/bin/python3 tests/bench/python_elastic_bench.py [KILLS]
"""
import copy
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import uuid

import torch

import trainrun.torch as hvd
from trainrun.runner import find_trainrun

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'examples', 'pytorch'))  # mnist (the example's network)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'python', 'elastic'))
from job_processes import processes_with  # noqa: E402
WORKER = os.path.join(ROOT, 'tests', 'python', 'elastic', 'elastic_worker.py')


def timed_ms(fn, repeats=50):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.9 * len(times))]


def commit_costs():
    from mnist import Net  # the example's network
    hvd.init()
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    torch.nn.functional.cross_entropy(model(torch.rand(32, 1, 28, 28)), torch.randint(0, 10, (32,))).backward()
    optimizer.step()  # momentum buffers exist
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, epoch=0, batch=0)
    ours = timed_ms(state.commit)
    horovods = timed_ms(lambda: (copy.deepcopy(model.state_dict()), copy.deepcopy(optimizer.state_dict())))
    snapshot = sum(len(state._save(name)) for name in ('model', 'optimizer'))
    hvd.shutdown()
    print(f'commit of the MNIST net + SGD momentum ({snapshot} bytes), ms over 50')
    print(f'{"what":44} {"median":>8} {"p90":>8}')
    print(f'{"TorchState.commit() (torch.save in memory)":44} {ours[0]:8.3f} {ours[1]:8.3f}')
    print(f'{"deepcopy of both state dicts (Horovod)":44} {horovods[0]:8.3f} {horovods[1]:8.3f}')
    print(f'ratio {ours[0] / horovods[0]:.2f}x')


def one_kill(victim):
    value = uuid.uuid4().hex
    env = dict(os.environ, PYTHON_ELASTIC_BENCH=value)
    job = subprocess.Popen([find_trainrun(), '--local', '-np', '4', '--min-np', '2', sys.executable, WORKER,
                            '--epochs', '1'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    lines = []
    for line in job.stdout:
        lines.append(line)
        if re.search(r'\] step 12 size 4 ', line):
            os.kill(processes_with(f'PYTHON_ELASTIC_BENCH={value}', victim)[0], signal.SIGKILL)
            break
    lines += job.stdout.readlines()
    job.wait()
    steps = [(int(size), int(t)) for size, t in re.findall(r'\] step \d+ size (\d+) gen \d+ epoch \d+ t_ms (\d+)',
                                                            ''.join(lines))]
    for (size0, t0), (size1, t1) in zip(steps, steps[1:]):
        if size0 == 4 and size1 == 3:
            return t1 - t0, steps
    return None, steps


def recovery(kills):
    samples, step_ms = [], []
    for i in range(kills):
        ms, steps = one_kill(i % 4)
        if ms is not None:
            samples.append(ms)
        step_ms += [t1 - t0 for (s0, t0), (s1, t1) in zip(steps, steps[1:]) if s0 == s1 == 4]
    samples.sort()
    print(f'\nrecovery after kill -9 of one of 4 Python workers, ms ({len(samples)}/{kills} jobs recovered)')
    print(f'{"median":>8} {"p90":>8} {"min":>8} {"max":>8} {"step (med)":>11}')
    if samples:
        print(f'{statistics.median(samples):8.0f} {samples[int(0.9 * len(samples))]:8.0f} {samples[0]:8.0f} '
              f'{samples[-1]:8.0f} {statistics.median(step_ms):11.0f}')


if __name__ == '__main__':
    commit_costs()
    recovery(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
