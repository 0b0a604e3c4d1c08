"""hvd.start_timeline / hvd.stop_timeline at run time (issue 25), as in
Horovod: rank 0 writes the file, other ranks' calls do nothing; a second
start switches files, the first closed as complete JSON; stop closes the
file before it returns; mark_cycles adds CYCLE_START marks."""
import json

import pytest
import torch

import trainrun
import trainrun.torch as hvd


def tensors_and_phases(trace):
    """{tensor name: [event names in order]} of a parsed Chrome trace."""
    rows = {e['pid']: e['args']['name'] for e in trace
            if e['ph'] == 'M' and e['name'] == 'process_name' and 'name' in e['args']}
    out = {}
    for e in trace:
        if e['ph'] in 'Bi' and e['pid'] in rows:
            out.setdefault(rows[e['pid']], []).append(e['name'])
    return out


def test_start_switch_and_stop_at_run_time(tmp_path):
    first, second = tmp_path / 'first.json', tmp_path / 'second.json'
    hvd.start_timeline(str(first), mark_cycles=True)
    hvd.allreduce(torch.ones(3), name='tl.first')
    hvd.start_timeline(second)  # a path-like works too; the first file is complete now
    hvd.allgather(torch.ones(1, 2), name='tl.second')
    hvd.stop_timeline()
    hvd.allreduce(torch.ones(3), name='tl.after')  # after stop: recorded nowhere
    hvd.stop_timeline()  # stopping a stopped timeline does nothing
    hvd.barrier()
    if hvd.rank() != 0:
        assert not first.exists() and not second.exists()
        return
    one, two = json.loads(first.read_text()), json.loads(second.read_text())
    assert 'start_time_since_epoch_in_micros' in one[0]['args']
    phases = tensors_and_phases(one)
    assert 'NEGOTIATE_ALLREDUCE' in phases['allreduce.tl.first']
    assert 'ALLREDUCE' in phases['allreduce.tl.first']
    assert any(e['name'] == 'CYCLE_START' for e in one)
    phases = tensors_and_phases(two)
    assert 'ALLGATHER' in phases['allgather.tl.second']
    assert 'allreduce.tl.first' not in phases and 'allreduce.tl.after' not in phases
    assert not any(e['name'] == 'CYCLE_START' for e in two)
    for trace in (one, two):  # every span of a file ends in it
        depth = {}
        for e in trace:
            depth[e['pid']] = depth.get(e['pid'], 0) + {'B': 1, 'E': -1}.get(e['ph'], 0)
            assert depth[e['pid']] >= 0
        assert set(depth.values()) <= {0}


def test_the_same_path_twice_keeps_writing_it(tmp_path):
    path = tmp_path / 'same.json'
    hvd.start_timeline(path)
    hvd.allreduce(torch.ones(2), name='tl.same.1')
    hvd.start_timeline(path)  # Horovod: the same file name changes nothing
    hvd.allreduce(torch.ones(2), name='tl.same.2')
    hvd.stop_timeline()
    if hvd.rank() == 0:
        phases = tensors_and_phases(json.loads(path.read_text()))
        assert 'allreduce.tl.same.1' in phases and 'allreduce.tl.same.2' in phases


def test_a_path_that_cannot_be_written_fails_on_rank_0_only(tmp_path):
    bad = tmp_path / 'no' / 'such' / 'dir.json'
    if hvd.rank() == 0:
        with pytest.raises(trainrun.TrainrunError, match="start_timeline: timeline: cannot write '.*dir.json'"):
            hvd.start_timeline(bad)
    else:
        hvd.start_timeline(bad)  # only rank 0 writes a timeline
    hvd.allreduce(torch.ones(1), name='tl.bad.after')
