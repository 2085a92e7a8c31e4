// librecon: the C++ client library of recond. Include this one header; link recon::client
// (CMake: find_package(recon)) or `pkg-config --cflags --libs librecon`. docs/CLIENT.md explains
// the model (sessions, shared-memory images, lazy result fetching) with an example.
#pragma once

#include "recon/client/batch.h"
#include "recon/client/client.h"
#include "recon/client/error.h"
#include "recon/client/image_buffer.h"
#include "recon/client/image_pool.h"
#include "recon/client/options.h"
#include "recon/client/result.h"
#include "recon/client/retrieval.h"
#include "recon/client/status.h"
#include "recon/client/types.h"
#include "recon/client/version.h"
