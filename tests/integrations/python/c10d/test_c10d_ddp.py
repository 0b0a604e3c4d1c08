"""DistributedDataParallel, a DDP communication hook built on futures, and
ZeroRedundancyOptimizer on backend "trainrun", each against the same
training done here without communication (every rank computes the global
batch's gradient itself)."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def batches(steps=4, per_rank=6):
    """(per-rank batches of every rank) for each step, the same on every rank."""
    g = torch.Generator().manual_seed(1)
    size = dist.get_world_size()
    return [[(torch.randn(per_rank, 8, generator=g), torch.randint(0, 4, (per_rank,), generator=g))
             for _ in range(size)] for _ in range(steps)]


def local_reference(data, make_optimizer):
    """Parameters after training on the whole global batch in one process."""
    net = model()
    opt = make_optimizer(net.parameters())
    for step in data:
        opt.zero_grad()
        x = torch.cat([b[0] for b in step])
        y = torch.cat([b[1] for b in step])
        # DDP averages per-rank mean losses: the mean over the global batch here.
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    return [p.detach() for p in net.parameters()]


def train(ddp, opt, data):
    rank = dist.get_rank()
    for step in data:
        opt.zero_grad()
        x, y = step[rank]
        nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    return [p.detach() for p in ddp.module.parameters()]


def sgd(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def assert_close(got, expected):
    for a, b in zip(got, expected):
        assert torch.allclose(a, b, atol=1e-5), (a - b).abs().max()


def test_ddp_matches_global_batch():
    data = batches()
    ddp = DistributedDataParallel(model())
    assert_close(train(ddp, sgd(ddp.parameters()), data), local_reference(data, sgd))


def test_ddp_comm_hook_with_futures():
    data = batches()
    calls = []

    def hook(state, bucket):
        calls.append(bucket.index())
        tensor = bucket.buffer().div_(dist.get_world_size())
        fut = dist.all_reduce(tensor, async_op=True).get_future()
        return fut.then(lambda f: f.value()[0])

    ddp = DistributedDataParallel(model())
    ddp.register_comm_hook(None, hook)
    assert_close(train(ddp, sgd(ddp.parameters()), data), local_reference(data, sgd))
    assert calls  # the hook ran


def test_zero_redundancy_optimizer():
    data = batches()
    ddp = DistributedDataParallel(model())
    opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.SGD, lr=0.1, momentum=0.9)
    assert_close(train(ddp, opt, data), local_reference(data, sgd))
    opt.consolidate_state_dict(to=0)
    if dist.get_rank() == 0:
        assert len(opt.state_dict()['state']) == len(list(ddp.parameters()))
