"""trainrun.Runner: HorovodRunner's contract on the trainrun launcher.

    Runner(np=2).run(main, **kwargs)   # rank 0's return value of main(**kwargs)

run() pickles main and kwargs with cloudpickle, starts `trainrun` with the
ranks, each running `python -m trainrun._rank_main`, which fetches the
pickle from this process over an authenticated socket (a random key passed
in the ranks' environment), calls main(**kwargs) and sends back its return
value (rank 0) or its exception and traceback. Nothing touches the disk.
np < 0 runs -np ranks on this machine (HorovodRunner's local mode); np > 0
runs on `hosts` ("h1:4,h2:4") when given, else on this machine, saying so in
one line on stderr (HorovodRunner's np > 0 means the cluster).
driver_log_verbosity is HorovodRunner's: 'all' (the default here) copies the
ranks' output to this process's stdout and stderr as it comes;
'log_callback_only' (HorovodRunner's default) keeps it out, since trainrun has
no log callback: a rank's error still comes back in the RunnerError.
"""
import os
import shutil
import socket
import subprocess
import sys
import threading
from multiprocessing import AuthenticationError
from multiprocessing.connection import Listener

try:
    import cloudpickle
except ImportError:  # without it only importable functions can be sent
    import pickle as cloudpickle

from trainrun import _paths
from trainrun._describe import exception_text

ADDRESS_ENV = 'TRAINRUN_RUNNER_ADDRESS'
KEY_ENV = 'TRAINRUN_RUNNER_KEY'


class RunnerError(RuntimeError):
    """A rank raised (rank, traceback set), returned a value that cannot be
    pickled (rank set), or the job failed (rank None)."""

    def __init__(self, message, rank=None, traceback=None, exit_code=None):
        super().__init__(message)
        self.rank, self.traceback, self.exit_code = rank, traceback, exit_code


def find_trainrun():
    """The launcher: $TRAINRUN_BIN, the one built with this copy of the package
    (in a build tree), the installed one, then PATH."""
    for candidate in [os.environ.get('TRAINRUN_BIN')] + _paths.trainrun_candidates():
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which('trainrun')
    if found is None:
        raise FileNotFoundError('trainrun executable not found (set TRAINRUN_BIN or put it on PATH)')
    return found


def _first_host(hosts, hostfile):
    """The first host of "h1:4,h2:4" or of a hostfile ("h1 slots=4" lines)."""
    if hosts:
        first = hosts.split(',')[0]
    else:
        with open(hostfile) as lines:
            first = next((words[0] for words in (line.split('#')[0].split() for line in lines) if words), None)
        if first is None:
            raise ValueError(f'hostfile {hostfile} names no host')
    return first.rsplit(':', 1)[0].split('@')[-1].strip('[]')


def _route_address(first):
    """This machine's address on the route to the first host."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((first, 9))
        return s.getsockname()[0]


_VERBOSITIES = ('all', 'log_callback_only')


class Runner:
    def __init__(self, np, driver_log_verbosity='all', hosts=None, backend=None, env=None, launcher_args=(),
                 driver_address=None, hostfile=None, executable=None):
        if np == 0:
            raise ValueError('np must be a positive number of ranks, or negative for local mode')
        if driver_log_verbosity not in _VERBOSITIES:
            raise ValueError(f'driver_log_verbosity must be one of {", ".join(_VERBOSITIES)}, '
                             f'not {driver_log_verbosity!r}')
        self.driver_log_verbosity = driver_log_verbosity
        self.np = abs(np)
        self.hosts = None if np < 0 else hosts
        self.hostfile = None if np < 0 else hostfile
        self.executable = executable or sys.executable
        self.backend, self.env, self.launcher_args = backend, dict(env or {}), list(launcher_args)
        self.driver_address = driver_address
        if np > 0 and not hosts and not hostfile:
            print(f'trainrun.Runner: no hosts given: the {np} rank(s) run on this machine (name them with '
                  f"Runner(np={np}, hosts='host1:4,host2:4'); np={-np} asks for this machine without this line)",
                  file=sys.stderr)

    def _command(self):
        cmd = [find_trainrun()]
        cmd += ['-H', self.hosts] if self.hosts else ['--hostfile', self.hostfile] if self.hostfile else ['--local']
        cmd += ['-np', str(self.np)]
        if self.backend:
            cmd += ['--backend', self.backend]
        for name in [ADDRESS_ENV, KEY_ENV, 'PYTHONPATH'] + sorted(self.env):
            cmd += ['-x', name]
        return cmd + self.launcher_args + [self.executable, '-m', 'trainrun._rank_main']

    def run(self, main, **kwargs):
        """Runs main(**kwargs) on every rank; returns rank 0's return value."""
        return self._run(main, kwargs, every_rank=False)[0]

    def _run(self, main, kwargs, every_rank):
        """Runs main(**kwargs) on every rank; returns the ranks' return values
        by rank (every_rank), or rank 0's alone as a list of one."""
        payload = cloudpickle.dumps((main, kwargs, every_rank))
        key = os.urandom(32)
        remote = self.hosts or self.hostfile
        host = self.driver_address or (_route_address(_first_host(self.hosts, self.hostfile)) if remote
                                       else '127.0.0.1')
        with Listener((host, 0), authkey=key) as listener:
            server = _ResultServer(listener, payload, self.np)
            env = dict(os.environ, **self.env)
            env[ADDRESS_ENV] = '%s:%d' % listener.address
            env[KEY_ENV] = key.hex()
            # The ranks import what this process can (the module of main, the build tree's package).
            env['PYTHONPATH'] = os.pathsep.join(p for p in sys.path if p)
            process = subprocess.Popen(self._command(), env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            quiet = self.driver_log_verbosity == 'log_callback_only'
            pumps = [_pump(process.stdout, None if quiet else sys.stdout),
                     _pump(process.stderr, None if quiet else sys.stderr)]
            try:
                code = process.wait()
            finally:
                if process.poll() is None:
                    process.terminate()
                    process.wait()
                for pump in pumps:
                    pump.join()
        server.stop()
        values = server.outcome(code)
        return [values.get(rank) for rank in range(self.np if every_rank else 1)]


def _pump(stream, target):
    """Copies the launcher's output through, line by line, as it comes."""
    def copy():
        for line in iter(stream.readline, b''):
            if target is not None:
                target.write(line.decode(errors='replace'))
                target.flush()
        stream.close()
    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    return thread


def _error_message(rank, body):
    kind, message, tb, _ = body
    return f'rank {rank} raised {kind}: {message}\n\nTraceback of rank {rank}:\n{tb}'


def _loads_or_none(blob):
    """A rank's pickled exception, or None when there is none or this process
    cannot unpickle it (its class lives in a module only the rank has)."""
    try:
        return None if blob is None else cloudpickle.loads(blob)
    except Exception:  # noqa: B902 - any unpickling failure
        return None


class _ResultServer:
    """Serves the payload to each rank and collects what the ranks report."""

    def __init__(self, listener, payload, np):
        self._listener, self._payload = listener, payload
        self._lock = threading.Lock()
        self.values, self.errors, self._threads = {}, [], []
        self._acceptor = threading.Thread(target=self._accept, args=(np,), daemon=True)
        self._acceptor.start()

    def _accept(self, np):
        served = 0
        while served < np:
            try:
                conn = self._listener.accept()
            except (AuthenticationError, EOFError, ConnectionError):
                continue  # a stranger, or a peer gone during the handshake
            except OSError:
                return  # the listener was closed: the job is over
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)
            served += 1

    def _serve(self, conn):
        with conn:
            try:
                rank = int(conn.recv_bytes().decode())
                conn.send_bytes(self._payload)
                report = conn.recv_bytes()
            except (OSError, EOFError, ValueError):
                return  # the rank died before reporting: the launcher's exit code says so
            try:
                status, body = cloudpickle.loads(report)
            except Exception as error:  # noqa: B902 - e.g. rank 0's value needs a module this process lacks
                status, body = 'failed', ('its report could not be unpickled here: '
                                          f'{type(error).__name__}: {exception_text(error)}')
            with self._lock:
                if status == 'ok':
                    self.values[rank] = body
                elif status == 'error':
                    self.errors.append((rank, _error_message(rank, body), body[2], _loads_or_none(body[3])))
                elif status == 'unpicklable':
                    self.errors.append((rank, f'rank {rank} returned a value that cannot be pickled: {body}', None,
                                        None))
                elif status == 'failed':
                    self.errors.append((rank, f'rank {rank}: {body}', None, None))

    def stop(self):
        for thread in self._threads:
            thread.join()

    def outcome(self, code):
        if self.errors:
            rank, message, tb, exception = self.errors[0]
            error = RunnerError(message, rank=rank, traceback=tb, exit_code=code)
            if exception is not None:
                raise error from exception
            raise error
        if code != 0:
            raise RunnerError(f'trainrun exited with status {code} (see its output above)', exit_code=code)
        return self.values
