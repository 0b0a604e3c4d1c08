// The launcher <-> rank contract, part 1: the names of every environment
// variable the launcher sets for a rank (and the ones other launchers set
// that a rank also reads: Horovod, torchrun, Open MPI, Slurm). The rest of
// the contract sits beside it in contract/: kv_keys.h, http_scheme.h,
// auth_scheme.h, limits.h, world.h (a rank reads these names once), the
// wire codecs. This header is the single source of truth: nothing else
// spells these strings. Constants only; no state, safe from any thread.
#pragma once

namespace trainrun::contract {

// ---- Worker environment (docs/design.md §3) -------------------------------------
inline constexpr const char* kEnvRank = "TRAINRUN_RANK";
inline constexpr const char* kEnvSize = "TRAINRUN_SIZE";
inline constexpr const char* kEnvLocalRank = "TRAINRUN_LOCAL_RANK";
inline constexpr const char* kEnvLocalSize = "TRAINRUN_LOCAL_SIZE";
inline constexpr const char* kEnvCrossRank = "TRAINRUN_CROSS_RANK";
inline constexpr const char* kEnvCrossSize = "TRAINRUN_CROSS_SIZE";
inline constexpr const char* kEnvHostname = "TRAINRUN_HOSTNAME";
inline constexpr const char* kEnvBackend = "TRAINRUN_BACKEND";
inline constexpr const char* kEnvRendezvousAddr = "TRAINRUN_RENDEZVOUS_ADDR";
inline constexpr const char* kEnvRendezvousPort = "TRAINRUN_RENDEZVOUS_PORT";
inline constexpr const char* kEnvJobId = "TRAINRUN_JOB_ID";
inline constexpr const char* kEnvSecret = "TRAINRUN_SECRET";
// Network interface the tcp backend binds to; the launcher sets it when it knows better
// than "the address that routes to the rendezvous server".
inline constexpr const char* kEnvIface = "TRAINRUN_IFACE";
// A network in CIDR form (launcher --network): each rank binds its own
// host's address in it, which takes precedence over the route rule above.
inline constexpr const char* kEnvNetwork = "TRAINRUN_NETWORK";
// Seconds every rank may take to reach the rendezvous (launcher --start-timeout).
inline constexpr const char* kEnvStartTimeout = "TRAINRUN_START_TIMEOUT";
// Seconds one collective may block before it fails with Error::Code::Timeout.
inline constexpr const char* kEnvCollectiveTimeout = "TRAINRUN_COLLECTIVE_TIMEOUT";
// 0 turns off the shared-memory transport between ranks on one host (the
// tcp backend then uses its TCP mesh everywhere); 1, the default, allows it
// (launcher --no-shm sets 0).
inline constexpr const char* kEnvShm = "TRAINRUN_SHM";
// Where the tcp backend's allreduce across hosts changes algorithm
// (contract/switch_points.h): "two-level=SIZE|never,split=SIZE,chunk=SIZE",
// each part optional, overriding the cost model's choice (launcher
// --switch-points sets it).
inline constexpr const char* kEnvSwitchPoints = "TRAINRUN_SWITCH_POINTS";
// "multiple": the MPI backend initialises MPI at MPI_THREAD_MULTIPLE, which
// process sets need (each set's engine calls MPI from its own thread).
inline constexpr const char* kEnvMpiThreads = "TRAINRUN_MPI_THREADS";
// 1: before each core call every rank gathers what the others called (op,
// dtype, count, reduce op, root) and a disagreement is Error(Mismatch) on
// every rank naming the rank, as torch's TORCH_DISTRIBUTED_DEBUG=DETAIL does;
// one small allgather per call (launcher --check-calls). 0, the default:
// only the shared-memory transport checks, for free.
inline constexpr const char* kEnvCheckCalls = "TRAINRUN_CHECK_CALLS";
// Seconds an NCCL call may take before its communicator is aborted and the
// call fails with Error::Code::Timeout (default: TRAINRUN_COLLECTIVE_TIMEOUT
// when that is set, else 600).
inline constexpr const char* kEnvNcclTimeout = "TRAINRUN_NCCL_TIMEOUT";
// The CUDA device (an index among the visible ones) NCCL uses on this rank;
// default: the local rank, or 0 when CUDA_VISIBLE_DEVICES leaves one GPU.
inline constexpr const char* kEnvCudaDevice = "TRAINRUN_CUDA_DEVICE";
// Elastic jobs (contract/elastic_protocol.h): "1" when the launcher may
// change the job's membership; this process's stable worker id; and the
// seconds a worker waits for a generation that includes it (launcher
// --elastic-timeout).
inline constexpr const char* kEnvElastic = "TRAINRUN_ELASTIC";
inline constexpr const char* kEnvWorkerId = "TRAINRUN_WORKER_ID";
inline constexpr const char* kEnvElasticTimeout = "TRAINRUN_ELASTIC_TIMEOUT";
// CPU binding of each rank (launcher --bind-to core|hwthread|socket|numa): the host
// agent pins the rank before exec, by its local rank, to that unit of the
// host's topology (cli/agent/cpu_binding.h). Unset: not bound. With
// TRAINRUN_REPORT_BINDINGS=1 (--report-bindings) the agent prints one line per
// rank saying where it was bound.
inline constexpr const char* kEnvBindTo = "TRAINRUN_BIND_TO";
inline constexpr const char* kEnvReportBindings = "TRAINRUN_REPORT_BINDINGS";
// Set by schedulers that bind each rank to its GPUs; read, never written.
inline constexpr const char* kEnvCudaVisibleDevices = "CUDA_VISIBLE_DEVICES";

// Coordination engine (lib/engine, <trainrun/engine.h>); read when the
// engine starts. Launcher flags in brackets.
// Bytes of small allreduces fused into one backend call; 0 disables fusion
// (--fusion-threshold-mb N sets N * 1048576). Default 64 MiB.
inline constexpr const char* kEnvFusionThreshold = "TRAINRUN_FUSION_THRESHOLD";
// Milliseconds between negotiation cycles, decimal (--cycle-time-ms). Default 1.
inline constexpr const char* kEnvCycleTimeMs = "TRAINRUN_CYCLE_TIME_MS";
// Entries of the response cache; 0 disables it (--cache-capacity). Default 1024.
inline constexpr const char* kEnvCacheCapacity = "TRAINRUN_CACHE_CAPACITY";
// Chrome-trace JSON file rank 0 writes (--timeline FILE). Default: none.
inline constexpr const char* kEnvTimeline = "TRAINRUN_TIMELINE";
// 1: a CYCLE_START mark in the timeline at every negotiation cycle
// (--timeline-mark-cycles). Default 0.
inline constexpr const char* kEnvTimelineMarkCycles = "TRAINRUN_TIMELINE_MARK_CYCLES";
// Seconds, decimal, before a waiting op is reported on stderr; 0 = never
// (--stall-warning). Default 60.
inline constexpr const char* kEnvStallWarning = "TRAINRUN_STALL_WARNING";
// Seconds, decimal, before a stall fails every pending op on every rank;
// 0 = never (--stall-shutdown). Default 0.
inline constexpr const char* kEnvStallShutdown = "TRAINRUN_STALL_SHUTDOWN";
// Percent: rank 0 warns when one rank submitted last in more than this
// share of a window's cycles (--straggler-warning). Default 0 = never.
inline constexpr const char* kEnvStragglerWarning = "TRAINRUN_STRAGGLER_WARNING";
// Cycles per straggler window (statistics exchanged, warning checked). Default 500.
inline constexpr const char* kEnvStragglerWindow = "TRAINRUN_STRAGGLER_WINDOW";

// Job-level settings (the same for every rank) that a launcher forwards when
// it hands the job to another engine (mpirun -x NAME); never per-rank names.
inline constexpr const char* kJobEnv[] = {kEnvBackend, kEnvIface, kEnvStartTimeout, kEnvCollectiveTimeout,
                                          kEnvCheckCalls};

// Compatibility exports so existing Horovod / torch code runs unchanged.
inline constexpr const char* kEnvHorovodRank = "HOROVOD_RANK";
inline constexpr const char* kEnvHorovodSize = "HOROVOD_SIZE";
inline constexpr const char* kEnvHorovodLocalRank = "HOROVOD_LOCAL_RANK";
inline constexpr const char* kEnvHorovodLocalSize = "HOROVOD_LOCAL_SIZE";
inline constexpr const char* kEnvHorovodCrossRank = "HOROVOD_CROSS_RANK";
inline constexpr const char* kEnvHorovodCrossSize = "HOROVOD_CROSS_SIZE";
inline constexpr const char* kEnvTorchRank = "RANK";
inline constexpr const char* kEnvTorchWorldSize = "WORLD_SIZE";
inline constexpr const char* kEnvTorchLocalRank = "LOCAL_RANK";
inline constexpr const char* kEnvTorchLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr const char* kEnvTorchMasterAddr = "MASTER_ADDR";
inline constexpr const char* kEnvTorchMasterPort = "MASTER_PORT";
// torchrun's (torch.distributed.run) worker names: one role, one group per host.
inline constexpr const char* kEnvTorchGroupRank = "GROUP_RANK";                     // the host's index (cross rank)
inline constexpr const char* kEnvTorchGroupWorldSize = "GROUP_WORLD_SIZE";          // hosts (cross size)
inline constexpr const char* kEnvTorchRoleRank = "ROLE_RANK";                       // = RANK
inline constexpr const char* kEnvTorchRoleWorldSize = "ROLE_WORLD_SIZE";            // = WORLD_SIZE
inline constexpr const char* kEnvTorchRestartCount = "TORCHELASTIC_RESTART_COUNT";  // whole-job restarts so far
inline constexpr const char* kEnvTorchMaxRestarts = "TORCHELASTIC_MAX_RESTARTS";    // --max-restarts (0: none)
inline constexpr const char* kEnvTorchRunId = "TORCHELASTIC_RUN_ID";                // the job id
// Set to 1 for every rank when several ranks share a host and the user did not set it (as torchrun does).
inline constexpr const char* kEnvOmpNumThreads = "OMP_NUM_THREADS";

// Fallback worlds when trainrun did not start the process.
inline constexpr const char* kEnvOmpiRank = "OMPI_COMM_WORLD_RANK";
inline constexpr const char* kEnvOmpiSize = "OMPI_COMM_WORLD_SIZE";
inline constexpr const char* kEnvOmpiLocalRank = "OMPI_COMM_WORLD_LOCAL_RANK";
inline constexpr const char* kEnvOmpiLocalSize = "OMPI_COMM_WORLD_LOCAL_SIZE";
inline constexpr const char* kEnvOmpiNodeRank = "OMPI_COMM_WORLD_NODE_RANK";
inline constexpr const char* kEnvSlurmProcId = "SLURM_PROCID";
inline constexpr const char* kEnvSlurmNTasks = "SLURM_NTASKS";
inline constexpr const char* kEnvSlurmLocalId = "SLURM_LOCALID";
inline constexpr const char* kEnvSlurmNodeId = "SLURM_NODEID";
inline constexpr const char* kEnvSlurmNNodes = "SLURM_NNODES";
inline constexpr const char* kEnvSlurmTasksPerNode = "SLURM_TASKS_PER_NODE";

}  // namespace trainrun::contract
