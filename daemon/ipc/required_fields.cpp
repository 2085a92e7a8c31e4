// required_fields: see required_fields.h.
#include "daemon/ipc/required_fields.h"

#include <string>

namespace recon::daemon {
namespace {

Status absent(const std::string& field) {
  return invalid_argument(field + " is absent");
}

// A union whose type names a table this build knows, but whose table is missing. An unknown type
// (a newer client) is left to the handler, which answers UNIMPLEMENTED.
template <typename Enum, size_t N>
bool known_but_missing(Enum type, const void* table, const Enum (&known)[N]) {
  if (type == Enum::NONE || table != nullptr) return false;
  for (Enum k : known) {
    if (k == type) return true;
  }
  return false;
}

Status check_image(const wire::Image* image, const std::string& field) {
  if (image == nullptr) return absent(field);
  if (image->source_type() == wire::ImageSource::NONE ||
      known_but_missing(image->source_type(), image->source(), wire::EnumValuesImageSource())) {
    return absent(field + ".source");
  }
  if (const wire::ImageRef* ref = image->source_as_ImageRef(); ref != nullptr && ref->region_id() == nullptr) {
    return absent(field + ".source.region_id");
  }
  return Status::ok();
}

Status check_images(const flatbuffers::Vector<flatbuffers::Offset<wire::Image>>* images, const char* verb) {
  if (images == nullptr) return Status::ok();  // the handler answers "has no images"
  for (flatbuffers::uoffset_t i = 0; i < images->size(); ++i) {
    RECON_RETURN_IF_ERROR(check_image(images->Get(i), std::string(verb) + ".images[" + std::to_string(i) + "]"));
  }
  return Status::ok();
}

Status check_fetch(const wire::Fetch& fetch) {
  if (fetch.handle() == nullptr) return absent("Fetch.handle");
  if (fetch.destination_type() == wire::FetchDestination::NONE ||
      known_but_missing(fetch.destination_type(), fetch.destination(), wire::EnumValuesFetchDestination())) {
    return absent("Fetch.destination");
  }
  if (const auto* region = fetch.destination_as_RegionDestination(); region != nullptr && !region->region_id()) {
    return absent("Fetch.destination.region_id");
  }
  return Status::ok();
}

Status check_parameters(const flatbuffers::Vector<flatbuffers::Offset<wire::Parameter>>* parameters, const char* verb) {
  if (parameters == nullptr) return Status::ok();
  for (flatbuffers::uoffset_t i = 0; i < parameters->size(); ++i) {
    if (parameters->Get(i)->name() == nullptr) {
      return absent(std::string(verb) + ".parameters[" + std::to_string(i) + "].name");
    }
  }
  return Status::ok();
}

Status check_infer(const wire::Infer& infer) {
  if (infer.model() == nullptr) return absent("Infer.model");
  RECON_RETURN_IF_ERROR(check_parameters(infer.parameters(), "Infer"));
  if (infer.inputs() == nullptr) return Status::ok();  // the model's kind names what is missing
  for (flatbuffers::uoffset_t i = 0; i < infer.inputs()->size(); ++i) {
    const wire::NamedInput* input = infer.inputs()->Get(i);
    const std::string field = "Infer.inputs[" + std::to_string(i) + "]";
    if (input->name() == nullptr) return absent(field + ".name");
    if (input->source_type() == wire::InputSource::NONE ||
        known_but_missing(input->source_type(), input->source(), wire::EnumValuesInputSource())) {
      return absent(field + ".source");
    }
    if (input->source_type() == wire::InputSource::Image) {
      RECON_RETURN_IF_ERROR(check_image(input->source_as_Image(), field + ".source"));
    }
    if (const wire::ResultRef* ref = input->source_as_ResultRef(); ref != nullptr && ref->handle() == nullptr) {
      return absent(field + ".source.handle");
    }
    if (const wire::TensorInput* t = input->source_as_TensorInput(); t != nullptr) {
      if (t->shape() == nullptr) return absent(field + ".source.shape");
      if ((t->region_id() == nullptr) == (t->data() == nullptr)) {
        return invalid_argument(field + ".source needs exactly one of region_id and data");
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status check_required_fields(const wire::Request& request) {
  const wire::RequestBody type = request.body_type();
  if (known_but_missing(type, request.body(), wire::EnumValuesRequestBody())) {
    return absent(std::string(wire::EnumNameRequestBody(type)) + " request's body");
  }
  switch (type) {
    case wire::RequestBody::UnregisterRegion:
      if (request.body_as_UnregisterRegion()->region_id() == nullptr) return absent("UnregisterRegion.region_id");
      return Status::ok();
    case wire::RequestBody::InferPair: {
      const wire::InferPair* pair = request.body_as_InferPair();
      RECON_RETURN_IF_ERROR(check_image(pair->image1(), "InferPair.image1"));
      return check_image(pair->image2(), "InferPair.image2");
    }
    case wire::RequestBody::InferBatch:
      return check_images(request.body_as_InferBatch()->images(), "InferBatch");
    case wire::RequestBody::EncodeRetrieval:
      return check_images(request.body_as_EncodeRetrieval()->images(), "EncodeRetrieval");
    case wire::RequestBody::Match:
      if (request.body_as_Match()->source() == nullptr) return absent("Match.source");
      return Status::ok();
    case wire::RequestBody::Infer:
      return check_infer(*request.body_as_Infer());
    case wire::RequestBody::Fetch:
      return check_fetch(*request.body_as_Fetch());
    case wire::RequestBody::LoadModel: {
      const wire::LoadModel* load = request.body_as_LoadModel();
      if (load->name() == nullptr) return absent("LoadModel.name");
      if (load->weights() == nullptr) return absent("LoadModel.weights");
      return Status::ok();
    }
    case wire::RequestBody::UnloadModel:
      if (request.body_as_UnloadModel()->name() == nullptr) return absent("UnloadModel.name");
      return Status::ok();
    case wire::RequestBody::StartJob: {
      const wire::StartJob* job = request.body_as_StartJob();
      if (job->job() == nullptr) return absent("StartJob.job");
      RECON_RETURN_IF_ERROR(check_parameters(job->parameters(), "StartJob"));
      return check_images(job->images(), "StartJob");
    }
    default:
      // OpenSession, RegisterRegion, Release, GetStatus, Warmup: every field has a meaning when
      // absent (no name, the memfd's size, nothing to release, defaults).
      return Status::ok();
  }
}

}  // namespace recon::daemon
