// A small, strict, bounded JSON (RFC 8259) value, parser and serializer.
// Used for safetensors headers and the MASt3R config held in their metadata; both come from
// untrusted files, so the parser enforces size, depth and value-count limits and never throws.
// It must not grow extensions (comments, NaN literals, trailing commas): strict in, strict out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/status.h"

namespace recon::gpu {

struct JsonMember;

class JsonValue {
 public:
  enum class Type : std::uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;  // null
  static JsonValue boolean(bool b);
  // Aborts on NaN or infinity: JSON cannot hold them, so passing one is a caller bug.
  static JsonValue number(double d);
  static JsonValue integer(std::int64_t i);
  static JsonValue string(std::string s);
  static JsonValue array();
  static JsonValue object();

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  // Accessors return a neutral value (false, 0, "", empty) on a type mismatch; check first.
  bool as_bool() const { return type_ == Type::kBool && bool_; }
  double as_double() const { return type_ == Type::kNumber ? number_ : 0.0; }
  // Set only for numbers written as integer literals (no fraction, no exponent) that fit int64.
  std::optional<std::int64_t> as_int64() const;
  const std::string& as_string() const;

  // Arrays.
  const std::vector<JsonValue>& items() const { return items_; }
  void push_back(JsonValue v);

  // Objects keep insertion (file) order.
  const std::vector<JsonMember>& members() const { return members_; }
  const JsonValue* find(std::string_view key) const;
  // Appends without a duplicate check; the serializer trusts its caller, the parser does not.
  void add(std::string key, JsonValue v);

  static const char* type_name(Type t);

 private:
  Type type_ = Type::kNull;
  bool bool_ = false;
  bool has_int_ = false;
  double number_ = 0.0;
  std::int64_t int_ = 0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<JsonMember> members_;
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

struct JsonLimits {
  std::size_t max_input_bytes = 128u << 20;
  int max_depth = 64;
  std::size_t max_values = 1u << 20;  // bounds memory: each value costs ~150 bytes
};

// Parses one JSON text. Errors are kInvalidArgument with a message like
// "JSON error at byte 17: duplicate key \"a\"".
Result<JsonValue> parse_json(std::string_view text, const JsonLimits& limits = {});

// Compact serialization (no spaces). Strings are written as given; control characters,
// '"' and '\\' are escaped. Integers print exactly, other numbers as shortest round-trip.
std::string to_json_string(const JsonValue& value);

}  // namespace recon::gpu
