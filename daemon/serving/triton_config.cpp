// Triton's config.pbtxt subset: see triton_config.h. A tokenizer, a recursive-descent reader of
// the protobuf text format into a small tree (fields with scalar or message values, in order), and
// the interpretation of that tree; depth and size are bounded, since the file is a user's.
#include "daemon/serving/triton_config.h"

#include <cctype>
#include <charconv>
#include <memory>

namespace recon::daemon {
namespace {

constexpr size_t kMaxDepth = 8;
constexpr size_t kMaxTextBytes = 1 << 20;

struct Token {
  enum class Kind { kName, kNumber, kString, kPunct, kEnd } kind = Kind::kEnd;
  std::string text;
  int line = 1;
};

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  Token next() {
    skip_space_and_comments();
    Token t;
    t.line = line_;
    if (at_ >= text_.size()) return t;
    const char c = text_[at_];
    if (c == '"' || c == '\'') {
      t.kind = Token::Kind::kString;
      ++at_;
      while (at_ < text_.size() && text_[at_] != c && text_[at_] != '\n') t.text += text_[at_++];
      if (at_ < text_.size() && text_[at_] == c) {
        ++at_;
      } else {
        t.kind = Token::Kind::kPunct;  // an unterminated string: reported by the parser
        t.text = "unterminated string";
      }
      return t;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      t.kind = Token::Kind::kName;
      while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) {
        t.text += text_[at_++];
      }
      return t;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') {
      t.kind = Token::Kind::kNumber;
      while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '-' ||
                                    text_[at_] == '+' || text_[at_] == '.')) {
        t.text += text_[at_++];
      }
      return t;
    }
    t.kind = Token::Kind::kPunct;
    t.text = std::string(1, c);
    ++at_;
    return t;
  }

 private:
  void skip_space_and_comments() {
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '\n') {
        ++line_;
        ++at_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++at_;
      } else if (c == '#') {
        while (at_ < text_.size() && text_[at_] != '\n') ++at_;
      } else {
        return;
      }
    }
  }

  std::string_view text_;
  size_t at_ = 0;
  int line_ = 1;
};

// A message of the text format: its fields in order; a field's value is a scalar or a message.
struct Message;
struct Field {
  std::string name;
  int line = 0;
  std::string scalar;                // a name, number or string
  std::unique_ptr<Message> message;  // or this
};
struct Message {
  std::vector<Field> fields;
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : lexer_(text), file_(file) { advance(); }

  Result<Message> parse_top() {
    Message top;
    RECON_RETURN_IF_ERROR(parse_fields(top, 0, /*closing=*/""));
    return top;
  }

 private:
  void advance() { token_ = lexer_.next(); }
  Status error(const std::string& what) const {
    return invalid_argument(file_ + ":" + std::to_string(token_.line) + ": " + what);
  }
  bool is_punct(const char* p) const { return token_.kind == Token::Kind::kPunct && token_.text == p; }

  Status parse_fields(Message& into, size_t depth, const char* closing) {
    if (depth > kMaxDepth) return error("nested too deeply");
    while (true) {
      if (token_.kind == Token::Kind::kEnd) {
        if (*closing != '\0') return error(std::string("missing '") + closing + "'");
        return Status::ok();
      }
      if (*closing != '\0' && is_punct(closing)) {
        advance();
        return Status::ok();
      }
      if (token_.kind != Token::Kind::kName) return error("expected a field name, found '" + token_.text + "'");
      const std::string name = token_.text;
      const int line = token_.line;
      advance();
      const bool colon = is_punct(":");
      if (colon) advance();
      if (is_punct("[")) {
        advance();
        while (!is_punct("]")) {
          RECON_RETURN_IF_ERROR(parse_value(into, name, line, depth, colon));
          if (is_punct(",")) advance();
          if (token_.kind == Token::Kind::kEnd) return error("missing ']'");
        }
        advance();
      } else {
        RECON_RETURN_IF_ERROR(parse_value(into, name, line, depth, colon));
      }
      if (is_punct(",") || is_punct(";")) advance();
    }
  }

  Status parse_value(Message& into, const std::string& name, int line, size_t depth, bool colon) {
    Field field{name, line, {}, nullptr};
    if (is_punct("{") || is_punct("<")) {
      const char* closing = is_punct("{") ? "}" : ">";
      advance();
      field.message = std::make_unique<Message>();
      RECON_RETURN_IF_ERROR(parse_fields(*field.message, depth + 1, closing));
    } else if (!colon) {
      return error("expected ':' after '" + name + "'");
    } else if (token_.kind == Token::Kind::kName || token_.kind == Token::Kind::kNumber ||
               token_.kind == Token::Kind::kString) {
      field.scalar = token_.text;
      advance();
    } else {
      return error("expected a value for '" + name + "', found '" + token_.text + "'");
    }
    into.fields.push_back(std::move(field));
    return Status::ok();
  }

  Lexer lexer_;
  const std::string& file_;
  Token token_;
};

class Reader {
 public:
  explicit Reader(const std::string& file) : file_(file) {}

  Status error(const Field& f, const std::string& what) const {
    return invalid_argument(file_ + ":" + std::to_string(f.line) + ": " + f.name + ": " + what);
  }
  Result<std::string> scalar(const Field& f) const {
    if (f.message) return error(f, "expected a value, not a message");
    return f.scalar;
  }
  Result<int64_t> integer(const Field& f, int64_t min, int64_t max) const {
    RECON_ASSIGN_OR_RETURN(std::string text, scalar(f));
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max) {
      return error(f, "expected a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "], got '" +
                          text + "'");
    }
    return v;
  }
  Result<const Message*> message(const Field& f) const {
    if (!f.message) return error(f, "expected a message { ... }");
    return f.message.get();
  }

  Result<DeclaredTensor> tensor(const Field& f) const {
    RECON_ASSIGN_OR_RETURN(const Message* m, message(f));
    DeclaredTensor t;
    for (const Field& g : m->fields) {
      if (g.name == "name") {
        RECON_ASSIGN_OR_RETURN(t.name, scalar(g));
      } else if (g.name == "data_type") {
        RECON_ASSIGN_OR_RETURN(t.data_type, scalar(g));
        if (t.data_type.rfind("TYPE_", 0) != 0) return error(g, "expected TYPE_..., got '" + t.data_type + "'");
      } else if (g.name == "dims") {
        RECON_ASSIGN_OR_RETURN(int64_t d, integer(g, -1, int64_t{1} << 40));
        if (d == 0) return error(g, "a dimension is -1 (any) or at least 1");
        t.dims.push_back(d);
      } else if (g.name == "format" || g.name == "optional") {
        RECON_ASSIGN_OR_RETURN(std::string ignored, scalar(g));
        if (ignored != "FORMAT_NONE" && ignored != "false") return error(g, "recond supports only its default");
      } else {
        return error(g, "not a field recond reads (name, data_type, dims)");
      }
    }
    if (t.name.empty()) return error(f, "needs a name");
    return t;
  }

  Status dynamic_batching(const Field& f, TritonConfig& config) const {
    RECON_ASSIGN_OR_RETURN(const Message* m, message(f));
    config.dynamic_batching = true;
    for (const Field& g : m->fields) {
      if (g.name == "max_queue_delay_microseconds") {
        RECON_ASSIGN_OR_RETURN(int64_t us, integer(g, 0, 10'000'000));
        config.max_queue_delay = std::chrono::microseconds(us);
      } else if (g.name == "preferred_batch_size") {
        RECON_ASSIGN_OR_RETURN(int64_t n, integer(g, 1, 1 << 16));
        config.preferred_batch_sizes.push_back(static_cast<uint32_t>(n));
      } else {
        return error(g, "not a field recond reads (max_queue_delay_microseconds, preferred_batch_size)");
      }
    }
    return Status::ok();
  }

  Status instance_group(const Field& f) const {
    RECON_ASSIGN_OR_RETURN(const Message* m, message(f));
    for (const Field& g : m->fields) {
      if (g.name == "count") {
        RECON_ASSIGN_OR_RETURN(int64_t n, integer(g, 1, 1 << 16));
        if (n != 1) return error(g, "recond runs one instance of a model per GPU (count: 1)");
      } else if (g.name == "kind") {
        RECON_ASSIGN_OR_RETURN(std::string kind, scalar(g));
        if (kind != "KIND_GPU" && kind != "KIND_AUTO") return error(g, "recond runs models on GPUs (KIND_GPU)");
      } else if (g.name == "name") {
        RECON_ASSIGN_OR_RETURN(std::string ignored, scalar(g));
      } else {
        return error(g, "not a field recond reads (count, kind; the model runs on every GPU of the daemon)");
      }
    }
    return Status::ok();
  }

  Result<TritonConfig> read(const Message& top) const {
    TritonConfig config;
    for (const Field& f : top.fields) {
      if (f.name == "name") {
        RECON_ASSIGN_OR_RETURN(config.name, scalar(f));
      } else if (f.name == "platform" || f.name == "backend") {
        RECON_ASSIGN_OR_RETURN(std::string p, scalar(f));
        if (p != "onnxruntime_onnx" && p != "onnxruntime") {
          return error(f, "recond serves ONNX models (onnxruntime_onnx / onnxruntime), not '" + p + "'");
        }
        config.platform = "onnxruntime_onnx";
      } else if (f.name == "max_batch_size") {
        RECON_ASSIGN_OR_RETURN(int64_t n, integer(f, 0, 1 << 16));
        config.max_batch_size = static_cast<uint32_t>(n);
      } else if (f.name == "dynamic_batching") {
        RECON_RETURN_IF_ERROR(dynamic_batching(f, config));
      } else if (f.name == "instance_group") {
        RECON_RETURN_IF_ERROR(instance_group(f));
      } else if (f.name == "input" || f.name == "output") {
        RECON_ASSIGN_OR_RETURN(DeclaredTensor t, tensor(f));
        (f.name == "input" ? config.inputs : config.outputs).push_back(std::move(t));
      } else if (f.name == "version_policy" || f.name == "default_model_filename") {
        return error(f, "not supported: recond serves the highest version, or the one a load names, from model.onnx");
      } else {
        return error(f,
                     "not a field recond reads (name, platform, backend, max_batch_size, dynamic_batching, "
                     "instance_group, input, output)");
      }
    }
    for (uint32_t preferred : config.preferred_batch_sizes) {
      if (preferred > config.max_batch_size) {
        return invalid_argument(file_ + ": preferred_batch_size " + std::to_string(preferred) +
                                " is larger than max_batch_size " + std::to_string(config.max_batch_size));
      }
    }
    return config;
  }

 private:
  const std::string& file_;
};

}  // namespace

Result<TritonConfig> parse_triton_config(std::string_view text, const std::string& file) {
  if (text.size() > kMaxTextBytes) return invalid_argument(file + " is larger than 1 MiB");
  Parser parser(text, file);
  RECON_ASSIGN_OR_RETURN(Message top, parser.parse_top());
  return Reader(file).read(top);
}

}  // namespace recon::daemon
