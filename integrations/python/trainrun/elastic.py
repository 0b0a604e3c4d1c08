"""Elastic training for Python (trainrun --min-np/--max-np): horovod.common.elastic's
run, State and ObjectState on the C++ core's elastic::State and elastic::run,
so Python and C++ jobs recover the same way.

    state = trainrun.torch.elastic.TorchState(model, optimizer, epoch=0)

    @trainrun.torch.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            train_one_epoch()
            state.commit()          # in memory; a point to come back to

    train(state)

When a worker is lost, collectives raise a TrainrunError (IoError,
TimeoutError, BackendError, MembershipChangedError); run() restores the last
commit, re-forms the world from the launcher's next generation, synchronizes
the state from a surviving rank, calls the reset callbacks and calls the
function again, which sees the new size(). When workers are added, the next
commit() raises HostsUpdatedInterrupt on every rank and run() re-forms
without restoring. Outside an elastic launch run() is init, sync and one call.
A State is used from the thread that runs the training loop.
"""
import functools
import pickle
import weakref

from trainrun import _core
from trainrun._core import HostsUpdatedInterrupt  # noqa: F401

# What the Python layers forget when the world is re-formed (the engine's
# pending handles, op-name counters, optimizers' handles), before the reset
# callbacks run: trainrun.torch registers its own on import.
_reform_hooks = []


def _on_reform(hook):
    _reform_hooks.append(hook)


def run(func):
    """Decorates `func(state, *args, **kwargs)` so that it survives changes of
    membership: it is called again from the last commit after each re-form."""
    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        result = []

        def call():
            result[:] = [func(state, *args, **kwargs)]
        _core.elastic_run(state._core, call)
        return result[0]
    return wrapper


def is_enabled():
    """Whether this process runs in an elastic job (TRAINRUN_ELASTIC=1)."""
    return _core.elastic_enabled()


def generation():
    """The generation of the current world (0 when not elastic)."""
    return _core.elastic_generation()


class State:
    """Training state that survives a change of membership: named parts, each
    saved to bytes by commit() and loaded back by restore() and sync(). Every
    rank adds the same parts in the same order."""

    def __init__(self):
        self._core = _core.ElasticState()
        self._reset_callbacks = []
        self._parts = {}
        # The core holds no reference to self (a cycle through C++ that the
        # garbage collector cannot see would keep the model alive forever).
        this = weakref.ref(self)
        self._core.on_reset(lambda: this()._after_reform())

    def add_part(self, name, save, load):
        """A part of the state: save() -> bytes, load(bytes)."""
        this = weakref.ref(self)
        self._core.add(name, lambda: this()._parts[name][0](), lambda data: this()._parts[name][1](data))
        self._parts[name] = (save, load)

    def register_reset_callbacks(self, callbacks):
        """Callables run after each re-form, once the state is synchronized:
        rebuild what depends on the size (learning rate, data shards)."""
        self._reset_callbacks.extend(callbacks)

    def commit(self):
        """Keeps the state in memory as the point to restore; raises
        HostsUpdatedInterrupt on every rank when workers joined or left. Collective."""
        self._core.commit()

    def restore(self):
        """Loads the last commit (or sync)."""
        self._core.restore()

    def sync(self):
        """Every rank takes the state of the lowest rank that has a commit
        (rank 0's current state when none has). Collective."""
        self._core.sync()

    @property
    def commits(self):
        return self._core.commits

    def reset(self):
        """Called after a re-form, before the reset callbacks (subclasses re-shard here)."""

    def on_reset(self):
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def _after_reform(self):
        for hook in _reform_hooks:
            hook()
        self.on_reset()


class ObjectState(State):
    """A State of plain values given as keyword arguments and read and set as
    attributes (state.epoch += 1); they travel pickled."""

    def __init__(self, **kwargs):
        super().__init__()
        self._object_names = sorted(kwargs)
        for name, value in kwargs.items():
            setattr(self, name, value)
        if self._object_names:
            self.add_part('objects', self._save_objects, self._load_objects)

    def _save_objects(self):
        return pickle.dumps({name: getattr(self, name) for name in self._object_names})

    def _load_objects(self, data):
        for name, value in pickle.loads(data).items():
            setattr(self, name, value)
