#pragma once

#include <cstdint>

namespace mimic::backends::cpu {

// Whether OpenMP's idle workers sleep (OMP_WAIT_POLICY=passive) instead of spinning a while after
// each parallel region (GNU OpenMP's default), read from the environment as libgomp reads it.
bool workers_sleep();

// The least work (a loop's element count, an op's flops) worth splitting across threads, for a
// loop that pays from `spinning` when idle workers spin. Sleeping workers are woken through the
// kernel: 25 us back to back and 90 us after 0.2 ms of serial work, against 3-15 us when they
// spin (an empty region on 2 cores of a shared VM), so a loop needs 16 times the work to pay.
inline int64_t parallel_threshold(int64_t spinning) {
  return workers_sleep() ? 16 * spinning : spinning;
}

}  // namespace mimic::backends::cpu
