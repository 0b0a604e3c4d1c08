"""DDP's gradient buckets in trainrun's shared-memory heap: on a group of
backend "trainrun" whose ranks share a host, a bucket of 64 KiB or more lies
in the memfd every rank maps ("trainrun-heap"), so the allreduce reads it in
place; DDP still reaches the parameters of training without communication.
Buckets of gloo's DDP, small buckets and tensors made outside DDP stay
torch's own."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


def mapping_of(address):
    """The pathname of the mapping of this process that holds `address`."""
    with open('/proc/self/maps') as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            low, high = (int(a, 16) for a in fields[0].split('-'))
            if low <= address < high:
                return fields[5].strip() if len(fields) > 5 else ''
    raise AssertionError(f'{address:#x} is in no mapping')


def in_heap(tensor):
    return 'trainrun-heap' in mapping_of(tensor.data_ptr())


def model():
    torch.manual_seed(0)
    # 4 MiB and 1 MiB of weights (buckets of 2 MiB and more), and a small layer.
    return nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 128), nn.ReLU(), nn.Linear(128, 4))


def bucket_recorder(seen):
    def hook(_state, bucket):
        seen.append(bucket.buffer())
        buffer = bucket.buffer().div_(dist.get_world_size())
        return dist.all_reduce(buffer, async_op=True).get_future().then(lambda f: f.value()[0])
    return hook


def batches(steps=3, per_rank=4):
    g = torch.Generator().manual_seed(1)
    return [[torch.randn(per_rank, 512, generator=g) for _ in range(dist.get_world_size())] for _ in range(steps)]


def train(ddp, data):
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in data:
        opt.zero_grad()
        ddp(step[dist.get_rank()]).square().mean().backward()
        opt.step()


def test_ddp_buckets_lie_in_the_heap_from_the_first_step_and_after_the_rebuild():
    ddp = DistributedDataParallel(model(), bucket_cap_mb=2)
    seen = []
    ddp.register_comm_hook(None, bucket_recorder(seen))
    for step in batches():  # step 1 on the first buckets, then on DDP's rebuilt ones
        seen.clear()
        train(ddp, [step])
        large = [b for b in seen if b.numel() * b.element_size() >= 64 << 10]
        small = [b for b in seen if b.numel() * b.element_size() < 64 << 10]
        assert large and all(in_heap(b) for b in large), [(b.numel(), mapping_of(b.data_ptr())) for b in large]
        assert not any(in_heap(b) for b in small)


def test_ddp_on_heap_buckets_trains_as_without_communication():
    data = batches()
    ddp = DistributedDataParallel(model(), bucket_cap_mb=2)  # DDP's own allreduce of its buckets
    train(ddp, data)
    net = model()  # the same steps on the whole global batch, in one process
    reference = torch.optim.SGD(net.parameters(), lr=0.1)
    for step in data:
        reference.zero_grad()
        sum(net(x).square().mean() for x in step).div(len(step)).backward()
        reference.step()
    for a, b in zip(ddp.module.parameters(), net.parameters()):
        assert torch.allclose(a, b, atol=1e-5), (a - b).abs().max()


def test_gloo_buckets_and_other_tensors_stay_torchs():
    gloo = dist.new_group(backend='gloo')
    ddp = DistributedDataParallel(model(), process_group=gloo, bucket_cap_mb=2)
    seen = []

    def hook(_state, bucket):
        seen.append(bucket.buffer())
        return dist.all_reduce(bucket.buffer(), group=gloo, async_op=True).get_future().then(lambda f: f.value()[0])
    ddp.register_comm_hook(None, hook)
    ddp(torch.randn(4, 512)).sum().backward()
    assert seen and not any(in_heap(b) for b in seen)
    assert not in_heap(torch.ones(1 << 20))
    dist.barrier()
