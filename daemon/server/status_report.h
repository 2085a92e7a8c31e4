// The GetStatus answer: a ServerSnapshot rendered as a FlatBuffers StatusReport. Pure function.
#pragma once

#include <cstdint>
#include <vector>

#include "daemon/server/server_snapshot.h"

namespace recon::daemon {

std::vector<uint8_t> status_response(uint64_t request_id, const ServerSnapshot& snapshot);

}  // namespace recon::daemon
