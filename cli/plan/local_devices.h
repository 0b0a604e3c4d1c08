// This machine's GPUs and CPUs, for torchrun's --nproc-per-node auto, cpu
// and gpu (counted as torch.distributed.run counts them, without torch).
// visible_cuda_gpus and usable_cpus read /dev and the CPU mask; the rest
// is pure.
#pragma once

#include <string>

namespace trainrun::cli {

struct Options;

// The driver's device nodes under `dev`: nvidia0, nvidia1, ... (one per
// GPU; nvidiactl, nvidia-uvm and the like are not GPUs).
int nvidia_device_nodes(const std::string& dev);

// How many of `devices` GPUs a CUDA program sees under CUDA_VISIBLE_DEVICES
// (null: unset, all of them): its comma-separated entries, each an index
// below `devices` or a GPU-/MIG- UUID, up to the first that names no
// device or repeats one (CUDA ignores the rest); "" hides them all.
int cuda_visible_count(int devices, const char* cuda_visible_devices);

// cuda_visible_count of the nodes under `dev`.
int visible_cuda_gpus(const std::string& dev, const char* cuda_visible_devices);

// The CPUs this process may run on (sched_getaffinity), at least 1.
int usable_cpus();

// torchrun's --nproc-per-node auto|cpu|gpu (Options::nproc_per_node_count):
// sets Options::nproc_per_node to `gpus` or `cpus` (auto: gpus when there
// are any, else cpus). The error's text, or "": gpu with no GPU, or any of
// them with -H/--hostfile (other hosts' devices are not known before they
// start).
std::string count_nproc_per_node(Options& o, int gpus, int cpus);

}  // namespace trainrun::cli
