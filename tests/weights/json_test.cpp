// Conformance of the strict JSON parser and serializer in gpu/weights/json.h.
#include "gpu/weights/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace recon::gpu {
namespace {

using ::testing::HasSubstr;

JsonValue parse_ok(std::string_view text) {
  Result<JsonValue> r = parse_json(text);
  EXPECT_TRUE(r.is_ok()) << "input: " << text << "\n" << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : JsonValue();
}

TEST(Json, ParsesScalarsAtTopLevel) {
  EXPECT_TRUE(parse_ok("null").is_null());
  EXPECT_TRUE(parse_ok(" true ").as_bool());
  EXPECT_TRUE(parse_ok("false").is_bool());
  EXPECT_FALSE(parse_ok("false").as_bool());
  EXPECT_EQ(parse_ok("\"hi\"").as_string(), "hi");
  EXPECT_DOUBLE_EQ(parse_ok("-12.5e-1").as_double(), -1.25);
  EXPECT_DOUBLE_EQ(parse_ok("0").as_double(), 0.0);
  EXPECT_DOUBLE_EQ(parse_ok("1E+2").as_double(), 100.0);
  EXPECT_TRUE(parse_ok("\n\t\r [ ] ").is_array());
  EXPECT_TRUE(parse_ok("{}").is_object());
}

TEST(Json, KeepsExactInt64ForIntegerLiterals) {
  EXPECT_EQ(parse_ok("9007199254740993").as_int64(), 9007199254740993LL);  // not representable as double
  EXPECT_EQ(parse_ok("9223372036854775807").as_int64(), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parse_ok("-9223372036854775808").as_int64(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(parse_ok("-0").as_int64(), 0);
  const JsonValue big = parse_ok("9223372036854775808");
  EXPECT_FALSE(big.as_int64().has_value());
  EXPECT_DOUBLE_EQ(big.as_double(), 9223372036854775808.0);
}

TEST(Json, FractionsAndExponentsAreNotIntegers) {
  EXPECT_FALSE(parse_ok("1.0").as_int64().has_value());
  EXPECT_FALSE(parse_ok("1e2").as_int64().has_value());
  EXPECT_FALSE(parse_ok("\"1\"").as_int64().has_value());
}

TEST(Json, DecodesEscapesToUtf8) {
  EXPECT_EQ(parse_ok(R"("\"\\\/\b\f\n\r\t")").as_string(), "\"\\/\b\f\n\r\t");
  EXPECT_EQ(parse_ok(R"("\u0041\u00e9\u20AC")").as_string(), "A\xC3\xA9\xE2\x82\xAC");
  EXPECT_EQ(parse_ok(R"("\ud83d\ude00")").as_string(), "\xF0\x9F\x98\x80");  // U+1F600 via a surrogate pair
  EXPECT_EQ(parse_ok(R"("\uDBFF\uDFFF")").as_string(), "\xF4\x8F\xBF\xBF");  // U+10FFFF
  EXPECT_EQ(parse_ok(R"("a\u0000b")").as_string(), std::string("a\0b", 3));
  EXPECT_EQ(parse_ok("\"\xC3\xA9\xF0\x9F\x98\x80\"").as_string(), "\xC3\xA9\xF0\x9F\x98\x80");  // raw UTF-8 kept
}

TEST(Json, RejectsLoneAndMisorderedSurrogates) {
  for (const char* text : {R"("\ud83d")", R"("\ud83dx")", R"("\ude00")", R"("\ud83d\u0041")", R"("\ude00\ud83d")"}) {
    EXPECT_FALSE(parse_json(text).is_ok()) << text;
  }
}

TEST(Json, RejectsInvalidDocuments) {
  const char* bad[] = {
      "",          " ",           "[1,]",   "{\"a\":1,}", "01",       "-",         "1.",     ".5",
      "+1",        "1e",          "1e+",    "NaN",        "Infinity", "-Infinity", "tru",    "nul",
      "[1 2]",     "{a:1}",       "'a'",    "[",          "{\"a\"",   "{\"a\":}",  "\"abc",  "\"\\x\"",
      "\"\\u12\"", "\"\\u12g4\"", "1 2",    "{}}",        "[]]",      "{\"a\" 1}", "{1:2}",  "[,1]",
      "// c\n1",   "0x10",        "\"\t\"", "\"\n\"",     "\x01",     "[1e400]",   "-1e999", "\xEF\xBB\xBF{}",
  };
  for (const char* text : bad) {
    const Result<JsonValue> r = parse_json(text);
    EXPECT_FALSE(r.is_ok()) << "accepted: " << text;
    if (!r.is_ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << text;
    }
  }
}

TEST(Json, RejectsInvalidUtf8) {
  const char* bad[] = {
      "\"\xFF\"",              // never valid
      "\"\xC0\x80\"",          // overlong NUL
      "\"\xE0\x80\xAF\"",      // overlong '/'
      "\"\xED\xA0\x80\"",      // UTF-16 surrogate encoded in UTF-8
      "\"\xF4\x90\x80\x80\"",  // above U+10FFFF
      "\"\xC3\"",              // truncated
      "\"\xE2\x82\"",          // truncated
      "\"\x80\"",              // stray continuation byte
  };
  for (const char* text : bad) EXPECT_FALSE(parse_json(text).is_ok()) << ::testing::PrintToString(text);
}

TEST(Json, ErrorsCarryTheByteOffset) {
  const Result<JsonValue> r = parse_json("[1, 2, x]");
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("byte 7"));
  const Result<JsonValue> s = parse_json("{\"a\": 1, \"b\": tru}");
  ASSERT_FALSE(s.is_ok());
  EXPECT_THAT(s.status().message(), HasSubstr("byte 14"));
}

TEST(Json, RejectsDuplicateKeysNamingTheKey) {
  const Result<JsonValue> r = parse_json(R"({"a": 1, "b": 2, "a": 3})");
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("duplicate key \"a\""));
  EXPECT_THAT(r.status().message(), HasSubstr("byte 17"));
  // Equal after unescaping counts as a duplicate too.
  EXPECT_FALSE(parse_json(R"({"a": 1, "\u0061": 2})").is_ok());
  // The same key in different objects is fine.
  EXPECT_TRUE(parse_json(R"({"a": {"a": 1}, "b": {"a": 2}})").is_ok());
}

TEST(Json, EnforcesTheDepthLimit) {
  JsonLimits limits;
  limits.max_depth = 64;
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(parse_json(ok, limits).is_ok());
  const std::string too_deep = std::string(65, '[') + std::string(65, ']');
  const Result<JsonValue> r = parse_json(too_deep, limits);
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("nesting deeper than 64"));
  // A pathological input fails cleanly instead of exhausting the stack.
  EXPECT_FALSE(parse_json(std::string(1000000, '['), limits).is_ok());
  EXPECT_FALSE(parse_json(std::string(100000, '{'), limits).is_ok());
}

TEST(Json, EnforcesInputSizeAndValueCountLimits) {
  JsonLimits limits;
  limits.max_input_bytes = 10;
  EXPECT_TRUE(parse_json("[1,2,3,4]", limits).is_ok());
  EXPECT_FALSE(parse_json("[1,2,3,4,5]", limits).is_ok());
  limits = JsonLimits();
  limits.max_values = 4;
  EXPECT_TRUE(parse_json("[1,2,3]", limits).is_ok());  // the array counts as a value
  const Result<JsonValue> r = parse_json("[1,2,3,4]", limits);
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("more than 4 values"));
}

TEST(Json, UnderflowRoundsToZeroButOverflowIsAnError) {
  const JsonValue tiny = parse_ok("1e-400");
  EXPECT_EQ(tiny.as_double(), 0.0);
  const JsonValue neg_tiny = parse_ok("-0.0000000000000000000000000000000000000000000000000000000001e-300");
  EXPECT_EQ(neg_tiny.as_double(), 0.0);
  EXPECT_TRUE(std::signbit(neg_tiny.as_double()));
  EXPECT_DOUBLE_EQ(parse_ok("1.7976931348623157e308").as_double(), std::numeric_limits<double>::max());
  EXPECT_FALSE(parse_json("1.8e308").is_ok());
  EXPECT_FALSE(parse_json("123456789e301").is_ok());
}

TEST(Json, ObjectsKeepFileOrderAndFindKeys) {
  const JsonValue v = parse_ok(R"({"z": 1, "a": [true, null], "m": {"k": "v"}})");
  ASSERT_EQ(v.members().size(), 3u);
  EXPECT_EQ(v.members()[0].key, "z");
  EXPECT_EQ(v.members()[1].key, "a");
  EXPECT_EQ(v.members()[2].key, "m");
  ASSERT_NE(v.find("a"), nullptr);
  EXPECT_EQ(v.find("a")->items().size(), 2u);
  EXPECT_EQ(v.find("m")->find("k")->as_string(), "v");
  EXPECT_EQ(v.find("nope"), nullptr);
}

TEST(Json, SerializesCompactlyWithEscapes) {
  JsonValue o = JsonValue::object();
  o.add("s", JsonValue::string("a\"b\\c\n\x01\xC3\xA9"));
  o.add("i", JsonValue::integer(-9007199254740993LL));
  o.add("d", JsonValue::number(0.1));
  o.add("e", JsonValue::number(1e-6));
  JsonValue a = JsonValue::array();
  a.push_back(JsonValue::boolean(true));
  a.push_back(JsonValue());
  a.push_back(JsonValue::object());
  o.add("a", std::move(a));
  const std::string text = to_json_string(o);
  EXPECT_EQ(text,
            "{\"s\":\"a\\\"b\\\\c\\n\\u0001\xC3\xA9\",\"i\":-9007199254740993,\"d\":0.1,\"e\":1e-06,"
            "\"a\":[true,null,{}]}");
  // And it parses back to the same values.
  const JsonValue back = parse_ok(text);
  EXPECT_EQ(back.find("s")->as_string(), "a\"b\\c\n\x01\xC3\xA9");
  EXPECT_EQ(back.find("i")->as_int64(), -9007199254740993LL);
  EXPECT_EQ(back.find("d")->as_double(), 0.1);
  EXPECT_EQ(back.find("e")->as_double(), 1e-6);
  EXPECT_EQ(to_json_string(back), text);
}

TEST(Json, DoublesRoundTripExactly) {
  for (const double d : {3.141592653589793, -2.5e-310, 1.7976931348623157e308, 4.9e-324, 123456.789, 1.0 / 3}) {
    const JsonValue back = parse_ok(to_json_string(JsonValue::number(d)));
    EXPECT_EQ(back.as_double(), d) << d;
  }
}

TEST(Json, AccessorsOnTheWrongTypeAreNeutral) {
  const JsonValue v = parse_ok("[1]");
  EXPECT_EQ(v.as_string(), "");
  EXPECT_FALSE(v.as_bool());
  EXPECT_FALSE(v.as_int64().has_value());
  EXPECT_EQ(v.find("x"), nullptr);
  EXPECT_TRUE(v.members().empty());
}

}  // namespace
}  // namespace recon::gpu
