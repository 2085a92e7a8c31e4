// Renders a DaemonStatus (and model lists) as reconctl prints them: an nvidia-smi-like text
// summary, or JSON for --json.
#pragma once

#include <string>
#include <vector>

#include "recon/client/status.h"

namespace reconctl {

std::string status_text(const recon::client::DaemonStatus& status);
std::string status_json(const recon::client::DaemonStatus& status);
std::string models_text(const std::vector<recon::client::ModelStatus>& models);
std::string models_json(const std::vector<recon::client::ModelStatus>& models);

}  // namespace reconctl
