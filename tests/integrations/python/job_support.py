"""What the job tests share: the ranks' environment, running a command, and
finding a job's processes left behind."""
import os
import socket
import subprocess
import sys


def environment(**extra):
    """This process's environment without trainrun's job variables, the package on PYTHONPATH, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('TRAINRUN_') or k == 'TRAINRUN_BIN'}
    env['PYTHONPATH'] = os.pathsep.join(p for p in sys.path if p)
    env.update(extra)
    return env


def run(command, timeout=300, **kwargs):
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                          **kwargs)


def processes_with(tag):
    """Pids whose environment or command line holds `tag`."""
    pids = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        if int(pid) == os.getpid():
            continue
        for name in ('environ', 'cmdline'):
            try:
                with open(f'/proc/{pid}/{name}', 'rb') as f:
                    if tag.encode() in f.read().split(b'\0'):
                        pids.append(int(pid))
                        break
            except OSError:
                break
    return pids


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]
