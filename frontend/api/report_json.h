// JSON forms of run and compile reports (for `mimic run --json`, sweeps and Python).
#pragma once

#include <nlohmann/json.hpp>

#include "backends/report.h"

namespace mimic {

nlohmann::json to_json(const backends::OpReport& op);
nlohmann::json to_json(const backends::RunReport& report);
nlohmann::json to_json(const backends::CompileReport& report);

}  // namespace mimic
