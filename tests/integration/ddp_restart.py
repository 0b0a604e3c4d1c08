# A small torch DDP job (gloo) for test_torchrun: rank 1 exits 3 part-way in
# the first FAILURES runs of the job (TORCHELASTIC_RESTART_COUNT says which run).
import os, sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

failures = int(sys.argv[1])  # rank 1 fails in the first `failures` runs of the job
restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
dist.init_process_group("gloo", init_method="env://")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    loss = model(torch.full((2, 4), float(rank + 1))).sum()
    loss.backward()
    opt.step()
    if rank == 1 and step == 1 and restart < failures:
        print(f"rank 1 fails in run {restart}", flush=True)
        os._exit(3)
print(f"rank {rank} done in run {restart} weight {model.module.weight.sum().item():.4f}", flush=True)
dist.destroy_process_group()
