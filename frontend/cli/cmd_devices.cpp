// `mimic devices`: every device of this build, available or not (with the reason).
#include <fmt/format.h>
#include <iostream>
#include <nlohmann/json.hpp>

#include "frontend/api/device.h"
#include "frontend/cli/cli_common.h"

namespace mimic::cli {

Command add_devices_command(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("devices", "List the devices of this build and whether they can be used");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print JSON");
  return {cmd, [json]() {
            std::vector<backends::DeviceInfo> all = devices();
            if (*json) {
              nlohmann::json out = nlohmann::json::array();
              for (const auto& d : all)
                out.push_back({{"name", d.name},
                               {"backend", d.backend},
                               {"available", d.available},
                               {"reason", d.reason},
                               {"description", d.description}});
              std::cout << out.dump(2) << "\n";
              return 0;
            }
            for (const auto& d : all)
              std::cout << fmt::format("{:<18} {:<12} {}\n", d.name,
                                       d.available ? "available" : "unavailable",
                                       d.available ? d.description : d.reason);
            return 0;
          }};
}

}  // namespace mimic::cli
