// Tests of the hand-written ONNX reader: ONNX's own node-test files (Debian's libonnx-testdata),
// hand-encoded protobuf for what those files lack (external data, hostile sizes), and
// truncation and random-byte loops that must fail cleanly, never crash.
#include "gpu/models/onnx/onnx_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gpu/models/onnx/protobuf_wire.h"

namespace recon::gpu::onnx {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kNodeTests = "/usr/share/libonnx-testdata/data/node/";

#define SKIP_WITHOUT_TESTDATA()                                                  \
  do {                                                                           \
    if (!std::filesystem::exists(kNodeTests + "test_conv_with_strides_padding")) \
      GTEST_SKIP() << "libonnx-testdata is not installed at " << kNodeTests;     \
  } while (0)

// A tiny protobuf encoder, enough to write the messages the reader must accept or refuse.
class Pb {
 public:
  Pb& varint(uint32_t field, uint64_t value) {
    tag(field, 0);
    put_varint(value);
    return *this;
  }
  Pb& fixed32(uint32_t field, uint32_t value) {
    tag(field, 5);
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<uint8_t>(value >> (8 * i)));
    return *this;
  }
  Pb& fixed64(uint32_t field, uint64_t value) {
    tag(field, 1);
    for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<uint8_t>(value >> (8 * i)));
    return *this;
  }
  Pb& bytes(uint32_t field, const std::vector<uint8_t>& payload) {
    tag(field, 2);
    put_varint(payload.size());
    bytes_.insert(bytes_.end(), payload.begin(), payload.end());
    return *this;
  }
  Pb& str(uint32_t field, const std::string& s) { return bytes(field, std::vector<uint8_t>(s.begin(), s.end())); }
  Pb& msg(uint32_t field, const Pb& m) { return bytes(field, m.bytes_); }
  Pb& packed_varints(uint32_t field, const std::vector<int64_t>& values) {
    Pb inner;
    for (const int64_t v : values) inner.put_varint(static_cast<uint64_t>(v));
    return bytes(field, inner.bytes_);
  }
  Pb& packed_floats(uint32_t field, const std::vector<float>& values) {
    std::vector<uint8_t> payload(values.size() * 4);
    std::memcpy(payload.data(), values.data(), payload.size());
    return bytes(field, payload);
  }
  Pb& raw(const std::vector<uint8_t>& b) {
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
  }
  const std::vector<uint8_t>& data() const { return bytes_; }

 private:
  void tag(uint32_t field, uint32_t wire_type) { put_varint((uint64_t{field} << 3) | wire_type); }
  void put_varint(uint64_t v) {
    while (v >= 0x80) {
      bytes_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    bytes_.push_back(static_cast<uint8_t>(v));
  }
  std::vector<uint8_t> bytes_;
};

std::vector<uint8_t> float_bytes(const std::vector<float>& values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// A float TensorProto with raw_data.
Pb float_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
  Pb t;
  for (const int64_t d : dims) t.varint(1, static_cast<uint64_t>(d));
  t.varint(2, 1).str(8, name).bytes(9, float_bytes(values));
  return t;
}

// A model whose graph holds `graph_body` plus one Identity node, importing opset 13.
Pb model_with_graph(const Pb& graph_body) {
  Pb graph = graph_body;
  graph.msg(1, Pb().str(1, "w").str(2, "y").str(4, "Identity")).str(2, "g");
  return Pb().varint(1, 8).str(2, "test").msg(7, graph).msg(8, Pb().str(1, "").varint(2, 13));
}

Result<Model> parse(const Pb& pb, const std::string& base_dir = {}) {
  return parse_onnx_model(pb.data(), nullptr, base_dir);
}

Result<HostTensor> parse_tensor_pb(const Pb& pb) {
  return parse_tensor(pb.data(), nullptr, {});
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Values read with memcpy, so the test does not depend on the tensor's alignment.
template <typename T>
std::vector<T> values_of(const HostTensor& t) {
  std::vector<T> out(t.bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), t.bytes.data(), out.size() * sizeof(T));
  return out;
}

// A fresh directory under TMPDIR, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "onnx_file_test_XXXXXX").string();
    path_ = ::mkdtemp(templ.data()) ? templ : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  void write(const std::string& name, const std::vector<uint8_t>& data) const {
    const auto full = std::filesystem::path(path_) / name;
    std::filesystem::create_directories(full.parent_path());
    std::ofstream out(full, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  }

 private:
  std::string path_;
};

// ---------------------------------------------------------------------------------------------
// The wire cursor.

TEST(ProtobufWire, ReadsVarintsUpToTenBytesAndRefusesOverflow) {
  const std::vector<uint8_t> max = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  WireReader ok(max);
  auto value = ok.read_varint();
  ASSERT_TRUE(value.is_ok()) << value.status().to_string();
  EXPECT_EQ(*value, ~uint64_t{0});
  EXPECT_TRUE(ok.at_end());

  const std::vector<uint8_t> overflow = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
  WireReader bad(overflow);
  EXPECT_THAT(bad.read_varint().status().message(), HasSubstr("overflows 64 bits"));

  const std::vector<uint8_t> eleven = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  WireReader too_long(eleven);
  EXPECT_FALSE(too_long.read_varint().is_ok());
}

TEST(ProtobufWire, NamesTheByteWhereATruncatedVarintStarts) {
  const std::vector<uint8_t> bytes = {0x08, 0x96};  // field 1 varint, then a varint cut short
  WireReader r(bytes, 100);
  ASSERT_TRUE(r.read_tag().is_ok());
  const Status status = r.read_varint().status();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(status.message(), "truncated varint at byte 101");
}

TEST(ProtobufWire, RefusesGroupsUnknownWireTypesAndFieldZero) {
  for (const uint8_t tag : {0x0b, 0x0c, 0x0e, 0x0f, 0x00}) {  // groups 3 and 4, types 6 and 7, field 0
    const std::vector<uint8_t> bytes = {tag, 0x00};
    WireReader r(bytes);
    EXPECT_FALSE(r.read_tag().is_ok()) << int{tag};
  }
}

TEST(ProtobufWire, ChecksLengthsAndFixedWidthsAgainstWhatIsLeft) {
  const std::vector<uint8_t> long_length = {0x05, 'a', 'b'};
  EXPECT_THAT(WireReader(long_length).read_length_delimited().status().message(), HasSubstr("exceeds the 2 bytes"));
  const std::vector<uint8_t> three = {1, 2, 3};
  EXPECT_FALSE(WireReader(three).read_fixed32().is_ok());
  EXPECT_FALSE(WireReader(three).read_fixed64().is_ok());
}

TEST(ProtobufWire, SkipsFieldsOfEveryWireType) {
  const Pb pb = Pb().varint(1, 300).fixed64(2, 7).str(3, "abc").fixed32(4, 9).varint(5, 42);
  WireReader r(pb.data());
  for (int i = 0; i < 4; ++i) {
    auto tag = r.read_tag();
    ASSERT_TRUE(tag.is_ok());
    ASSERT_TRUE(r.skip(tag->type).is_ok());
  }
  auto tag = r.read_tag();
  ASSERT_TRUE(tag.is_ok());
  EXPECT_EQ(tag->field, 5u);
  EXPECT_EQ(r.read_varint().value(), 42u);
  EXPECT_TRUE(r.at_end());
}

TEST(ProtobufWire, AcceptsPackedAndUnpackedRepeatedScalars) {
  const Pb pb = Pb().varint(1, static_cast<uint64_t>(int64_t{-3}))
                    .packed_varints(1, {4, 5})
                    .fixed32(2, std::bit_cast<uint32_t>(1.5f));
  WireReader r(pb.data());
  std::vector<int64_t> ints;
  std::vector<float> floats;
  while (!r.at_end()) {
    auto tag = r.read_tag();
    ASSERT_TRUE(tag.is_ok());
    if (tag->field == 1) {
      ASSERT_TRUE(r.read_int64s(tag->type, ints).is_ok());
    } else {
      ASSERT_TRUE(r.read_floats(tag->type, floats).is_ok());
    }
  }
  EXPECT_THAT(ints, ElementsAre(-3, 4, 5));
  EXPECT_THAT(floats, ElementsAre(1.5f));

  std::vector<uint8_t> doubles_payload(16);
  const double d[2] = {0.25, -2.0};
  std::memcpy(doubles_payload.data(), d, 16);
  const Pb packed_doubles = Pb().bytes(1, doubles_payload).fixed64(1, std::bit_cast<uint64_t>(8.0));
  WireReader rd(packed_doubles.data());
  std::vector<double> doubles;
  while (!rd.at_end()) {
    auto tag = rd.read_tag();
    ASSERT_TRUE(tag.is_ok());
    ASSERT_TRUE(rd.read_doubles(tag->type, doubles).is_ok());
  }
  EXPECT_THAT(doubles, ElementsAre(0.25, -2.0, 8.0));
}

TEST(ProtobufWire, RefusesMessagesNestedDeeperThanTheLimit) {
  Pb nested = Pb().varint(1, 1);
  for (int i = 0; i < WireReader::kMaxDepth + 2; ++i) nested = Pb().msg(1, nested);
  WireReader r(nested.data());
  Status status;
  while (status.is_ok()) {
    auto tag = r.read_tag();
    ASSERT_TRUE(tag.is_ok());
    if (tag->type != WireType::kLengthDelimited) break;
    auto inner = r.read_message();
    if (!inner) {
      status = inner.status();
      break;
    }
    r = *inner;
  }
  EXPECT_THAT(status.message(), HasSubstr("nested deeper than 32"));
}

// ---------------------------------------------------------------------------------------------
// ONNX's node tests.

TEST(OnnxFile, ReadsTheConvNodeTestModel) {
  SKIP_WITHOUT_TESTDATA();
  auto model = read_onnx_model(kNodeTests + "test_conv_with_strides_padding/model.onnx");
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  EXPECT_GE(model->ir_version, 3);
  EXPECT_EQ(model->opset(), 11);
  EXPECT_EQ(model->opset("ai.onnx"), 11);
  EXPECT_EQ(model->opset("com.example"), 0);

  const ModelGraph& g = model->graph;
  ASSERT_EQ(g.nodes.size(), 1u);
  const Node& conv = g.nodes[0];
  EXPECT_EQ(conv.op_type, "Conv");
  EXPECT_THAT(conv.inputs, ElementsAre("x", "W"));
  EXPECT_THAT(conv.outputs, ElementsAre("y"));
  ASSERT_NE(conv.attribute("kernel_shape"), nullptr);
  EXPECT_EQ(conv.attribute("kernel_shape")->kind, Attribute::Kind::kInts);
  EXPECT_THAT(conv.attribute("kernel_shape")->ints, ElementsAre(3, 3));
  ASSERT_NE(conv.attribute("pads"), nullptr);
  EXPECT_THAT(conv.attribute("pads")->ints, ElementsAre(1, 1, 1, 1));
  ASSERT_NE(conv.attribute("strides"), nullptr);
  EXPECT_THAT(conv.attribute("strides")->ints, ElementsAre(2, 2));
  EXPECT_EQ(conv.attribute("dilations"), nullptr);

  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.inputs[0].name, "x");
  EXPECT_EQ(g.inputs[0].type, ElemType::kFloat);
  EXPECT_TRUE(g.inputs[0].has_shape);
  EXPECT_THAT(g.inputs[0].dims, ElementsAre(1, 1, 7, 5));
  EXPECT_EQ(g.inputs[1].name, "W");
  EXPECT_THAT(g.inputs[1].dims, ElementsAre(1, 1, 3, 3));
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0].name, "y");
  EXPECT_THAT(g.outputs[0].dims, ElementsAre(1, 1, 4, 3));
  EXPECT_THAT(g.outputs[0].dim_params, ElementsAre("", "", "", ""));
  EXPECT_TRUE(g.initializers.empty());
}

TEST(OnnxFile, ReadsTheConvTestInputAsADenseFloatTensor) {
  SKIP_WITHOUT_TESTDATA();
  auto x = read_tensor_file(kNodeTests + "test_conv_with_strides_padding/test_data_set_0/input_0.pb");
  ASSERT_TRUE(x.is_ok()) << x.status().to_string();
  EXPECT_EQ(x->name, "x");
  EXPECT_EQ(x->type, ElemType::kFloat);
  EXPECT_THAT(x->dims, ElementsAre(1, 1, 7, 5));
  EXPECT_EQ(x->numel(), 35);
  ASSERT_EQ(x->bytes.size(), 35u * 4);
  ASSERT_NE(x->owner, nullptr);
  const auto values = values_of<float>(*x);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(values[i], static_cast<float>(i)) << i;
  // Aligned data stays in the mapping; misaligned data was copied so values<T>() stays defined.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(x->values<float>().data()) % alignof(float), 0u);

  auto y = read_tensor_file(kNodeTests + "test_conv_with_strides_padding/test_data_set_0/output_0.pb");
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_THAT(values_of<float>(*y), ElementsAre(12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124));
}

TEST(OnnxFile, ReadsFloatAndInt32DataFieldsOfConstantOfShapeValues) {
  SKIP_WITHOUT_TESTDATA();
  auto ones = read_onnx_model(kNodeTests + "test_constantofshape_float_ones/model.onnx");
  ASSERT_TRUE(ones.is_ok()) << ones.status().to_string();
  const Attribute* value = ones->graph.nodes.at(0).attribute("value");
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value->kind, Attribute::Kind::kTensor);
  EXPECT_EQ(value->t.type, ElemType::kFloat);
  EXPECT_THAT(value->t.dims, ElementsAre(1));
  EXPECT_THAT(values_of<float>(value->t), ElementsAre(1.0f));

  auto zeros = read_onnx_model(kNodeTests + "test_constantofshape_int_zeros/model.onnx");
  ASSERT_TRUE(zeros.is_ok()) << zeros.status().to_string();
  const Attribute* int_value = zeros->graph.nodes.at(0).attribute("value");
  ASSERT_NE(int_value, nullptr);
  EXPECT_EQ(int_value->t.type, ElemType::kInt32);
  EXPECT_THAT(values_of<int32_t>(int_value->t), ElementsAre(0));
  EXPECT_EQ(zeros->graph.outputs.at(0).type, ElemType::kInt32);
}

TEST(OnnxFile, ReadsScalarFloatDataAndInt64DataOfTheExpandedLayerNorm) {
  SKIP_WITHOUT_TESTDATA();
  auto model = read_onnx_model(kNodeTests + "test_layer_normalization_2d_axis0_expanded/model.onnx");
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const Node& epsilon = model->graph.nodes.at(0);
  EXPECT_EQ(epsilon.op_type, "Constant");
  const HostTensor& eps = epsilon.attribute("value")->t;
  EXPECT_TRUE(eps.dims.empty());
  EXPECT_EQ(eps.numel(), 1);
  EXPECT_THAT(values_of<float>(eps), ElementsAre(std::bit_cast<float>(0x3727c5acu)));

  const Node& suffix = model->graph.nodes.at(8);
  EXPECT_EQ(suffix.op_type, "ConstantOfShape");
  const HostTensor& one = suffix.attribute("value")->t;
  EXPECT_EQ(one.type, ElemType::kInt64);
  EXPECT_THAT(values_of<int64_t>(one), ElementsAre(1));
}

TEST(OnnxFile, KeepsTheKindOfGraphAttributesAndReadsBoolInt32Data) {
  SKIP_WITHOUT_TESTDATA();
  auto model = read_onnx_model(kNodeTests + "test_sequence_map_add_2_sequences_expanded/model.onnx");
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const HostTensor& cond = model->graph.nodes.at(1).attribute("value")->t;
  EXPECT_EQ(cond.type, ElemType::kBool);
  EXPECT_THAT(values_of<uint8_t>(cond), ElementsAre(1));
  const Node& loop = model->graph.nodes.at(3);
  EXPECT_EQ(loop.op_type, "Loop");
  ASSERT_NE(loop.attribute("body"), nullptr);
  EXPECT_EQ(loop.attribute("body")->kind, Attribute::Kind::kGraph);
  // Sequence-typed graph inputs have no tensor type.
  EXPECT_EQ(model->graph.inputs.at(0).type, ElemType::kUndefined);
  EXPECT_FALSE(model->graph.inputs.at(0).has_shape);
}

TEST(OnnxFile, ReadsEveryNodeTestModelAndMostOfItsTensorFiles) {
  SKIP_WITHOUT_TESTDATA();
  size_t models = 0;
  size_t tensors = 0;
  std::vector<std::string> failures;
  for (const auto& entry : std::filesystem::directory_iterator(kNodeTests)) {
    const std::string path = entry.path().string() + "/model.onnx";
    if (!std::filesystem::exists(path)) continue;
    auto model = read_onnx_model(path);
    if (model.is_ok()) {
      ++models;
    } else if (model.status().code() != StatusCode::kUnimplemented) {
      failures.push_back(model.status().to_string());
    }
    // Sequence, optional and string test files are not TensorProtos we accept; they must fail
    // cleanly, which the loop checks by running them.
    const auto data_set = entry.path() / "test_data_set_0";
    if (!std::filesystem::exists(data_set)) continue;
    for (const auto& file : std::filesystem::directory_iterator(data_set)) {
      if (read_tensor_file(file.path().string()).is_ok()) ++tensors;
    }
  }
  EXPECT_GT(models, 900u);  // Debian's libonnx-testdata 1.12 has 932, all readable
  EXPECT_GT(tensors, 2700u);
  EXPECT_THAT(failures, ::testing::IsEmpty());
}

TEST(OnnxFile, FailsCleanlyOnEveryTruncationOfASmallModel) {
  SKIP_WITHOUT_TESTDATA();
  const auto model_bytes = read_bytes(kNodeTests + "test_conv_with_strides_padding/model.onnx");
  ASSERT_GT(model_bytes.size(), 100u);
  for (size_t n = 0; n < model_bytes.size(); ++n) {
    // A copy of exactly n bytes, so the address sanitizer sees any read past the end.
    const std::vector<uint8_t> prefix(model_bytes.begin(), model_bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(parse_onnx_model(prefix, nullptr, {}).is_ok()) << "prefix of " << n << " bytes";
  }
  EXPECT_TRUE(parse_onnx_model(model_bytes, nullptr, {}).is_ok());

  const auto tensor_bytes = read_bytes(kNodeTests + "test_conv_with_strides_padding/test_data_set_0/input_0.pb");
  for (size_t n = 0; n < tensor_bytes.size(); ++n) {
    const std::vector<uint8_t> prefix(tensor_bytes.begin(), tensor_bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(parse_tensor(prefix, nullptr, {}).is_ok()) << "prefix of " << n << " bytes";
  }
}

TEST(OnnxFile, SurvivesRandomBytesAndRandomMutations) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> bytes(rng() % 200);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    (void)parse_onnx_model(bytes, nullptr, {});
    (void)parse_tensor(bytes, nullptr, {});
  }
  if (!std::filesystem::exists(kNodeTests)) return;
  // Flipped bytes in a real model reach much deeper than random bytes do.
  const auto model_bytes = read_bytes(kNodeTests + "test_layer_normalization_2d_axis0_expanded/model.onnx");
  ASSERT_FALSE(model_bytes.empty());
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> bytes = model_bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    (void)parse_onnx_model(bytes, nullptr, {});
  }
  const auto tensor_bytes = read_bytes(kNodeTests + "test_cast_FLOAT_to_FLOAT16/test_data_set_0/output_0.pb");
  ASSERT_FALSE(tensor_bytes.empty());
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> bytes = tensor_bytes;
    bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    (void)parse_tensor(bytes, nullptr, {});
  }
}

// ---------------------------------------------------------------------------------------------
// Hand-encoded files.

TEST(OnnxFile, NamesTheNodeAndAttributeWhereAVarintIsTruncated) {
  // Attribute 'pads' whose last ints varint has its continuation bit set and nothing after it.
  const Pb pads = Pb().str(1, "pads").varint(8, 1).raw({0x40, 0x81});
  const Pb graph = Pb().msg(1, Pb().str(1, "x").str(2, "y").str(3, "conv1").str(4, "Conv").msg(5, pads));
  const Pb model = Pb().varint(1, 8).msg(7, graph).msg(8, Pb().varint(2, 13));
  auto result = parse(model);
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(result.status().message(),
              ::testing::MatchesRegex("node 0 \\(Conv 'conv1'\\): attribute 'pads': truncated varint at byte "
                                      "[0-9]+"));
}

TEST(OnnxFile, PrefixesErrorsWithTheFilePath) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  dir.write("bad.onnx", {0x08});
  auto result = read_onnx_model(dir.path() + "/bad.onnx");
  ASSERT_FALSE(result.is_ok());
  EXPECT_THAT(result.status().message(), ::testing::StartsWith(dir.path() + "/bad.onnx: "));

  auto missing = read_onnx_model(dir.path() + "/missing.onnx");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(OnnxFile, ReadsInitializersWithPackedOrUnpackedDims) {
  Pb unpacked = float_tensor("w", {2, 2}, {1, 2, 3, 4});
  Pb packed;
  packed.packed_varints(1, {4}).varint(2, 1).str(8, "v").packed_floats(4, {5, 6, 7, 8});
  auto model = parse(model_with_graph(Pb().msg(5, unpacked).msg(5, packed)));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  ASSERT_EQ(model->graph.initializers.size(), 2u);
  EXPECT_THAT(model->graph.initializers[0].dims, ElementsAre(2, 2));
  EXPECT_THAT(values_of<float>(model->graph.initializers[0]), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(model->graph.initializers[1].dims, ElementsAre(4));
  EXPECT_THAT(values_of<float>(model->graph.initializers[1]), ElementsAre(5, 6, 7, 8));
  EXPECT_EQ(model->graph.name, "g");
  EXPECT_EQ(model->producer_name, "test");
  EXPECT_EQ(model->ir_version, 8);
}

TEST(OnnxFile, PointsByteTensorsIntoTheFileBytes) {
  const Pb t = Pb().varint(1, 3).varint(2, 2).str(8, "u8").bytes(9, {7, 8, 9});
  auto tensor = parse_tensor_pb(t);
  ASSERT_TRUE(tensor.is_ok()) << tensor.status().to_string();
  EXPECT_GE(tensor->bytes.data(), t.data().data());
  EXPECT_LT(tensor->bytes.data(), t.data().data() + t.data().size());
  EXPECT_THAT(values_of<uint8_t>(*tensor), ElementsAre(7, 8, 9));
}

TEST(OnnxFile, NarrowsInt32DataToTheElementType) {
  auto f16 = parse_tensor_pb(Pb().varint(1, 2).varint(2, 10).str(8, "h").packed_varints(5, {0x3c00, 0xc000}));
  ASSERT_TRUE(f16.is_ok()) << f16.status().to_string();
  EXPECT_THAT(values_of<uint16_t>(*f16), ElementsAre(0x3c00, 0xc000));

  auto u8 = parse_tensor_pb(Pb().varint(1, 3).varint(2, 2).varint(5, 1).varint(5, 255).varint(5, 3));
  ASSERT_TRUE(u8.is_ok()) << u8.status().to_string();
  EXPECT_THAT(values_of<uint8_t>(*u8), ElementsAre(1, 255, 3));

  auto i8 = parse_tensor_pb(Pb().varint(1, 1).varint(2, 3).varint(5, static_cast<uint64_t>(int64_t{-2})));
  ASSERT_TRUE(i8.is_ok()) << i8.status().to_string();
  EXPECT_THAT(values_of<int8_t>(*i8), ElementsAre(-2));

  auto i32 = parse_tensor_pb(Pb().varint(1, 2).varint(2, 6).packed_varints(5, {-7, 1 << 30}));
  ASSERT_TRUE(i32.is_ok()) << i32.status().to_string();
  EXPECT_THAT(values_of<int32_t>(*i32), ElementsAre(-7, 1 << 30));

  auto u64 = parse_tensor_pb(Pb().varint(1, 1).varint(2, 13).varint(11, ~uint64_t{0}));
  ASSERT_TRUE(u64.is_ok()) << u64.status().to_string();
  EXPECT_THAT(values_of<uint64_t>(*u64), ElementsAre(~uint64_t{0}));

  auto f64 = parse_tensor_pb(Pb().varint(2, 11).fixed64(10, std::bit_cast<uint64_t>(2.5)));
  ASSERT_TRUE(f64.is_ok()) << f64.status().to_string();
  EXPECT_THAT(values_of<double>(*f64), ElementsAre(2.5));
}

TEST(OnnxFile, RefusesATensorWhoseDimsExceedItsBytes) {
  auto result = parse_tensor_pb(float_tensor("big", {2, 3}, {1, 2, 3, 4, 5}));
  ASSERT_FALSE(result.is_ok());
  EXPECT_THAT(result.status().message(), HasSubstr("tensor 'big'"));
  EXPECT_THAT(result.status().message(), HasSubstr("raw_data holds 20 bytes but dims [2,3] of FLOAT need 24 bytes"));

  auto typed = parse_tensor_pb(Pb().varint(1, 3).varint(2, 7).str(8, "few").packed_varints(7, {1, 2}));
  ASSERT_FALSE(typed.is_ok());
  EXPECT_THAT(typed.status().message(), HasSubstr("tensor 'few': int64_data holds 2 values"));

  // Huge dims with one value: refused before anything the size of the dims is allocated.
  auto huge = parse_tensor_pb(Pb().varint(1, 1ull << 40).varint(2, 1).str(8, "huge").packed_floats(4, {1}));
  EXPECT_THAT(huge.status().message(), HasSubstr("float_data holds 1 values but dims [1099511627776] need"));

  auto none = parse_tensor_pb(Pb().varint(1, 4).varint(2, 1).str(8, "empty"));
  EXPECT_THAT(none.status().message(), HasSubstr("has no data"));
}

TEST(OnnxFile, RefusesNegativeDimsAndElementCountOverflow) {
  auto negative = parse_tensor_pb(Pb().varint(1, static_cast<uint64_t>(int64_t{-1})).varint(2, 1).str(8, "n"));
  EXPECT_THAT(negative.status().message(), HasSubstr("negative"));
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);

  auto overflow = parse_tensor_pb(Pb().varint(1, 1ull << 40).varint(1, 1ull << 40).varint(2, 1).str(8, "o"));
  EXPECT_THAT(overflow.status().message(), HasSubstr("overflow"));
  auto byte_overflow = parse_tensor_pb(Pb().varint(1, 1ull << 61).varint(2, 11).str(8, "b"));
  EXPECT_THAT(byte_overflow.status().message(), HasSubstr("overflow"));
}

TEST(OnnxFile, RefusesStringSegmentedAndSparseTensors) {
  auto strings = parse_tensor_pb(Pb().varint(1, 1).varint(2, 8).str(8, "words").str(6, "hi"));
  EXPECT_EQ(strings.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(strings.status().message(), HasSubstr("tensor 'words': string tensors are not supported"));

  auto segment = parse_tensor_pb(Pb().varint(2, 1).str(8, "seg").msg(3, Pb().varint(1, 0).varint(2, 1)));
  EXPECT_THAT(segment.status().message(), HasSubstr("tensor 'seg': segmented tensors are not supported"));

  auto sparse = parse(model_with_graph(Pb().msg(15, Pb())));
  EXPECT_EQ(sparse.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(sparse.status().message(), HasSubstr("sparse initializers are not supported"));
}

TEST(OnnxFile, RefusesDataInMoreThanOnePlaceAndTypedFieldsOfTheWrongType) {
  auto both =
      parse_tensor_pb(Pb().varint(1, 1).varint(2, 1).str(8, "t").bytes(9, float_bytes({1})).packed_floats(4, {1}));
  EXPECT_THAT(both.status().message(), HasSubstr("more than one place"));
  auto wrong = parse_tensor_pb(Pb().varint(1, 1).varint(2, 7).str(8, "t").packed_floats(4, {1}));
  EXPECT_THAT(wrong.status().message(), HasSubstr("INT64 tensors use int64_data"));
}

TEST(OnnxFile, InfersTheAttributeKindWhenTypeIsAbsent) {
  const Pb node = Pb().str(1, "x")
                      .str(2, "y")
                      .str(4, "Op")
                      .msg(5, Pb().str(1, "alpha").fixed32(2, std::bit_cast<uint32_t>(0.5f)))
                      .msg(5, Pb().str(1, "axis").varint(3, static_cast<uint64_t>(int64_t{-1})))
                      .msg(5, Pb().str(1, "mode").str(4, "nearest"))
                      .msg(5, Pb().str(1, "sizes").varint(8, 1).varint(8, 2))
                      .msg(5, Pb().str(1, "scales").packed_floats(7, {1.5f, 2.5f}))
                      .msg(5, Pb().str(1, "names").str(9, "a").str(9, "b"))
                      .msg(5, Pb().str(1, "value").msg(5, float_tensor("", {}, {3.0f})));
  auto model = parse(Pb().msg(7, Pb().msg(1, node)).msg(8, Pb().varint(2, 7)));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const Node& n = model->graph.nodes.at(0);
  EXPECT_EQ(n.attribute("alpha")->kind, Attribute::Kind::kFloat);
  EXPECT_EQ(n.attribute("alpha")->f, 0.5f);
  EXPECT_EQ(n.attribute("axis")->kind, Attribute::Kind::kInt);
  EXPECT_EQ(n.attribute("axis")->i, -1);
  EXPECT_EQ(n.attribute("mode")->kind, Attribute::Kind::kString);
  EXPECT_EQ(n.attribute("mode")->s, "nearest");
  EXPECT_EQ(n.attribute("sizes")->kind, Attribute::Kind::kInts);
  EXPECT_THAT(n.attribute("sizes")->ints, ElementsAre(1, 2));
  EXPECT_EQ(n.attribute("scales")->kind, Attribute::Kind::kFloats);
  EXPECT_THAT(n.attribute("scales")->floats, ElementsAre(1.5f, 2.5f));
  EXPECT_EQ(n.attribute("names")->kind, Attribute::Kind::kStrings);
  EXPECT_THAT(n.attribute("names")->strings, ElementsAre("a", "b"));
  EXPECT_EQ(n.attribute("value")->kind, Attribute::Kind::kTensor);
  EXPECT_THAT(values_of<float>(n.attribute("value")->t), ElementsAre(3.0f));
  EXPECT_EQ(model->opset(), 7);
}

TEST(OnnxFile, ReadsSymbolicAndMissingDimensions) {
  const Pb shape = Pb().msg(1, Pb().str(2, "batch")).msg(1, Pb().varint(1, 3)).msg(1, Pb());
  const Pb type = Pb().msg(1, Pb().varint(1, 10).msg(2, shape));
  auto model = parse(model_with_graph(Pb().msg(11, Pb().str(1, "x").msg(2, type))));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const ValueInfo& x = model->graph.inputs.at(0);
  EXPECT_EQ(x.type, ElemType::kFloat16);
  EXPECT_TRUE(x.has_shape);
  EXPECT_THAT(x.dims, ElementsAre(-1, 3, -1));
  EXPECT_THAT(x.dim_params, ElementsAre("batch", "", ""));
}

TEST(OnnxFile, RefusesModelsWithoutAGraphOrAnOpsetImport) {
  EXPECT_THAT(parse(Pb().varint(1, 8).msg(8, Pb().varint(2, 13))).status().message(), HasSubstr("no graph"));
  EXPECT_THAT(parse(Pb().varint(1, 8).msg(7, Pb())).status().message(), HasSubstr("no opset"));
  EXPECT_FALSE(parse(Pb()).is_ok());
}

// ---------------------------------------------------------------------------------------------
// External data.

Pb external_tensor(const std::string& name, int64_t n, const std::string& location, const std::string& offset,
                   const std::string& length) {
  Pb t;
  t.varint(1, static_cast<uint64_t>(n)).varint(2, 1).str(8, name);
  t.msg(13, Pb().str(1, "location").str(2, location));
  if (!offset.empty()) t.msg(13, Pb().str(1, "offset").str(2, offset));
  if (!length.empty()) t.msg(13, Pb().str(1, "length").str(2, length));
  return t.varint(14, 1);
}

TEST(OnnxFile, ResolvesExternalDataNextToTheModel) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  std::vector<uint8_t> weights(8, 0xee);  // padding before the first tensor
  const auto first = float_bytes({1.0f, 2.0f, 3.0f, 4.0f});
  weights.insert(weights.end(), first.begin(), first.end());
  dir.write("weights.bin", weights);
  dir.write("sub/more.bin", float_bytes({5.0f, 6.0f}));
  const Pb graph = Pb().msg(5, external_tensor("w", 4, "weights.bin", "8", "16"))
                       .msg(5, external_tensor("v", 2, "sub/more.bin", "", ""))
                       .msg(5, external_tensor("tail", 2, "weights.bin", "16", ""));
  dir.write("model.onnx", model_with_graph(graph).data());

  auto model = read_onnx_model(dir.path() + "/model.onnx");
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const auto& inits = model->graph.initializers;
  ASSERT_EQ(inits.size(), 3u);
  EXPECT_THAT(values_of<float>(inits[0]), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(values_of<float>(inits[1]), ElementsAre(5, 6));
  EXPECT_THAT(values_of<float>(inits[2]), ElementsAre(3, 4));
  // One mapping per external file, shared by the tensors in it.
  EXPECT_EQ(inits[0].owner, inits[2].owner);
  EXPECT_NE(inits[0].owner, inits[1].owner);
}

TEST(OnnxFile, RefusesExternalDataOutsideTheModelDirectoryOrPastItsFile) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  dir.write("weights.bin", float_bytes({1.0f, 2.0f}));
  auto load = [&](const Pb& tensor) {
    dir.write("model.onnx", model_with_graph(Pb().msg(5, tensor)).data());
    return read_onnx_model(dir.path() + "/model.onnx");
  };
  for (const std::string location : {"../weights.bin", "/etc/passwd", "sub/../../weights.bin", "a/.."}) {
    auto result = load(external_tensor("w", 2, location, "", ""));
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << location;
    EXPECT_THAT(result.status().message(), HasSubstr("initializer 0: tensor 'w': external data location")) << location;
  }
  EXPECT_THAT(load(external_tensor("w", 2, "weights.bin", "4", "8")).status().message(),
              HasSubstr("runs past the end"));
  EXPECT_THAT(load(external_tensor("w", 2, "weights.bin", "12", "")).status().message(), HasSubstr("past the end"));
  EXPECT_THAT(load(external_tensor("w", 2, "weights.bin", "-1", "")).status().message(), HasSubstr("not a number"));
  EXPECT_THAT(load(external_tensor("w", 3, "weights.bin", "", "")).status().message(),
              HasSubstr("external data holds 8 bytes but dims [3] of FLOAT need 12 bytes"));
  EXPECT_EQ(load(external_tensor("w", 2, "nothere.bin", "", "")).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(load(external_tensor("w", 2, "./weights.bin", "", "")).is_ok());

  // Bytes parsed without a directory have nowhere to look.
  auto no_dir = parse_tensor_pb(external_tensor("w", 2, "weights.bin", "", ""));
  EXPECT_THAT(no_dir.status().message(), HasSubstr("needs the model file's directory"));
}

// ---------------------------------------------------------------------------------------------
// The plain structs.

TEST(OnnxModel, CountsElementsAndSizesTypes) {
  HostTensor scalar;
  EXPECT_EQ(scalar.numel(), 1);
  const HostTensor t = HostTensor::owned(ElemType::kInt16, {2, 3}, std::vector<uint8_t>(12), "t");
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.bytes.size(), 12u);
  EXPECT_EQ(t.values<int16_t>().size(), 6u);
  EXPECT_EQ(t.name, "t");
  HostTensor negative;
  negative.dims = {2, -1};
  EXPECT_EQ(negative.numel(), -1);
  EXPECT_EQ(elem_type_size(ElemType::kBfloat16), 2u);
  EXPECT_EQ(elem_type_size(ElemType::kString), 0u);
  EXPECT_STREQ(elem_type_name(ElemType::kFloat16), "FLOAT16");
}

TEST(OnnxModel, TreatsAiOnnxAsTheDefaultDomain) {
  Model model;
  model.opsets["ai.onnx"] = 17;
  model.opsets["com.microsoft"] = 1;
  EXPECT_EQ(model.opset(), 17);
  EXPECT_EQ(model.opset("ai.onnx"), 17);
  EXPECT_EQ(model.opset("com.microsoft"), 1);
  EXPECT_EQ(model.opset("other"), 0);
}

}  // namespace
}  // namespace recon::gpu::onnx
