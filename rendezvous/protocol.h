// The launcher <-> worker contract: environment names, the HTTP URL scheme,
// authentication header names and every limit the rendezvous enforces.
// This header is the single source of truth: nothing else spells these
// strings or numbers. Constants only; no state, safe from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trainrun::protocol {

// ---- Worker environment (DESIGN §3) -------------------------------------
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
// Network interface Gloo binds to; the launcher sets it when it knows better
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
// gloo backend then uses its TCP mesh everywhere); 1, the default, allows it
// (launcher --no-shm sets 0).
inline constexpr const char* kEnvShm = "TRAINRUN_SHM";
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
// Elastic jobs (rendezvous/elastic_protocol.h): "1" when the launcher may
// change the job's membership; this process's stable worker id; and the
// seconds a worker waits for a generation that includes it (launcher
// --elastic-timeout).
inline constexpr const char* kEnvElastic = "TRAINRUN_ELASTIC";
inline constexpr const char* kEnvWorkerId = "TRAINRUN_WORKER_ID";
inline constexpr const char* kEnvElasticTimeout = "TRAINRUN_ELASTIC_TIMEOUT";
// CPU binding of each rank (launcher --bind-to core|socket|numa): the host
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
inline constexpr const char* kJobEnv[] = {kEnvBackend, kEnvIface, kEnvStartTimeout,
                                          kEnvCollectiveTimeout, kEnvCheckCalls};

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
inline constexpr const char* kEnvTorchGroupRank = "GROUP_RANK";            // the host's index (cross rank)
inline constexpr const char* kEnvTorchGroupWorldSize = "GROUP_WORLD_SIZE";  // hosts (cross size)
inline constexpr const char* kEnvTorchRoleRank = "ROLE_RANK";              // = RANK
inline constexpr const char* kEnvTorchRoleWorldSize = "ROLE_WORLD_SIZE";    // = WORLD_SIZE
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

// ---- URL scheme (DESIGN §4) ---------------------------------------------
//   PUT  /v1/kv/{scope}/{key}                      body = opaque bytes
//   GET  /v1/kv/{scope}/{key}?wait_ms=N            200 + bytes, or 404 at timeout
//   GET  /v1/kv/{scope}?keys=a,b,c&wait_ms=N       all keys, framed (see below)
//   GET  /v1/kv/{scope}?prefix=P&first=A&count=N   keys P{A} .. P{A+N-1}, framed
//   POST /v1/kv/{scope}/{key}/add                  body = int64 text -> new value
//   GET  /v1/health
// A multi-key answer is, per requested key in order, an 8-byte little-endian
// length followed by that many bytes. A multi-key 404 lists the missing keys,
// one per line. Scope and key names: 1..kMaxNameBytes of [A-Za-z0-9._-],
// other than "." and "..".
inline constexpr std::string_view kKvPrefix = "/v1/kv/";
inline constexpr std::string_view kHealthPath = "/v1/health";
inline constexpr std::string_view kAddSuffix = "/add";
inline constexpr std::string_view kQueryWaitMs = "wait_ms";
inline constexpr std::string_view kQueryKeys = "keys";
inline constexpr std::string_view kQueryPrefix = "prefix";
inline constexpr std::string_view kQueryFirst = "first";
inline constexpr std::string_view kQueryCount = "count";
inline constexpr std::size_t kFrameLengthBytes = 8;

// Scopes used by trainrun itself.
inline constexpr std::string_view kScopeJob = "job";   // rank.{r} = "host pid backend"
inline constexpr std::string_view kKeyRankPrefix = "rank.";
// For the launcher's JSON report: first_op = rank 0's host, set when the
// engine's first op was ready on every rank; stragglers = the straggler
// table (lib/engine/straggler_tracker.h); timeline_error = "path\nerror"
// when rank 0 could not write the --timeline file.
inline constexpr std::string_view kKeyFirstOp = "first_op";
inline constexpr std::string_view kKeyStragglers = "stragglers";
inline constexpr std::string_view kKeyTimelineError = "timeline_error";
// NCCL start-up: scope nccl.{generation}, key ready.{r} = "ok" (rank 0:
// "ok" + the 128-byte ncclUniqueId) or "no " + why NCCL cannot run there.
inline constexpr std::string_view kScopeNcclPrefix = "nccl.";
inline constexpr std::string_view kKeyNcclReadyPrefix = "ready.";

// ---- Authentication ------------------------------------------------------
// Signature = hex(HMAC-SHA256(secret, METHOD \n TARGET \n BODY_SHA256_HEX \n
//                              TIMESTAMP_MS \n NONCE_HEX)).
inline constexpr std::string_view kHeaderAuthorization = "Authorization";
inline constexpr std::string_view kHeaderTimestamp = "X-Trainrun-Timestamp";
inline constexpr std::string_view kHeaderNonce = "X-Trainrun-Nonce";
inline constexpr std::string_view kHeaderContentSha256 = "X-Trainrun-Content-Sha256";
inline constexpr std::string_view kAuthScheme = "TRAINRUN-HMAC-SHA256";
inline constexpr std::size_t kSecretBytes = 32;
inline constexpr std::size_t kNonceBytes = 16;
// A request whose timestamp is further than this from the server's clock is
// stale; nonces are remembered for twice this long to refuse replays.
inline constexpr std::chrono::milliseconds kMaxClockSkew{120'000};

// ---- Limits ----------------------------------------------------------------
inline constexpr std::size_t kMaxHeaderBytes = 16 * 1024;          // else 431
inline constexpr std::size_t kMaxBodyBytes = 4 * 1024 * 1024;      // else 413
inline constexpr std::size_t kMaxNameBytes = 128;                  // scope or key
inline constexpr std::size_t kMaxKeysPerGet = 65536;
inline constexpr std::size_t kMaxConnections = 8192;               // else 503
inline constexpr std::chrono::milliseconds kMaxWait{60'000};       // wait_ms clamp
inline constexpr std::chrono::milliseconds kHeaderTimeout{10'000}; // else 408
inline constexpr std::chrono::milliseconds kBodyTimeout{30'000};   // else 408
inline constexpr std::chrono::milliseconds kIdleTimeout{60'000};   // keep-alive

}  // namespace trainrun::protocol
