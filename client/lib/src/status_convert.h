// Wire status tables (schema/response.fbs) → librecon's plain structs (recon/client/status.h).
#pragma once

#include "recon/client/status.h"
#include "schema/response_generated.h"

namespace recon::client::detail {

DaemonStatus status_from_wire(const wire::StatusReport& report);
ModelStatus model_from_wire(const wire::ModelStatus* model);

}  // namespace recon::client::detail
