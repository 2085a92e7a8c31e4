// protocol.h: the version numbers of the recond wire protocol described by schema/*.fbs.
// Bump kProtocolVersion only for changes an old peer would misread (see the rules in
// common.fbs); additive changes (new fields, new union members) keep it.
#pragma once

#include <cstdint>

namespace recon::wire {

// The version this build writes into Request/Response.protocol_version.
inline constexpr uint32_t kProtocolVersion = 1;
// The oldest version this build still reads.
inline constexpr uint32_t kMinProtocolVersion = 1;

}  // namespace recon::wire
