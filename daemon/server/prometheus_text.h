// A ServerSnapshot in the Prometheus text exposition format (version 0.0.4), with Triton's
// metric vocabulary under the recon_ prefix. Pure function; the HTTP side is metrics_http.h.
#pragma once

#include <string>

#include "daemon/server/server_snapshot.h"

namespace recon::daemon {

std::string prometheus_text(const ServerSnapshot& snapshot);

// Escapes a label value (backslash, double quote, newline).
std::string prometheus_label(std::string_view value);

}  // namespace recon::daemon
