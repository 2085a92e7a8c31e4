// RECON_CLIENT_API marks what librecon exports; everything else in the shared library is hidden
// (built with -fvisibility=hidden), so its internals (FlatBuffers, ZeroMQ glue) never clash with
// a program's own copies.
#pragma once

#if defined(RECON_CLIENT_BUILDING)
#define RECON_CLIENT_API __attribute__((visibility("default")))
#else
#define RECON_CLIENT_API
#endif
