#include "backends/cpu/threading.h"

#include <strings.h>

#include <cstdlib>

namespace mimic::backends::cpu {

bool workers_sleep() {
  static const bool sleep = [] {
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    return policy && strcasecmp(policy, "passive") == 0;
  }();
  return sleep;
}

}  // namespace mimic::backends::cpu
