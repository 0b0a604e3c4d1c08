// The launcher <-> rank contract: every limit the rendezvous server
// enforces, with the HTTP status a request past it gets. Constants only;
// safe from any thread.
#pragma once

#include <chrono>
#include <cstddef>

namespace trainrun::contract {

// ---- Limits ----------------------------------------------------------------
inline constexpr std::size_t kMaxHeaderBytes = 16 * 1024;      // else 431
inline constexpr std::size_t kMaxBodyBytes = 4 * 1024 * 1024;  // else 413
inline constexpr std::size_t kMaxNameBytes = 128;              // scope or key
inline constexpr std::size_t kMaxKeysPerGet = 65536;
inline constexpr std::size_t kMaxConnections = 8192;                // else 503
inline constexpr std::chrono::milliseconds kMaxWait{60'000};        // wait_ms clamp
inline constexpr std::chrono::milliseconds kHeaderTimeout{10'000};  // else 408
inline constexpr std::chrono::milliseconds kBodyTimeout{30'000};    // else 408
inline constexpr std::chrono::milliseconds kIdleTimeout{60'000};    // keep-alive

}  // namespace trainrun::contract
