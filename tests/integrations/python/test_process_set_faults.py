"""A process set's faults as its user sees them, in real 3-rank trainrun jobs
with the set of job ranks 1 and 2 (issue 37): a stall line names the set
and the missing job rank, once; a mismatch names the set's job ranks, never
rank 0, which is not in the set; remove_process_set with an op pending
aborts the op, and synchronize says the set was removed."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

from trainrun.runner import find_trainrun

PROGRAM = textwrap.dedent('''
    import os, sys, time, torch
    import trainrun.torch as hvd
    hvd.init(process_sets='dynamic')
    s = hvd.add_process_set([1, 2])
    rank, mode = hvd.rank(), sys.argv[1]
    if s.included():
        hvd.allreduce(torch.ones(1), name='warm', process_set=s)
    if mode == 'stall':
        if rank == 1:
            h = hvd.allreduce_async(torch.ones(1), name='grad', process_set=s)
        time.sleep(3.5)  # 3.5 times the stall warning time
        if rank == 2:
            hvd.allreduce(torch.ones(1), name='grad', process_set=s)
        if rank == 1:
            hvd.synchronize(h)
    elif mode == 'mismatch' and s.included():
        try:
            hvd.allreduce(torch.ones(rank), name='x', process_set=s)
        except Exception as e:
            print(f'rank {rank}: {type(e).__name__}: {e}', flush=True)
    elif mode == 'remove':
        if s.included():
            done = hvd.allreduce_async(torch.ones(1), name='done', op=hvd.Sum, process_set=s)
            while not hvd.poll(done):
                time.sleep(0.01)
        if rank == 1:
            late = hvd.allreduce_async(torch.ones(1), name='late', process_set=s)
        hvd.barrier()  # 'late' is queued on rank 1 before anyone removes the set
        if rank == 1:
            time.sleep(float(sys.argv[2]))  # > 0: rank 2's removal stops the set's engine first
        assert hvd.remove_process_set(s)
        if rank in (1, 2):
            print(f'rank {rank}: completed op gives {hvd.synchronize(done).item()}', flush=True)
        if rank == 1:
            assert hvd.poll(late)
            try:
                hvd.synchronize(late)
            except Exception as e:
                print(f'rank 1: {type(e).__name__}: {e}', flush=True)
    hvd.barrier()
    print(f'rank {rank}: finished', flush=True)
''')


def run_job(tmp_path, mode, *args, **env):
    script = tmp_path / 'program.py'
    script.write_text(PROGRAM)
    environment = {k: v for k, v in os.environ.items() if not k.startswith(('TRAINRUN_', 'HOROVOD_'))}
    environment.update(PYTHONPATH=os.pathsep.join(p for p in sys.path if p), **env)
    done = subprocess.run([find_trainrun(), '--local', '-np', '3', '--timeout', '120', sys.executable, str(script),
                           mode, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment,
                          timeout=180)
    assert done.returncode == 0, done.stdout
    for rank in range(3):
        assert f'[{rank}] rank {rank}: finished' in done.stdout, done.stdout
    return done.stdout


def test_a_stall_in_a_set_names_the_set_and_the_missing_job_rank_once(tmp_path):
    out = run_job(tmp_path, 'stall', HOROVOD_STALL_CHECK_TIME_SECONDS='1')
    lines = [line for line in out.splitlines() if ': stall: ' in line]
    assert len(lines) == 1, out
    assert re.fullmatch(r"\[1\] trainrun: rank 1 \(.+\): stall: process set 1 \(ranks 1, 2\): 1 op\(s\) waited more "
                        r"than 1 s for other ranks: allreduce 'allreduce\.grad' \(missing rank 2\)", lines[0]), out


def test_a_mismatch_in_a_set_names_its_job_ranks_not_rank_0(tmp_path):
    out = run_job(tmp_path, 'mismatch')
    for rank in (1, 2):
        assert re.search(rf"\[{rank}\] rank {rank}: MismatchError: rank {rank} \(.+\): allreduce 'allreduce\.x' in "
                         r"process set 1 \(ranks 1, 2\): rank 2 shape \[2\] != rank 1 shape \[1\]\n", out), out
    assert 'rank 0 shape' not in out, out


@pytest.mark.parametrize('rank_1_removes_after', ['0', '1.5'])
def test_removing_a_set_aborts_its_pending_op_and_synchronize_says_so(tmp_path, rank_1_removes_after):
    out = run_job(tmp_path, 'remove', rank_1_removes_after)
    assert '[1] rank 1: completed op gives 2.0' in out and '[2] rank 2: completed op gives 2.0' in out, out
    assert ('[1] rank 1: InvalidArgumentError: process set 1 (ranks 1, 2) was removed (remove_process_set) while '
            "this op was pending, so the op was aborted (synchronize a set's handles before removing it)") in out, out
    assert 'unknown handle' not in out, out
