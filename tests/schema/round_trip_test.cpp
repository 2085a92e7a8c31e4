// Round trips of every request and response type of the wire protocol through FlatBuffers:
// object → builder → verifier → object must be the identity, and the raw accessors must read
// what was written. Also pins the layout facts other code relies on (struct sizes, identifiers,
// matching union numbers).
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "schema/protocol.h"
#include "schema/request_generated.h"
#include "schema/response_generated.h"

namespace recon::wire {

// Readable parameter names in test output ("GetParam() = InferPair"); found by ADL, so outside
// the anonymous namespace.
void PrintTo(RequestBody type, std::ostream* os) {
  *os << EnumNameRequestBody(type);
}
void PrintTo(ResponseBody type, std::ostream* os) {
  *os << EnumNameResponseBody(type);
}

namespace {

// Structs are frozen: their layout is the wire format.
static_assert(sizeof(Id128) == 16);
static_assert(sizeof(ImagePair) == 8);
static_assert(sizeof(Resolution) == 8);

// A success answer has the number of its request (response.fbs).
#define SAME_NUMBER(req, res) static_assert(static_cast<int>(RequestBody::req) == static_cast<int>(ResponseBody::res))
SAME_NUMBER(OpenSession, SessionOpened);
SAME_NUMBER(RegisterRegion, RegisterRegionResult);
SAME_NUMBER(UnregisterRegion, UnregisterRegionResult);
SAME_NUMBER(InferPair, InferPairResult);
SAME_NUMBER(InferBatch, InferBatchResult);
SAME_NUMBER(EncodeRetrieval, EncodeRetrievalResult);
SAME_NUMBER(Match, MatchResult);
SAME_NUMBER(Fetch, FetchResult);
SAME_NUMBER(Release, ReleaseResult);
SAME_NUMBER(GetStatus, StatusReport);
SAME_NUMBER(Warmup, WarmupResult);
SAME_NUMBER(LoadModel, LoadModelResult);
SAME_NUMBER(UnloadModel, UnloadModelResult);
#undef SAME_NUMBER

// ---- builders of populated objects ---------------------------------------------------------

std::unique_ptr<ImageT> region_image(uint64_t offset) {
  ImageRefT ref;
  ref.region_id = std::make_unique<Id128>(0x1111, 0x2222);
  ref.offset = offset;
  ref.height = 384;
  ref.width = 512;
  ref.stride = 512 * 3 + 64;
  auto image = std::make_unique<ImageT>();
  image->source.Set(std::move(ref));
  return image;
}

std::unique_ptr<ImageT> inline_image() {
  InlineImageT data;
  data.height = 2;
  data.width = 3;
  data.data.assign(2 * 3 * 3, 0);
  for (size_t i = 0; i < data.data.size(); ++i) data.data[i] = static_cast<uint8_t>(i * 7);
  auto image = std::make_unique<ImageT>();
  image->source.Set(std::move(data));
  return image;
}

std::unique_ptr<InferOptionsT> options() {
  auto o = std::make_unique<InferOptionsT>();
  o->resolution = std::make_unique<Resolution>(384, 512);
  o->outputs = {"pts3d_1", "conf_1"};
  o->precision = Precision::FP16;
  o->deadline_ms = 250;
  o->ttl_ms = 60'000;
  return o;
}

std::unique_ptr<TensorInfoT> tensor(const std::string& name, std::vector<uint64_t> shape) {
  auto t = std::make_unique<TensorInfoT>();
  t->name = name;
  t->shape = std::move(shape);
  t->dtype = DType::F16;
  t->byte_size = 2;
  for (uint64_t d : t->shape) t->byte_size *= d;
  return t;
}

std::unique_ptr<ResultHandleT> handle(uint64_t lo) {
  auto h = std::make_unique<ResultHandleT>();
  h->id = std::make_unique<Id128>(lo, ~lo);
  h->tensors.push_back(tensor("pts3d_1", {384, 512, 3}));
  h->tensors.push_back(tensor("conf_1", {384, 512}));
  h->timings = std::make_unique<TimingsT>();
  h->timings->queue_ns = 1000;
  h->timings->compute_ns = 42'000'000;
  h->timings->total_ns = 45'000'000;
  h->timings->batch_size = 4;
  h->ttl_ms = 60'000;
  h->model = "mast3r";
  return h;
}

RequestBodyUnion request_body(RequestBody type) {
  RequestBodyUnion u;
  switch (type) {
    case RequestBody::OpenSession: {
      OpenSessionT b;
      b.client_name = "colmap-import";
      u.Set(std::move(b));
      break;
    }
    case RequestBody::RegisterRegion: {
      RegisterRegionT b;
      b.size = 64 << 20;
      b.label = "frames";
      u.Set(std::move(b));
      break;
    }
    case RequestBody::UnregisterRegion: {
      UnregisterRegionT b;
      b.region_id = std::make_unique<Id128>(7, 8);
      u.Set(std::move(b));
      break;
    }
    case RequestBody::InferPair: {
      InferPairT b;
      b.model = "mast3r";
      b.image1 = region_image(0);
      b.image2 = inline_image();
      b.options = options();
      u.Set(std::move(b));
      break;
    }
    case RequestBody::InferBatch: {
      InferBatchT b;
      for (int i = 0; i < 4; ++i) b.images.push_back(region_image(uint64_t(i) << 20));
      b.pairs = {ImagePair(0, 1), ImagePair(2, 3), ImagePair(0, 3)};
      b.symmetric = true;
      b.options = options();
      b.stream = true;
      u.Set(std::move(b));
      break;
    }
    case RequestBody::EncodeRetrieval: {
      EncodeRetrievalT b;
      b.images.push_back(region_image(0));
      b.images.push_back(inline_image());
      b.options = options();
      b.top_k = 10;
      u.Set(std::move(b));
      break;
    }
    case RequestBody::Match: {
      MatchT b;
      b.source = std::make_unique<Id128>(3, 4);
      b.max_matches = 5000;
      b.subsample = 8;
      b.min_confidence = 1.5f;
      u.Set(std::move(b));
      break;
    }
    case RequestBody::Fetch: {
      FetchT b;
      b.handle = std::make_unique<Id128>(5, 6);
      b.tensors = {"pts3d_1", "desc_1"};
      RegionDestinationT d;
      d.region_id = std::make_unique<Id128>(9, 10);
      d.offset = 4096;
      d.capacity = 1 << 20;
      d.alignment = 256;
      b.destination.Set(std::move(d));
      b.release = true;
      u.Set(std::move(b));
      break;
    }
    case RequestBody::Release: {
      ReleaseT b;
      b.handles = {Id128(1, 2), Id128(3, 4)};
      u.Set(std::move(b));
      break;
    }
    case RequestBody::GetStatus: {
      GetStatusT b;
      b.include_sessions = true;
      u.Set(std::move(b));
      break;
    }
    case RequestBody::Warmup: {
      WarmupT b;
      b.models = {"mast3r"};
      b.resolutions = {Resolution(384, 512), Resolution(512, 512)};
      u.Set(std::move(b));
      break;
    }
    case RequestBody::LoadModel: {
      LoadModelT b;
      b.name = "mast3r";
      b.kind = "mast3r";
      b.weights = "mast3r_vitl_512.safetensors";
      b.precision = Precision::FP16;
      b.resolutions = {Resolution(384, 512)};
      b.warm = false;
      u.Set(std::move(b));
      break;
    }
    case RequestBody::UnloadModel: {
      UnloadModelT b;
      b.name = "mast3r";
      u.Set(std::move(b));
      break;
    }
    case RequestBody::StartJob: {
      StartJobT b;
      b.job = "reconstruct";
      b.images.push_back(region_image(0));
      b.images.push_back(inline_image());
      auto pairs = std::make_unique<ParameterT>();
      pairs->name = "pairs";
      pairs->value = "swin-3";
      b.parameters.push_back(std::move(pairs));
      b.options = options();
      u.Set(std::move(b));
      break;
    }
    case RequestBody::CancelJob: {
      CancelJobT b;
      b.job_request_id = 77;
      u.Set(std::move(b));
      break;
    }
    case RequestBody::Infer: {
      InferT b;
      b.model = "match";
      auto image = std::make_unique<NamedInputT>();
      image->name = "image1";
      image->source.Set(std::move(*region_image(0)));
      b.inputs.push_back(std::move(image));
      auto pair = std::make_unique<NamedInputT>();
      pair->name = "pair";
      ResultRefT ref;
      ref.handle = std::make_unique<Id128>(0x1234, 0x5678);
      ref.tensor = "desc_1";
      pair->source.Set(std::move(ref));
      b.inputs.push_back(std::move(pair));
      auto subsample = std::make_unique<ParameterT>();
      subsample->name = "subsample";
      subsample->value = "4";
      b.parameters.push_back(std::move(subsample));
      b.options = options();
      u.Set(std::move(b));
      break;
    }
    case RequestBody::NONE:
      break;
  }
  return u;
}

ResponseBodyUnion response_body(ResponseBody type) {
  ResponseBodyUnion u;
  switch (type) {
    case ResponseBody::SessionOpened: {
      SessionOpenedT b;
      b.session = std::make_unique<Id128>(0xabc, 0xdef);
      b.limits = std::make_unique<SessionLimitsT>();
      b.limits->max_regions = 64;
      b.limits->max_region_bytes = uint64_t{8} << 30;
      b.server_version = "recond 0.1.0";
      b.min_protocol_version = 1;
      b.max_protocol_version = 1;
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::RegisterRegionResult: {
      RegisterRegionResultT b;
      b.region_id = std::make_unique<Id128>(11, 12);
      b.size = 1 << 20;
      b.zero_copy = true;
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::UnregisterRegionResult: {
      UnregisterRegionResultT b;
      b.deferred = true;
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::InferPairResult: {
      InferPairResultT b;
      b.handle = handle(1);
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::InferBatchResult: {
      InferBatchResultT b;
      b.handles.push_back(handle(2));
      b.handles.push_back(handle(3));
      b.pairs = {ImagePair(0, 1), ImagePair(1, 2)};
      b.first_index = 6;
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::EncodeRetrievalResult: {
      EncodeRetrievalResultT b;
      b.handle = handle(4);
      b.pairs = {ImagePair(0, 5)};
      b.scores = {0.875f};
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::MatchResult: {
      MatchResultT b;
      b.handle = handle(5);
      b.match_count = 1234;
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::FetchResult: {
      FetchResultT b;
      b.handle = std::make_unique<Id128>(5, 6);
      auto fetched = std::make_unique<FetchedTensorT>();
      fetched->info = tensor("conf_1", {2, 2});
      fetched->offset = 0;
      fetched->data = {1, 2, 3, 4, 5, 6, 7, 8};
      b.tensors.push_back(std::move(fetched));
      b.bytes_written = 8;
      b.copy_ns = 900;
      b.released = true;
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::ReleaseResult: {
      ReleaseResultT b;
      b.released = 1;
      b.not_found = {Id128(3, 4)};
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::StatusReport: {
      StatusReportT b;
      b.server_version = "recond 0.1.0";
      b.state = DaemonState::READY;
      b.uptime_s = 3600;
      auto device = std::make_unique<DeviceStatusT>();
      device->name = "NVIDIA H200";
      device->vendor_id = 0x10de;
      device->uuid.assign(16, 0xdd);
      device->capabilities = {"fp16", "external_memory_host"};
      device->device_local_total_bytes = uint64_t{141} << 30;
      device->pool = std::make_unique<PoolStatsT>();
      device->pool->bytes_reserved = 1 << 30;
      device->pool->hits = 99;
      b.devices.push_back(std::move(device));
      auto model = std::make_unique<ModelStatusT>();
      model->name = "mast3r";
      model->state = ModelState::READY;
      model->resolutions = {Resolution(384, 512)};
      b.models.push_back(std::move(model));
      b.queue = std::make_unique<QueueStatsT>();
      b.queue->pending = 3;
      b.throughput = std::make_unique<ThroughputStatsT>();
      b.throughput->pairs_per_s = 12.5;
      auto latency = std::make_unique<LatencyStatsT>();
      latency->stage = "total";
      latency->p50_us = 80'000;
      latency->p99_us = 120'000;
      b.latency.push_back(std::move(latency));
      b.sessions_open = 2;
      auto session = std::make_unique<SessionStatusT>();
      session->client_name = "bench";
      session->pid = 1234;
      b.sessions.push_back(std::move(session));
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::WarmupResult: {
      WarmupResultT b;
      auto model = std::make_unique<ModelStatusT>();
      model->name = "mast3r";
      b.models.push_back(std::move(model));
      b.duration_ms = 5000;
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::LoadModelResult: {
      LoadModelResultT b;
      b.model = std::make_unique<ModelStatusT>();
      b.model->name = "retrieval";
      b.model->state = ModelState::FAILED;
      b.model->error = "missing tensor";
      b.duration_ms = 10;
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::UnloadModelResult:
      u.Set(UnloadModelResultT());
      break;
    case ResponseBody::JobEvent: {
      JobEventT b;
      b.stage = "align-fine";
      b.done = 120;
      b.total = 300;
      b.loss = 0.25f;
      b.message = "pair (3, 7) has no matches: dropped";
      b.elapsed_ms = 4200;
      b.result = handle(5);
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::CancelJobResult: {
      CancelJobResultT b;
      b.cancelled = true;
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::InferResult: {
      InferResultT b;
      b.handle = handle(0x77);
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::Error: {
      ErrorT b;
      b.code = ErrorCode::RESOURCE_EXHAUSTED;
      b.message = "client already holds 64 regions (limit 64)";
      b.retry_after_ms = 100;
      u.Set(std::move(b));
      break;
    }
    case ResponseBody::NONE:
      break;
  }
  return u;
}

template <typename Enum, size_t N>
std::vector<Enum> all_but_none(const Enum (&values)[N]) {
  std::vector<Enum> out;
  for (Enum v : values) {
    if (v != Enum::NONE) out.push_back(v);
  }
  return out;
}

// ---- tests ------------------------------------------------------------------------------------

class RequestRoundTrip : public ::testing::TestWithParam<RequestBody> {};

TEST_P(RequestRoundTrip, PacksVerifiesAndUnpacksToTheSameObject) {
  RequestT in;
  in.protocol_version = kProtocolVersion;
  in.request_id = 0x0123456789abcdefULL;
  in.session = std::make_unique<Id128>(0xfeed, 0xbeef);
  in.body = request_body(GetParam());
  ASSERT_EQ(in.body.type, GetParam());

  flatbuffers::FlatBufferBuilder builder;
  FinishRequestBuffer(builder, Request::Pack(builder, &in));
  flatbuffers::Verifier verifier(builder.GetBufferPointer(), builder.GetSize());
  ASSERT_TRUE(VerifyRequestBuffer(verifier));
  ASSERT_TRUE(RequestBufferHasIdentifier(builder.GetBufferPointer()));

  const Request* raw = GetRequest(builder.GetBufferPointer());
  EXPECT_EQ(raw->protocol_version(), kProtocolVersion);
  EXPECT_EQ(raw->request_id(), 0x0123456789abcdefULL);
  ASSERT_NE(raw->session(), nullptr);
  EXPECT_EQ(raw->session()->lo(), 0xfeedu);
  EXPECT_EQ(raw->body_type(), GetParam());

  std::unique_ptr<RequestT> out(raw->UnPack());
  EXPECT_TRUE(*out == in) << EnumNameRequestBody(GetParam());
}

INSTANTIATE_TEST_SUITE_P(EveryRequest, RequestRoundTrip, ::testing::ValuesIn(all_but_none(EnumValuesRequestBody())),
                         [](const auto& info) { return std::string(EnumNameRequestBody(info.param)); });

class ResponseRoundTrip : public ::testing::TestWithParam<ResponseBody> {};

TEST_P(ResponseRoundTrip, PacksVerifiesAndUnpacksToTheSameObject) {
  ResponseT in;
  in.protocol_version = kProtocolVersion;
  in.request_id = 77;
  in.final = false;
  in.body = response_body(GetParam());
  ASSERT_EQ(in.body.type, GetParam());

  flatbuffers::FlatBufferBuilder builder;
  FinishResponseBuffer(builder, Response::Pack(builder, &in));
  flatbuffers::Verifier verifier(builder.GetBufferPointer(), builder.GetSize());
  ASSERT_TRUE(VerifyResponseBuffer(verifier));

  const Response* raw = GetResponse(builder.GetBufferPointer());
  EXPECT_EQ(raw->request_id(), 77u);
  EXPECT_FALSE(raw->final());
  EXPECT_EQ(raw->body_type(), GetParam());

  std::unique_ptr<ResponseT> out(raw->UnPack());
  EXPECT_TRUE(*out == in) << EnumNameResponseBody(GetParam());
}

INSTANTIATE_TEST_SUITE_P(EveryResponse, ResponseRoundTrip, ::testing::ValuesIn(all_but_none(EnumValuesResponseBody())),
                         [](const auto& info) { return std::string(EnumNameResponseBody(info.param)); });

TEST(Schema, CoversEveryRequestWithAnAnswer) {
  // 16 requests; 16 answers plus Error.
  EXPECT_EQ(all_but_none(EnumValuesRequestBody()).size(), 16u);
  EXPECT_EQ(all_but_none(EnumValuesResponseBody()).size(), 17u);
}

TEST(Schema, RequestsAndResponsesHaveDistinctIdentifiers) {
  EXPECT_STREQ(RequestIdentifier(), "RCNQ");
  EXPECT_STREQ(ResponseIdentifier(), "RCNA");

  flatbuffers::FlatBufferBuilder builder;
  ResponseT response;
  response.protocol_version = kProtocolVersion;
  response.body = response_body(ResponseBody::Error);
  FinishResponseBuffer(builder, Response::Pack(builder, &response));
  flatbuffers::Verifier verifier(builder.GetBufferPointer(), builder.GetSize());
  EXPECT_FALSE(VerifyRequestBuffer(verifier));  // a response is never taken for a request
}

TEST(Schema, AbsentFieldsReadAsTheDocumentedDefaults) {
  flatbuffers::FlatBufferBuilder builder;
  const auto body = CreateImageRef(builder);
  const auto image = CreateImage(builder, ImageSource::ImageRef, body.Union());
  const auto pair = CreateInferPair(builder, 0, image);
  RequestBuilder request(builder);
  request.add_body_type(RequestBody::InferPair);
  request.add_body(pair.Union());
  FinishRequestBuffer(builder, request.Finish());

  const Request* raw = GetRequest(builder.GetBufferPointer());
  EXPECT_EQ(raw->protocol_version(), 0u);  // absent: verify_request refuses it
  EXPECT_EQ(raw->session(), nullptr);
  const ImageRef* ref = raw->body_as_InferPair()->image1()->source_as_ImageRef();
  EXPECT_EQ(ref->format(), PixelFormat::RGB8);
  EXPECT_EQ(ref->region_id(), nullptr);

  flatbuffers::FlatBufferBuilder answer;
  ResponseBuilder response(answer);
  FinishResponseBuffer(answer, response.Finish());
  EXPECT_TRUE(GetResponse(answer.GetBufferPointer())->final());
}

}  // namespace
}  // namespace recon::wire
