// The figures SimKernel's rules share across its files (model/sim_kernel*.cpp): Linux's default
// sizes and what every poller reports. Only those files include it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "realloop/kernel.hpp"

namespace loopsim::model::limits {

inline constexpr int stdio_fds = 3;  // 0, 1 and 2 are taken, as in any process
// K13: Linux's default pipe buffer (16 pages), and the size up to which a write is atomic.
inline constexpr std::size_t pipe_default_capacity = 65536;
inline constexpr std::size_t pipe_max_size = 1048576;  // /proc/sys/fs/pipe-max-size's default
inline constexpr std::size_t page_size = 4096;
inline constexpr std::size_t pair_capacity = 212992;  // K15: net.core.wmem_default, a unix socket's send buffer
inline constexpr std::size_t pipe_atomic = 4096;

// Reported whatever the interest, as epoll always reports EPOLLHUP and EPOLLERR; the peer's
// close is reported too, as if every registration asked for EPOLLRDHUP (LinuxKernel does).
inline constexpr std::uint32_t always_reported = io::hangup | io::error | io::read_hangup;

}  // namespace loopsim::model::limits
