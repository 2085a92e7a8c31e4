// ModelKind: the table. See model_kind.h.
#include "daemon/serving/model_kind.h"

#include <iterator>

#include "daemon/serving/mast3r/mast3r_instance.h"
#include "daemon/serving/match/match_instance.h"
#include "daemon/serving/onnx/onnx_instance.h"
#include "daemon/serving/retrieval/retrieval_instance.h"

namespace recon::daemon {
namespace {

constexpr ModelKind kKinds[] = {
    {.name = "mast3r",
     .load = &Mast3rInstance::load,
     .admit = &Mast3rInstance::admit,
     .inputs = "image1, image2",
     .warms = true},
    {.name = "retrieval", .load = &RetrievalInstance::load, .admit = &RetrievalInstance::admit, .inputs = "images"},
    {.name = "match", .load = nullptr, .admit = &MatchInstance::admit, .inputs = "pair", .built_in = true},
    {.name = "onnx",
     .load = &OnnxInstance::load,
     .admit = &OnnxInstance::admit,
     .inputs = "the graph's inputs",
     .dynamic_batching = true},
};

}  // namespace

const ModelKind* find_model_kind(std::string_view name) {
  for (const ModelKind& kind : kKinds) {
    if (kind.name == name) return &kind;
  }
  return nullptr;
}

bool model_kind_warms(std::string_view name) {
  const ModelKind* kind = find_model_kind(name);
  return kind != nullptr && kind->warms;
}

std::string loadable_model_kinds() {
  std::string out;
  for (const ModelKind& kind : kKinds) {
    if (kind.load != nullptr) out += (out.empty() ? "" : ", ") + std::string(kind.name);
  }
  return out;
}

}  // namespace recon::daemon
