// recond in-process: the generic Infer request on the tiny model. A pair through Infer must equal
// the same pair through InferPair, a match of a result named by ResultRef must equal Match on the
// same handle (both byte for byte: the released verbs are adapters onto the same admission), and
// every misnamed, missing or foreign input gets its typed error naming it.
#include <gtest/gtest.h>

#include "daemon/ipc/wire_convert.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"
#include "tests/daemon/server/test_expect.h"

namespace recon::daemon::testing {
namespace {

constexpr uint32_t kH = kTinyHeight, kW = kTinyWidth;

ImageArg inline_image(uint32_t seed) {
  return ImageArg{{}, 0, kH, kW, 0, test_image(kH, kW, seed)};
}

NamedArg image_arg(std::string name, const ImageArg& image) {
  return NamedArg{std::move(name), image, {}, {}};
}

NamedArg result_arg(std::string name, const Id128& handle, std::string tensor = {}) {
  return NamedArg{std::move(name), std::nullopt, handle, std::move(tensor)};
}

// Calls `request` and fetches every tensor of the handle it answers with `type`.
TensorBytes call_and_fetch(TestClient& c, const std::vector<uint8_t>& request, uint64_t id, wire::ResponseBody type) {
  auto answer = c.call(request, id);
  EXPECT_TRUE(answer.is_ok());
  if (!answer.is_ok()) return {};
  EXPECT_EQ(answer->type(), type) << answer->error_message();
  const uint64_t fid = c.next_id();
  auto fetched = c.call(make_fetch(fid, c.session(), handle_id(*answer), {}, std::nullopt), fid);
  EXPECT_TRUE(fetched.is_ok());
  return fetched.is_ok() ? inline_tensors(*fetched) : TensorBytes{};
}

TEST(RecondInfer, APairAndItsMatchEqualInferPairAndMatchByteForByte) {
  auto harness = ServerHarness::start();
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "infer");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;
  const ImageArg a = inline_image(31), b = inline_image(32);

  uint64_t id = c.next_id();
  const TensorBytes released =
      call_and_fetch(c, make_infer_pair(id, c.session(), a, b), id, wire::ResponseBody::InferPairResult);
  id = c.next_id();
  auto generic = c.call(make_infer(id, c.session(), "mast3r", {image_arg("image1", a), image_arg("image2", b)}), id);
  ASSERT_TRUE(generic.is_ok());
  ASSERT_EQ(generic->type(), wire::ResponseBody::InferResult) << generic->error_message();
  const wire::ResultHandle* handle = generic->response->body_as_InferResult()->handle();
  EXPECT_EQ(handle->model()->str(), "mast3r");
  ASSERT_EQ(handle->tensors()->size(), 8u);
  const Id128 pair = handle_id(*generic);
  const uint64_t fid = c.next_id();
  auto fetched = c.call(make_fetch(fid, c.session(), pair, {}, std::nullopt), fid);
  ASSERT_TRUE(fetched.is_ok());
  const TensorBytes got = inline_tensors(*fetched);
  ASSERT_EQ(got.size(), released.size());
  for (const auto& [name, bytes] : released) EXPECT_TRUE(got.at(name) == bytes) << name;

  // The pair's descriptors stay on the device: the built-in "match" reads the whole result.
  id = c.next_id();
  const TensorBytes matched =
      call_and_fetch(c, make_match(id, c.session(), pair, 5, 4, 0.5f), id, wire::ResponseBody::MatchResult);
  ASSERT_FALSE(matched.empty());
  id = c.next_id();
  const TensorBytes generic_matched =
      call_and_fetch(c,
                     make_infer(id, c.session(), "match", {result_arg("pair", pair)},
                                {{"max_matches", "5"}, {"subsample", "4"}, {"min_confidence", "0.5"}}),
                     id, wire::ResponseBody::InferResult);
  ASSERT_EQ(generic_matched.size(), matched.size());
  for (const auto& [name, bytes] : matched) EXPECT_TRUE(generic_matched.at(name) == bytes) << name;
}

TEST(RecondInfer, RefusesUnknownModelsAndMisnamedMissingOrForeignInputs) {
  auto harness = ServerHarness::start();
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "owner");
  auto other = TestClient::connect(harness->dir(), "other");
  ASSERT_TRUE(client.is_ok() && other.is_ok());
  TestClient& c = **client;
  const ImageArg a = inline_image(1);
  uint64_t id = c.next_id();
  auto pair = c.call(make_infer_pair(id, c.session(), a, a), id);
  ASSERT_TRUE(pair.is_ok());
  const Id128 source = handle_id(*pair);
  ASSERT_FALSE(source.is_zero()) << pair->error_message();

  const auto expect =
      [&](const std::vector<NamedArg>& inputs, const std::string& model, StatusCode code, const std::string& message,
          const std::vector<std::pair<std::string, std::string>>& parameters = {}, TestClient* who = nullptr) {
        TestClient& sender = who != nullptr ? *who : c;
        const uint64_t rid = sender.next_id();
        auto answer = sender.call(make_infer(rid, sender.session(), model, inputs, parameters), rid);
        ASSERT_TRUE(answer.is_ok());
        EXPECT_EQ(answer->code(), code) << message << ": " << answer->error_message();
        EXPECT_NE(answer->error_message().find(message), std::string::npos) << answer->error_message();
      };
  const NamedArg image1 = image_arg("image1", a), image2 = image_arg("image2", a);
  expect({image1, image2}, "", StatusCode::kInvalidArgument, "names no model");
  expect({image1, image2}, "nope", StatusCode::kNotFound, "model 'nope' is not loaded");
  expect({image1}, "mast3r", StatusCode::kInvalidArgument, "takes one image named 'image2'; the request has 0");
  expect({image1, image2, image_arg("image3", a)}, "mast3r", StatusCode::kInvalidArgument,
         "has no input 'image3'; it reads image1, image2");
  expect({image1, image1, image2}, "mast3r", StatusCode::kInvalidArgument,
         "takes one image named 'image1'; the request has 2");
  expect({image1, result_arg("image2", source)}, "mast3r", StatusCode::kInvalidArgument,
         "input 'image2' of model 'mast3r' (mast3r) is an image");
  expect({image1, image2}, "mast3r", StatusCode::kInvalidArgument, "unknown parameter 'top_k'", {{"top_k", "1"}});
  expect({image_arg("pair", a)}, "match", StatusCode::kInvalidArgument, "is a result (ResultRef)");
  expect({result_arg("pair", source, "desc_1")}, "match", StatusCode::kInvalidArgument, "a whole result");
  expect({result_arg("pair", source, "nothing")}, "match", StatusCode::kInvalidArgument, "has no tensor 'nothing'");
  expect({result_arg("pair", source)}, "match", StatusCode::kInvalidArgument, "subsample=x", {{"subsample", "x"}});
  expect({result_arg("pair", source)}, "match", StatusCode::kInvalidArgument, "finite value",
         {{"min_confidence", "inf"}});
  // Another session's handle reads as unknown.
  expect({result_arg("pair", source)}, "match", StatusCode::kNotFound, "", {}, other->get());
}

}  // namespace
}  // namespace recon::daemon::testing
