// Request generation for the fuzzer: see request_generator.h.
#include "tests/daemon/fuzz/request_generator.h"

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "daemon/ipc/wire_convert.h"
#include "schema/protocol.h"
#include "schema/request_generated.h"

namespace recon::daemon::fuzz {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

// Generation state for one request.
class Generator {
 public:
  Generator(FuzzInput& in, const FuzzContext& context) : in_(in), context_(context) {}

  FuzzRequest request() {
    FuzzRequest out;
    const uint8_t socket = in_.byte() % 100;
    out.socket = socket < 70 ? Socket::kClient : socket < 85 ? Socket::kManager : Socket::kRegions;
    if (in_.chance(4)) {  // the bytes as they came: the verifier's own path
      out.bytes = in_.rest();
      out.raw = true;
      return out;
    }
    const wire::RequestBody type = body_type();
    // Mostly the verb's own table; sometimes another verb's table under this type.
    const wire::RequestBody built = in_.chance(8) ? body_type() : type;
    const Offset<void> body = in_.chance(5) ? Offset<void>() : build_body(built);
    wire::RequestBuilder request(b_);
    request.add_protocol_version(in_.chance(92) ? wire::kProtocolVersion : in_.edgy_u32());
    out.request_id = in_.u64();
    request.add_request_id(out.request_id);
    if (const uint8_t session = in_.byte() % 8; session != 0) {
      const wire::Id128 token = to_wire(session < 6 ? context_.session : id({}));
      request.add_session(&token);
    }
    request.add_body_type(type);
    if (!body.IsNull()) request.add_body(body);
    wire::FinishRequestBuffer(b_, request.Finish());
    out.bytes.assign(b_.GetBufferPointer(), b_.GetBufferPointer() + b_.GetSize());
    if (type == wire::RequestBody::RegisterRegion || in_.chance(3)) {
      const uint8_t attach = in_.byte() % 10;
      out.attachment = attach < 6   ? Attachment::kSealedMemfd
                       : attach < 8 ? Attachment::kUnsealedMemfd
                                    : Attachment::kNone;
    }
    return out;
  }

 private:
  wire::RequestBody body_type() {
    // A byte as the type: mostly unknown (or NONE), and StartJob / CancelJob / Infer when it is
    // 14 / 15 / 16.
    if (in_.chance(3)) return static_cast<wire::RequestBody>(in_.byte());
    // The 13 verbs before the long jobs, drawn as they were when the kept findings were made, so
    // that those inputs still make the same requests (tests/daemon/fuzz/findings).
    constexpr size_t kDrawnVerbs = 13;
    static_assert(std::extent_v<std::remove_reference_t<decltype(wire::EnumValuesRequestBody())>> > kDrawnVerbs);
    return wire::EnumValuesRequestBody()[1 + in_.below(kDrawnVerbs)];
  }

  // A live id from `live`, zero, random, or the session token (an id of the wrong kind).
  Id128 id(const std::vector<Id128>& live) {
    switch (in_.byte() % 5) {
      case 0:
      case 1:
        if (!live.empty()) return live[in_.below(live.size())];
        return Id128{};
      case 2:
        return Id128{};
      case 3:
        return context_.session;
      default:
        return Id128{in_.u64(), in_.u64()};
    }
  }
  // An id field: absent (nullptr), or one of id()'s; `storage` keeps the struct alive.
  const wire::Id128* id_field(const std::vector<Id128>& live, wire::Id128& storage) {
    if (in_.chance(12)) return nullptr;
    storage = to_wire(id(live));
    return &storage;
  }

  Offset<flatbuffers::String> maybe_string(std::initializer_list<const char*> usual, size_t max_random = 24) {
    const uint8_t what = in_.byte() % 10;
    if (what == 0) return 0;
    if (what < 7) return b_.CreateString(*(usual.begin() + in_.below(usual.size())));
    return b_.CreateString(in_.text(max_random));
  }

  Offset<wire::Image> image() {
    if (in_.chance(3)) return wire::CreateImage(b_);  // no source at all
    const uint8_t source = in_.byte() % 10;
    wire::ImageSource type = source < 5   ? wire::ImageSource::ImageRef
                             : source < 9 ? wire::ImageSource::InlineImage
                                          : static_cast<wire::ImageSource>(in_.byte());
    Offset<void> table;
    const bool native = in_.chance(60);
    const uint32_t height = native ? context_.image_height : in_.chance(50) ? in_.byte() % 80 : in_.edgy_u32();
    const uint32_t width = native ? context_.image_width : in_.chance(50) ? in_.byte() % 80 : in_.edgy_u32();
    const auto format = in_.chance(90) ? wire::PixelFormat::RGB8 : static_cast<wire::PixelFormat>(in_.byte());
    if (type == wire::ImageSource::ImageRef) {
      wire::Id128 storage;
      const wire::Id128* region = id_field(context_.regions, storage);
      const uint64_t offset = in_.chance(70) ? in_.byte() * uint64_t{64} : in_.edgy_u64();
      const uint32_t stride = in_.chance(70) ? width * 3 : in_.edgy_u32();
      table = wire::CreateImageRef(b_, region, offset, height, width, stride, format).Union();
    } else if (type == wire::ImageSource::InlineImage) {
      Offset<flatbuffers::Vector<uint8_t>> data;
      const uint64_t exact = uint64_t{height} * width * 3;
      if (in_.chance(70) && exact <= 64 * 80 * 3) {
        std::vector<uint8_t> pixels(exact, in_.byte());
        data = b_.CreateVector(pixels);
      } else if (in_.chance(80)) {
        data = b_.CreateVector(std::vector<uint8_t>(in_.below(400), 7));
      }
      table = wire::CreateInlineImage(b_, height, width, format, data).Union();
    }
    if (in_.chance(6)) table = Offset<void>();  // the union's table left out
    return wire::CreateImage(b_, type, table);
  }

  Offset<flatbuffers::Vector<Offset<wire::Image>>> images(size_t max) {
    if (in_.chance(8)) return 0;
    std::vector<Offset<wire::Image>> list;
    const size_t count = in_.below(max + 1);
    for (size_t i = 0; i < count; ++i) list.push_back(image());
    return b_.CreateVector(list);
  }

  Offset<flatbuffers::Vector<Offset<flatbuffers::String>>> names(size_t max) {
    if (in_.chance(30)) return 0;
    std::vector<Offset<flatbuffers::String>> list;
    const size_t count = in_.below(max + 1);
    for (size_t i = 0; i < count; ++i) {
      list.push_back(maybe_string({"pts3d_1", "pts3d_2", "conf_1", "conf_2", "desc_1", "desc_2", "desc_conf_1",
                                   "desc_conf_2", "matches_1", "embeddings", "", "bogus"}));
      if (list.back().IsNull()) list.back() = b_.CreateString("");
    }
    return b_.CreateVector(list);
  }

  Offset<flatbuffers::Vector<const wire::Resolution*>> resolutions(size_t max) {
    if (in_.chance(40)) return 0;
    std::vector<wire::Resolution> list;
    const size_t count = in_.below(max + 1);
    for (size_t i = 0; i < count; ++i) {
      // Small sides only where they are valid: a huge valid one would be a real (slow) warm-up.
      list.emplace_back(in_.chance(50) ? 16 * in_.below(8) : in_.edgy_u32(),
                        in_.chance(50) ? 16 * in_.below(8) : in_.edgy_u32());
    }
    return b_.CreateVectorOfStructs(list);
  }

  Offset<wire::InferOptions> options() {
    if (in_.chance(40)) return 0;
    std::optional<wire::Resolution> resolution;
    if (in_.flag()) {
      resolution = in_.flag() ? wire::Resolution(context_.image_height, context_.image_width)
                              : wire::Resolution(in_.edgy_u32(), in_.edgy_u32());
    }
    const auto outputs = names(4);
    const auto precision = in_.chance(80) ? wire::Precision::DEFAULT : static_cast<wire::Precision>(in_.byte());
    return wire::CreateInferOptions(b_, resolution ? &*resolution : nullptr, outputs, precision, in_.edgy_u32(),
                                    in_.edgy_u32());
  }

  float confidence() {
    static constexpr float kValues[] = {
        0.0f, 0.5f, 1.0f, -1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
        1e30f};
    return in_.pick(kValues);
  }

  Offset<void> build_body(wire::RequestBody type) {
    wire::Id128 storage;
    switch (type) {
      case wire::RequestBody::OpenSession:
        return wire::CreateOpenSession(b_, maybe_string({"fuzz", ""}, 100)).Union();
      case wire::RequestBody::RegisterRegion:
        return wire::CreateRegisterRegion(b_, in_.chance(50) ? 4096 : in_.edgy_u64(), maybe_string({"fuzz"}, 100))
            .Union();
      case wire::RequestBody::UnregisterRegion:
        return wire::CreateUnregisterRegion(b_, id_field(context_.regions, storage)).Union();
      case wire::RequestBody::InferPair: {
        const auto model = maybe_string({"mast3r", "", "retrieval", "nope"});
        const auto first = in_.chance(95) ? image() : Offset<wire::Image>();
        const auto second = in_.chance(95) ? image() : Offset<wire::Image>();
        return wire::CreateInferPair(b_, model, first, second, options()).Union();
      }
      case wire::RequestBody::InferBatch: {
        const auto model = maybe_string({"mast3r", "", "nope"});
        const auto list = images(5);
        Offset<flatbuffers::Vector<const wire::ImagePair*>> pairs;
        if (in_.flag()) {
          std::vector<wire::ImagePair> p;
          for (size_t i = in_.below(6); i > 0; --i)
            p.emplace_back(in_.byte() % 7, in_.chance(90) ? in_.byte() % 7 : in_.edgy_u32());
          pairs = b_.CreateVectorOfStructs(p);
        }
        return wire::CreateInferBatch(b_, model, list, pairs, in_.flag(), options(), in_.flag()).Union();
      }
      case wire::RequestBody::EncodeRetrieval: {
        const auto model = maybe_string({"retrieval", "", "mast3r"});
        const auto list = images(4);
        return wire::CreateEncodeRetrieval(b_, model, list, options(), in_.chance(70) ? in_.byte() % 5 : in_.edgy_u32())
            .Union();
      }
      case wire::RequestBody::Match:
        return wire::CreateMatch(b_, id_field(context_.handles, storage), in_.edgy_u32(),
                                 in_.chance(60) ? in_.byte() % 20 : in_.edgy_u32(), confidence())
            .Union();
      case wire::RequestBody::Fetch: {
        const wire::Id128* handle = id_field(context_.handles, storage);
        const auto tensors = names(4);
        wire::FetchDestination destination_type = wire::FetchDestination::NONE;
        Offset<void> destination;
        switch (in_.byte() % 6) {
          case 0:
          case 1:
          case 2: {
            destination_type = wire::FetchDestination::RegionDestination;
            wire::Id128 region_storage;
            const wire::Id128* region = id_field(context_.regions, region_storage);
            const uint64_t offset = in_.chance(60) ? in_.byte() * uint64_t{256} : in_.edgy_u64();
            const uint64_t capacity = in_.chance(60) ? 0 : in_.edgy_u64();
            const uint32_t alignment = in_.chance(60) ? 0 : in_.edgy_u32();
            destination = wire::CreateRegionDestination(b_, region, offset, capacity, alignment).Union();
            break;
          }
          case 3:
            destination_type = wire::FetchDestination::InlineDestination;
            destination = wire::CreateInlineDestination(b_).Union();
            break;
          case 4:
            destination_type = static_cast<wire::FetchDestination>(in_.byte());
            break;
          default:
            break;
        }
        if (in_.chance(6)) destination = Offset<void>();
        return wire::CreateFetch(b_, handle, tensors, destination_type, destination, in_.chance(20)).Union();
      }
      case wire::RequestBody::Release: {
        if (in_.chance(10)) return wire::CreateRelease(b_).Union();
        std::vector<wire::Id128> handles;
        // Rarely the live ones: released handles are gone for the rest of the run.
        for (size_t i = in_.below(5); i > 0; --i) {
          handles.push_back(to_wire(in_.chance(10) ? id(context_.handles) : Id128{in_.u64(), in_.u64()}));
        }
        return wire::CreateRelease(b_, b_.CreateVectorOfStructs(handles)).Union();
      }
      case wire::RequestBody::GetStatus:
        return wire::CreateGetStatus(b_, in_.flag()).Union();
      case wire::RequestBody::Warmup: {
        const auto models = names(3);
        return wire::CreateWarmup(b_, models, resolutions(3)).Union();
      }
      case wire::RequestBody::LoadModel: {
        const auto name = maybe_string({"extra", "mast3r", "", "a/b", "../x"});
        const auto kind = maybe_string({"mast3r", "onnx", "retrieval", ""});
        const auto weights = maybe_string({"model.safetensors", "../etc/passwd", "/abs", "", "tiny", "."});
        const auto precision = static_cast<wire::Precision>(in_.byte() % 6);
        const auto sizes = resolutions(2);
        const bool warm = in_.flag();
        const uint32_t version = in_.chance(20) ? in_.edgy_u32() : 0;
        const auto backbone = maybe_string({"mast3r", "", "nope"});
        return wire::CreateLoadModel(b_, name, kind, weights, precision, sizes, warm, version, backbone).Union();
      }
      case wire::RequestBody::StartJob: {
        const auto job = maybe_string({"reconstruct", "", "nope"});
        const auto model = maybe_string({"mast3r", "", "retrieval", "nope"});
        const auto list = images(5);
        // Short alignments only: a job runs to its end inside one exchange of the fuzzer.
        static constexpr const char* kNames[] = {"pairs",    "niter1", "niter2",         "subsample", "optim",
                                                 "min_conf", "lr1",    "pairs_per_step", "nope",      ""};
        static constexpr const char* kValues[] = {"complete", "swin-1", "logwin-2", "oneref-0", "retrieval-2-2",
                                                  "0",        "3",      "-1",       "x",        "1e9",
                                                  "8",        "coarse", "nan",      ""};
        std::vector<Offset<wire::Parameter>> parameters{
            wire::CreateParameter(b_, b_.CreateString("niter1"), b_.CreateString("5")),
            wire::CreateParameter(b_, b_.CreateString("niter2"), b_.CreateString("5"))};
        for (size_t i = in_.below(4); i > 0; --i) {
          const auto name = in_.chance(90) ? b_.CreateString(in_.pick(kNames)) : Offset<flatbuffers::String>();
          parameters.push_back(wire::CreateParameter(b_, name, b_.CreateString(in_.pick(kValues))));
        }
        return wire::CreateStartJob(b_, job, model, list, b_.CreateVector(parameters), options()).Union();
      }
      case wire::RequestBody::CancelJob:
        return wire::CreateCancelJob(b_, in_.chance(50) ? in_.byte() : in_.u64()).Union();
      case wire::RequestBody::Infer: {
        const auto model = maybe_string({"mast3r", "match", "retrieval", "", "nope"});
        std::vector<Offset<wire::NamedInput>> inputs;
        for (size_t i = in_.below(5); i > 0; --i) {
          const auto name = maybe_string({"image1", "image2", "images", "pair", "x"});
          if (in_.flag()) {
            inputs.push_back(wire::CreateNamedInput(b_, name, wire::InputSource::Image, image().Union()));
          } else {
            wire::Id128 storage;
            const wire::Id128* handle = id_field(context_.handles, storage);
            const auto tensor = maybe_string({"", "desc_1", "pts3d_1", "nope"});
            const auto ref = wire::CreateResultRef(b_, handle, tensor);
            const auto type =
                in_.chance(90) ? wire::InputSource::ResultRef : static_cast<wire::InputSource>(in_.byte());
            inputs.push_back(wire::CreateNamedInput(b_, name, type, ref.Union()));
          }
        }
        static constexpr const char* kNames[] = {"top_k", "subsample", "max_matches", "min_confidence", "nope"};
        static constexpr const char* kValues[] = {"0", "1", "4", "8", "-1", "x", "nan", "inf", "1e30", ""};
        std::vector<Offset<wire::Parameter>> parameters;
        for (size_t i = in_.below(3); i > 0; --i) {
          parameters.push_back(
              wire::CreateParameter(b_, b_.CreateString(in_.pick(kNames)), b_.CreateString(in_.pick(kValues))));
        }
        return wire::CreateInfer(b_, model, b_.CreateVector(inputs), b_.CreateVector(parameters), options()).Union();
      }
      case wire::RequestBody::UnloadModel:
        // Never the served model: unloading it would end the run's coverage of inference.
        return wire::CreateUnloadModel(b_, maybe_string({"nope", "", "retrieval"})).Union();
      default:
        return wire::CreateGetStatus(b_).Union();  // a table of some other kind under an unknown type
    }
  }

  FuzzInput& in_;
  const FuzzContext& context_;
  FlatBufferBuilder b_{1024};
};

}  // namespace

FuzzRequest generate_request(FuzzInput& in, const FuzzContext& context) {
  return Generator(in, context).request();
}

}  // namespace recon::daemon::fuzz
