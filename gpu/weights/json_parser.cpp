// Strict RFC 8259 parser for JsonValue (see json.h). It validates UTF-8, rejects lone surrogates,
// duplicate keys, leading zeros, NaN/Infinity literals, trailing commas and trailing garbage, and
// stops at the configured limits. Recursion depth is bounded by JsonLimits::max_depth.
#include <charconv>
#include <cstdio>
#include <unordered_set>

#include "gpu/weights/json.h"

namespace recon::gpu {

namespace {

class Parser {
 public:
  Parser(std::string_view text, const JsonLimits& limits) : text_(text), limits_(limits) {}

  Result<JsonValue> run() {
    if (text_.size() > limits_.max_input_bytes) {
      return invalid_argument("JSON text of " + std::to_string(text_.size()) + " bytes exceeds the limit of " +
                              std::to_string(limits_.max_input_bytes));
    }
    JsonValue root;
    skip_ws();
    RECON_RETURN_IF_ERROR(parse_value(root, 0));
    skip_ws();
    if (pos_ != text_.size()) return error("unexpected data after the JSON value");
    return root;
  }

 private:
  Status error(const std::string& what) const {
    return invalid_argument("JSON error at byte " + std::to_string(pos_) + ": " + what);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  unsigned char peek() const { return static_cast<unsigned char>(text_[pos_]); }

  void skip_ws() {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  Status count_value() {
    if (++values_ > limits_.max_values) {
      return error("more than " + std::to_string(limits_.max_values) + " values");
    }
    return Status::ok();
  }

  Status parse_value(JsonValue& out, int depth) {
    if (at_end()) return error("unexpected end of input, expected a value");
    RECON_RETURN_IF_ERROR(count_value());
    const char c = text_[pos_];
    switch (c) {
      case '{':
        return parse_object(out, depth + 1);
      case '[':
        return parse_array(out, depth + 1);
      case '"': {
        std::string s;
        RECON_RETURN_IF_ERROR(parse_string(s));
        out = JsonValue::string(std::move(s));
        return Status::ok();
      }
      case 't':
        return parse_literal("true", JsonValue::boolean(true), out);
      case 'f':
        return parse_literal("false", JsonValue::boolean(false), out);
      case 'n':
        return parse_literal("null", JsonValue(), out);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return parse_number(out);
        return error(std::string("unexpected character ") + describe(peek()));
    }
  }

  static std::string describe(unsigned char c) {
    char buf[16];
    if (c >= 0x20 && c < 0x7f) {
      std::snprintf(buf, sizeof buf, "'%c'", c);
    } else {
      std::snprintf(buf, sizeof buf, "0x%02x", c);
    }
    return buf;
  }

  Status parse_literal(std::string_view word, JsonValue value, JsonValue& out) {
    if (text_.substr(pos_, word.size()) != word) return error("invalid literal");
    pos_ += word.size();
    out = std::move(value);
    return Status::ok();
  }

  Status check_depth(int depth) const {
    if (depth > limits_.max_depth) {
      return error("nesting deeper than " + std::to_string(limits_.max_depth));
    }
    return Status::ok();
  }

  Status parse_array(JsonValue& out, int depth) {
    RECON_RETURN_IF_ERROR(check_depth(depth));
    ++pos_;  // '['
    out = JsonValue::array();
    skip_ws();
    if (!at_end() && text_[pos_] == ']') {
      ++pos_;
      return Status::ok();
    }
    for (;;) {
      JsonValue item;
      skip_ws();
      RECON_RETURN_IF_ERROR(parse_value(item, depth));
      out.push_back(std::move(item));
      skip_ws();
      if (at_end()) return error("unterminated array");
      const char c = text_[pos_++];
      if (c == ']') return Status::ok();
      if (c != ',') {
        --pos_;
        return error("expected ',' or ']' in array");
      }
    }
  }

  Status parse_object(JsonValue& out, int depth) {
    RECON_RETURN_IF_ERROR(check_depth(depth));
    ++pos_;  // '{'
    out = JsonValue::object();
    skip_ws();
    if (!at_end() && text_[pos_] == '}') {
      ++pos_;
      return Status::ok();
    }
    std::unordered_set<std::string> seen;
    for (;;) {
      skip_ws();
      if (at_end() || text_[pos_] != '"') return error("expected a string key in object");
      const std::size_t key_pos = pos_;
      std::string key;
      RECON_RETURN_IF_ERROR(parse_string(key));
      if (!seen.insert(key).second) {
        pos_ = key_pos;
        return error("duplicate key \"" + key + "\"");
      }
      skip_ws();
      if (at_end() || text_[pos_] != ':') return error("expected ':' after object key");
      ++pos_;
      skip_ws();
      JsonValue value;
      RECON_RETURN_IF_ERROR(parse_value(value, depth));
      out.add(std::move(key), std::move(value));
      skip_ws();
      if (at_end()) return error("unterminated object");
      const char c = text_[pos_++];
      if (c == '}') return Status::ok();
      if (c != ',') {
        --pos_;
        return error("expected ',' or '}' in object");
      }
    }
  }

  static void append_utf8(std::string& s, std::uint32_t cp) {
    if (cp < 0x80) {
      s.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // Reads the 4 hex digits after "\u"; pos_ points at the first digit.
  Status parse_hex4(std::uint32_t& out) {
    if (text_.size() - pos_ < 4) return error("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_ + i];
      std::uint32_t d;
      if (c >= '0' && c <= '9') {
        d = static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        return error("invalid hex digit in \\u escape");
      }
      out = out * 16 + d;
    }
    pos_ += 4;
    return Status::ok();
  }

  Status parse_escape(std::string& s) {
    if (at_end()) return error("unterminated string");
    const char c = text_[pos_++];
    switch (c) {
      case '"':
        s.push_back('"');
        return Status::ok();
      case '\\':
        s.push_back('\\');
        return Status::ok();
      case '/':
        s.push_back('/');
        return Status::ok();
      case 'b':
        s.push_back('\b');
        return Status::ok();
      case 'f':
        s.push_back('\f');
        return Status::ok();
      case 'n':
        s.push_back('\n');
        return Status::ok();
      case 'r':
        s.push_back('\r');
        return Status::ok();
      case 't':
        s.push_back('\t');
        return Status::ok();
      case 'u':
        break;
      default:
        --pos_;
        return error("invalid escape character");
    }
    std::uint32_t cp = 0;
    RECON_RETURN_IF_ERROR(parse_hex4(cp));
    if (cp >= 0xDC00 && cp <= 0xDFFF) return error("lone low surrogate in \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (text_.size() - pos_ < 2 || text_[pos_] != '\\' || text_[pos_ + 1] != 'u') {
        return error("high surrogate not followed by a low surrogate");
      }
      pos_ += 2;
      std::uint32_t low = 0;
      RECON_RETURN_IF_ERROR(parse_hex4(low));
      if (low < 0xDC00 || low > 0xDFFF) return error("high surrogate not followed by a low surrogate");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(s, cp);
    return Status::ok();
  }

  // Validates one UTF-8 sequence starting at pos_ (first byte >= 0x80) and copies it.
  Status copy_utf8(std::string& s) {
    const unsigned char b0 = peek();
    int extra;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      extra = 1;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      extra = 2;
      if (b0 == 0xE0) lo = 0xA0;  // overlong
      if (b0 == 0xED) hi = 0x9F;  // UTF-16 surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      extra = 3;
      if (b0 == 0xF0) lo = 0x90;  // overlong
      if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return error("invalid UTF-8 lead byte " + describe(b0));
    }
    if (text_.size() - pos_ <= static_cast<std::size_t>(extra)) return error("truncated UTF-8 sequence");
    for (int i = 1; i <= extra; ++i) {
      const auto b = static_cast<unsigned char>(text_[pos_ + i]);
      const unsigned char min = i == 1 ? lo : 0x80;
      const unsigned char max = i == 1 ? hi : 0xBF;
      if (b < min || b > max) return error("invalid UTF-8 sequence");
    }
    s.append(text_.substr(pos_, extra + 1));
    pos_ += extra + 1;
    return Status::ok();
  }

  Status parse_string(std::string& s) {
    ++pos_;  // opening quote
    for (;;) {
      if (at_end()) return error("unterminated string");
      const unsigned char c = peek();
      if (c == '"') {
        ++pos_;
        return Status::ok();
      }
      if (c == '\\') {
        ++pos_;
        RECON_RETURN_IF_ERROR(parse_escape(s));
      } else if (c < 0x20) {
        return error("unescaped control character " + describe(c) + " in string");
      } else if (c < 0x80) {
        s.push_back(static_cast<char>(c));
        ++pos_;
      } else {
        RECON_RETURN_IF_ERROR(copy_utf8(s));
      }
    }
  }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  Status parse_number(JsonValue& out) {
    const std::size_t start = pos_;
    bool integral = true;
    if (text_[pos_] == '-') ++pos_;
    if (at_end() || !is_digit(text_[pos_])) return error("expected a digit");
    if (text_[pos_] == '0') {
      ++pos_;
      if (!at_end() && is_digit(text_[pos_])) return error("leading zero in number");
    } else {
      while (!at_end() && is_digit(text_[pos_])) ++pos_;
    }
    if (!at_end() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (at_end() || !is_digit(text_[pos_])) return error("expected a digit after '.'");
      while (!at_end() && is_digit(text_[pos_])) ++pos_;
    }
    if (!at_end() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (!at_end() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (at_end() || !is_digit(text_[pos_])) return error("expected a digit in exponent");
      while (!at_end() && is_digit(text_[pos_])) ++pos_;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integral) {
      std::int64_t i = 0;
      const auto r = std::from_chars(first, last, i);
      if (r.ec == std::errc() && r.ptr == last) {
        out = JsonValue::integer(i);
        return Status::ok();
      }
    }
    double d = 0.0;
    const auto r = std::from_chars(first, last, d);
    if (r.ec == std::errc::result_out_of_range) {
      if (overflows(start)) {
        pos_ = start;
        return error("number out of range");
      }
      d = text_[start] == '-' ? -0.0 : 0.0;  // underflow rounds to zero
    } else if (r.ec != std::errc() || r.ptr != last) {
      pos_ = start;
      return error("malformed number");
    }
    out = JsonValue::number(d);
    return Status::ok();
  }

  // For a syntactically valid literal that from_chars rejected as out of range: true when its
  // magnitude is huge (overflow), false when tiny (underflow). Decided by the decimal exponent.
  bool overflows(std::size_t start) const {
    std::size_t p = start;
    if (text_[p] == '-') ++p;
    long long int_digits = 0;  // significant digits before '.'
    long long frac_zeros = 0;  // zeros right after '.' when the integer part is 0
    bool int_is_zero = text_[p] == '0';
    while (p < pos_ && is_digit(text_[p])) {
      ++int_digits;
      ++p;
    }
    if (p < pos_ && text_[p] == '.') {
      ++p;
      while (int_is_zero && p < pos_ && text_[p] == '0') {
        ++frac_zeros;
        ++p;
      }
      while (p < pos_ && is_digit(text_[p])) ++p;
    }
    long long exp = 0;
    if (p < pos_ && (text_[p] == 'e' || text_[p] == 'E')) {
      ++p;
      bool neg = false;
      if (text_[p] == '+' || text_[p] == '-') neg = text_[p++] == '-';
      while (p < pos_ && is_digit(text_[p])) {
        if (exp < 1000000000) exp = exp * 10 + (text_[p] - '0');
        ++p;
      }
      if (neg) exp = -exp;
    }
    const long long magnitude = int_is_zero ? exp - frac_zeros - 1 : exp + int_digits - 1;
    return magnitude > 0;
  }

  std::string_view text_;
  const JsonLimits& limits_;
  std::size_t pos_ = 0;
  std::size_t values_ = 0;
};

}  // namespace

Result<JsonValue> parse_json(std::string_view text, const JsonLimits& limits) {
  return Parser(text, limits).run();
}

}  // namespace recon::gpu
