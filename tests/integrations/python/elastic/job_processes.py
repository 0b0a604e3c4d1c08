"""The processes of one job, found by a tag in their environment (the
elastic tests and tests/bench/python_elastic_bench.py kill workers by it)."""
import os


def processes_with(tag, worker=None):
    """Pids whose environment holds `tag` (and TRAINRUN_WORKER_ID=worker)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/environ', 'rb') as f:
                env = f.read().split(b'\0')
        except OSError:
            continue
        if tag.encode() in env and (worker is None or f'TRAINRUN_WORKER_ID={worker}'.encode() in env):
            pids.append(int(pid))
    return pids
