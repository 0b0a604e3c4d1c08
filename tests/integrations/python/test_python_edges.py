"""Edges of the Python package, each through a real 2-rank trainrun job
(trainrun.Runner): a broadcast_object / allgather_object whose object cannot
be pickled leaves later calls in step, allgather of empty tensors, and the
Runner naming the rank of an unpicklable return value or of an exception
whose __str__ raises. A job that hangs (the old behaviour of the first)
ends at --timeout and fails the test instead of hanging it."""
import threading

import pytest

import trainrun

JOB = dict(np=2, launcher_args=['--timeout', '120'])


class Unpicklable:
    def __reduce__(self):
        raise TypeError('this object refuses to be pickled')


class BadStr(Exception):
    def __str__(self):
        raise ZeroDivisionError('division by zero in __str__')


def _outcome(call):
    try:
        return ('value', call())
    except Exception as e:  # noqa: B902
        return ('error', f'{type(e).__name__}: {e}')


def objects_after_a_pickling_failure():
    import trainrun.torch as hvd
    hvd.init()
    me = hvd.rank()
    seen = [
        _outcome(lambda: hvd.broadcast_object(Unpicklable() if me == 0 else None, root_rank=0)),
        _outcome(lambda: hvd.broadcast_object({'step': 5} if me == 0 else None, root_rank=0)),
        _outcome(lambda: hvd.allgather_object(Unpicklable() if me == 1 else me)),
        _outcome(lambda: hvd.allgather_object(me * 10)),
    ]
    return hvd.allgather_object(seen)


def test_a_pickling_failure_raises_on_every_rank_and_later_calls_stay_in_step():
    rank0, rank1 = trainrun.Runner(**JOB).run(objects_after_a_pickling_failure)
    refused = 'TypeError: this object refuses to be pickled'
    assert rank0[0] == ('error', refused)
    assert rank1[0] == ('error', "RuntimeError: broadcast_object 'broadcast_object.noname.0': rank 0 could not "
                                 f'pickle the object: {refused}')
    assert rank0[1] == rank1[1] == ('value', {'step': 5})
    assert rank0[2] == ('error', "RuntimeError: allgather_object 'allgather_object.noname.0': could not pickle "
                                 f'the object of rank 1: {refused}')
    assert rank1[2] == ('error', refused)
    assert rank0[3] == rank1[3] == ('value', [0, 10])


def gather_empty_tensors():
    import torch

    import trainrun.torch as hvd
    hvd.init()
    results = []
    for rows in [0, hvd.rank() * 2]:  # all empty; then rank 0 empty, rank 1 two rows
        out = hvd.allgather(torch.full((rows, 3), float(hvd.rank() + 1)))
        results.append((tuple(out.shape), out.dtype, out.tolist()))
    return hvd.allgather_object(results)


def test_allgather_of_empty_tensors_is_the_concatenation():
    for results in trainrun.Runner(**JOB).run(gather_empty_tensors):
        import torch
        assert results[0] == ((0, 3), torch.float32, [])
        assert results[1] == ((2, 3), torch.float32, [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]])


def return_a_lock():
    import trainrun.torch as hvd
    hvd.init()
    return threading.Lock()


def test_an_unpicklable_return_value_names_the_rank():
    with pytest.raises(trainrun.RunnerError) as info:
        trainrun.Runner(**JOB).run(return_a_lock)
    assert info.value.rank == 0
    assert str(info.value).startswith('rank 0 returned a value that cannot be pickled: TypeError: ')
    assert 'lock' in str(info.value)
    assert info.value.exit_code == 1


def raise_bad_str_on_rank_one():
    import trainrun.torch as hvd
    hvd.init()
    if hvd.rank() == 1:
        raise BadStr('the real message')
    return 'fine'


def test_an_exception_whose_str_raises_names_the_rank_and_its_type():
    with pytest.raises(trainrun.RunnerError) as info:
        trainrun.Runner(**JOB).run(raise_bad_str_on_rank_one)
    error = info.value
    assert error.rank == 1
    assert str(error).startswith("rank 1 raised BadStr: BadStr('the real message') "
                                 '(its __str__ raised ZeroDivisionError)\n')
    assert 'raise_bad_str_on_rank_one' in error.traceback
    assert isinstance(error.__cause__, BadStr)
