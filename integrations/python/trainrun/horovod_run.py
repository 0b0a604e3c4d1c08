"""trainrun.run: Horovod's programmatic launcher (horovod.run) on trainrun's,
so that `import trainrun as horovod` runs a script that calls horovod.run.

    results = trainrun.run(main, args=(a,), kwargs={'b': 1}, np=2)   # every rank's return value

It takes horovod.run's arguments: each becomes the trainrun (horovodrun)
flag of the same meaning, and the job runs as trainrun.Runner's does (the
function and its arguments travel by cloudpickle over an authenticated
socket). Elastic jobs are not run this way: start them with trainrun
--host-discovery-script and trainrun.elastic.
"""
from trainrun.runner import Runner

_ELASTIC = ('min_num_proc', 'max_num_proc', 'reset_limit', 'cooldown_range', 'host_discovery_script')


def _flags(slots, start_timeout, ssh_port, ssh_identity_file, disable_cache, output_filename, verbose,
           use_gloo, use_mpi, mpi_args, network_interfaces):
    """horovod.run's arguments as trainrun's command-line flags."""
    flags = []
    for flag, value in (('--slots-per-host', slots), ('--start-timeout', start_timeout), ('-p', ssh_port),
                        ('-i', ssh_identity_file), ('--output-filename', output_filename),
                        ('--mpi-args', mpi_args)):
        if value is not None:
            flags += [flag, str(value)]
    if network_interfaces:
        flags += ['--network-interfaces', ','.join(network_interfaces)]
    for flag, on in (('--disable-cache', disable_cache), ('--verbose', verbose), ('--gloo', use_gloo),
                     ('--mpi', use_mpi)):
        if on:
            flags.append(flag)
    return flags


def run(func, args=(), kwargs=None, num_proc=1, min_num_proc=None, max_num_proc=None, slots=None,
        reset_limit=None, cooldown_range=None, hosts=None, hostfile=None, host_discovery_script=None,
        start_timeout=None, ssh_port=None, ssh_identity_file=None, disable_cache=None, output_filename=None,
        verbose=None, use_gloo=None, use_mpi=None, mpi_args=None, network_interface=None,
        network_interfaces=None, executable=None, np=None, min_np=None, max_np=None):
    """Runs func(*args, **kwargs) on num_proc ranks (on this machine unless
    hosts or hostfile names others) and returns every rank's return value,
    indexed by rank. A rank's exception is raised as trainrun.RunnerError
    naming the rank, with its traceback."""
    num_proc = np if np is not None else num_proc
    given = dict(min_num_proc=min_np if min_np is not None else min_num_proc,
                 max_num_proc=max_np if max_np is not None else max_num_proc, reset_limit=reset_limit,
                 cooldown_range=cooldown_range, host_discovery_script=host_discovery_script)
    elastic = [name for name in _ELASTIC if given[name] is not None]
    if elastic:
        raise ValueError(f'trainrun.run does not run elastic jobs ({", ".join(elastic)} given): start them with '
                         'trainrun --host-discovery-script SCRIPT and trainrun.elastic')
    if hosts is not None and hostfile is not None:
        raise ValueError('Argument hosts and hostfile only allow one provided.')
    if use_gloo and use_mpi:
        raise ValueError('Argument use_gloo and use_mpi only allow one set True.')
    if not isinstance(num_proc, int) or num_proc < 1:
        raise ValueError(f'num_proc must be a positive number of ranks, not {num_proc!r}')
    if network_interface and not network_interfaces:
        network_interfaces = network_interface.split(',')
    remote = bool(hosts or hostfile)
    runner = Runner(np=num_proc if remote else -num_proc, hosts=hosts, hostfile=hostfile, executable=executable,
                    launcher_args=_flags(slots, start_timeout, ssh_port, ssh_identity_file, disable_cache,
                                         output_filename, verbose, use_gloo, use_mpi, mpi_args,
                                         network_interfaces))
    call = _Call(func, tuple(args), dict(kwargs or {}))
    return runner._run(call, {}, every_rank=True)


class _Call:
    """func(*args, **kwargs), picklable with them (what horovod.run wraps)."""

    def __init__(self, func, args, kwargs):
        self.func, self.args, self.kwargs = func, args, kwargs

    def __call__(self):
        return self.func(*self.args, **self.kwargs)
