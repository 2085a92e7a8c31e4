// JsonValue accessors and the compact serializer (see json.h); the parser is in json_parser.cpp.
#include "gpu/weights/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace recon::gpu {

// ---- JsonValue --------------------------------------------------------------------------------

JsonValue JsonValue::boolean(bool b) {
  JsonValue v;
  v.type_ = Type::kBool;
  v.bool_ = b;
  return v;
}

JsonValue JsonValue::number(double d) {
  if (!std::isfinite(d)) {
    std::fprintf(stderr, "recon: JsonValue::number given a non-finite value\n");
    std::abort();
  }
  JsonValue v;
  v.type_ = Type::kNumber;
  v.number_ = d;
  return v;
}

JsonValue JsonValue::integer(std::int64_t i) {
  JsonValue v;
  v.type_ = Type::kNumber;
  v.number_ = static_cast<double>(i);
  v.int_ = i;
  v.has_int_ = true;
  return v;
}

JsonValue JsonValue::string(std::string s) {
  JsonValue v;
  v.type_ = Type::kString;
  v.string_ = std::move(s);
  return v;
}

JsonValue JsonValue::array() {
  JsonValue v;
  v.type_ = Type::kArray;
  return v;
}

JsonValue JsonValue::object() {
  JsonValue v;
  v.type_ = Type::kObject;
  return v;
}

std::optional<std::int64_t> JsonValue::as_int64() const {
  if (type_ != Type::kNumber || !has_int_) return std::nullopt;
  return int_;
}

const std::string& JsonValue::as_string() const {
  static const std::string empty;
  return type_ == Type::kString ? string_ : empty;
}

void JsonValue::push_back(JsonValue v) {
  items_.push_back(std::move(v));
}

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const JsonMember& m : members_) {
    if (m.key == key) return &m.value;
  }
  return nullptr;
}

void JsonValue::add(std::string key, JsonValue v) {
  members_.push_back(JsonMember{std::move(key), std::move(v)});
}

const char* JsonValue::type_name(Type t) {
  switch (t) {
    case Type::kNull:
      return "null";
    case Type::kBool:
      return "boolean";
    case Type::kNumber:
      return "number";
    case Type::kString:
      return "string";
    case Type::kArray:
      return "array";
    case Type::kObject:
      return "object";
  }
  return "?";
}

namespace {

// ---- Serializer -------------------------------------------------------------------------------

void write_string(std::string& out, const std::string& s) {
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

void write_value(std::string& out, const JsonValue& v) {
  switch (v.type()) {
    case JsonValue::Type::kNull:
      out += "null";
      return;
    case JsonValue::Type::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case JsonValue::Type::kNumber: {
      char buf[64];
      const auto i = v.as_int64();
      const auto r = i ? std::to_chars(buf, buf + sizeof buf, *i) : std::to_chars(buf, buf + sizeof buf, v.as_double());
      out.append(buf, r.ptr);
      return;
    }
    case JsonValue::Type::kString:
      write_string(out, v.as_string());
      return;
    case JsonValue::Type::kArray: {
      out.push_back('[');
      bool first = true;
      for (const JsonValue& item : v.items()) {
        if (!first) out.push_back(',');
        first = false;
        write_value(out, item);
      }
      out.push_back(']');
      return;
    }
    case JsonValue::Type::kObject: {
      out.push_back('{');
      bool first = true;
      for (const JsonMember& m : v.members()) {
        if (!first) out.push_back(',');
        first = false;
        write_string(out, m.key);
        out.push_back(':');
        write_value(out, m.value);
      }
      out.push_back('}');
      return;
    }
  }
}

}  // namespace

std::string to_json_string(const JsonValue& value) {
  std::string out;
  write_value(out, value);
  return out;
}

}  // namespace recon::gpu
