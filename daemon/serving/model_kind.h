// ModelKind: the one table of the kinds of model recond serves. A row says how a model of the kind
// is loaded on a device, how its requests are admitted (which named inputs and parameters it
// reads, and the work that makes) and whether it has graphs to warm; the code of each kind lives in
// its own folder (mast3r/, retrieval/, match/). A new kind takes its folder plus one row in
// model_kind.cpp: the generic Infer request reaches it with no change to the transport.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "daemon/serving/model.h"
#include "daemon/serving/model_instance.h"
#include "daemon/serving/model_request.h"
#include "gpu/status.h"

namespace recon::daemon {

class Device;

struct ModelKind {
  std::string_view name;
  // Loads `spec` on `device` (its worker thread) and writes what requests need to know about it
  // into `info` (weight bytes, outputs, image rules). Null for a built-in kind.
  Result<std::unique_ptr<ModelInstance>> (*load)(const ModelSpec& spec, Device& device, ModelInfo& info);
  // Reads a request's inputs and parameters (I/O thread), makes the work its instances run and
  // submits it to the scheduler.
  Status (*admit)(ModelRequest request, Scheduler& scheduler);
  // The named inputs it reads, for messages and docs ("image1, image2").
  std::string_view inputs;
  // Whether ModelInstance::warm builds anything (Warmup requests and start-up warm it).
  bool warms = false;
  // Built in: every device has one instance, made with the device (no weights, not in the catalog).
  bool built_in = false;
  // Whether a model's config may ask for dynamic batching (ModelSpec::batching); the kind's load
  // checks that the model can batch and sets ModelInfo::batching. (MASt3R pairs batch by the
  // daemon's --max-batch instead.)
  bool dynamic_batching = false;
};

// The row of `name`; nullptr for an unknown kind.
const ModelKind* find_model_kind(std::string_view name);
// Whether models of kind `name` have graphs to warm (false for an unknown kind).
bool model_kind_warms(std::string_view name);
// The kinds a LoadModel or the configuration may name, e.g. "mast3r, retrieval".
std::string loadable_model_kinds();

}  // namespace recon::daemon
