// ModelRepository: see model_repository.h.
#include "daemon/serving/model_repository.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <vector>

#include "daemon/service/config_values.h"
#include "daemon/serving/triton_config.h"

namespace recon::daemon {
namespace {

namespace fs = std::filesystem;

constexpr uintmax_t kMaxConfBytes = 64 << 10;

// A configuration file (model.conf, config.pbtxt) readable and at most kMaxConfBytes.
Status check_conf_size(const fs::path& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return invalid_argument("cannot read " + path.string() + ": " + ec.message());
  if (size > kMaxConfBytes) return invalid_argument(path.string() + " is larger than 64 KiB");
  return Status::ok();
}

// model.conf, parsed: the keys it set.
struct ModelConf {
  std::string kind;
  std::string weights;
  std::string backbone;
  std::optional<gpu::Precision> precision;
  std::optional<uint32_t> max_batch_size;
  std::optional<std::chrono::microseconds> max_queue_delay;
};

Result<ModelConf> read_model_conf(const fs::path& path) {
  RECON_RETURN_IF_ERROR(check_conf_size(path));
  std::ifstream in(path);
  if (!in) return invalid_argument("cannot open " + path.string());
  ModelConf conf;
  std::set<std::string> seen;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = path.string() + ":" + std::to_string(number) + ": ";
    const std::string_view text = trim(line);
    if (text.empty() || text.front() == '#') continue;
    const size_t equals = text.find('=');
    if (equals == std::string_view::npos) return invalid_argument(where + "expected key = value");
    const std::string key(trim(text.substr(0, equals)));
    const std::string value(trim(text.substr(equals + 1)));
    if (!seen.insert(key).second) return invalid_argument(where + "'" + key + "' is given twice");
    if (key == "kind") {
      conf.kind = value;
    } else if (key == "weights") {
      conf.weights = value;
    } else if (key == "backbone") {
      RECON_RETURN_IF_ERROR(check_model_name(value).with_context(where + "backbone"));
      conf.backbone = value;
    } else if (key == "precision") {
      auto precision = gpu::parse_precision(value);
      if (!precision.is_ok()) return precision.status().with_context(where + "precision");
      conf.precision = *precision;
    } else if (key == "max_batch_size") {
      auto n = parse_uint(value, 0, 1u << 16);
      if (!n.is_ok()) return n.status().with_context(where + key);
      conf.max_batch_size = static_cast<uint32_t>(*n);
    } else if (key == "max_queue_delay_us") {
      auto n = parse_uint(value, 0, 10'000'000);
      if (!n.is_ok()) return n.status().with_context(where + key);
      conf.max_queue_delay = std::chrono::microseconds(*n);
    } else {
      return invalid_argument(where + "unknown key '" + key +
                              "' (kind, weights, backbone, precision, max_batch_size, max_queue_delay_us)");
    }
  }
  return conf;
}

// Triton's config.pbtxt beside the versions (triton_config.h) into `spec`: its platform names the
// kind, max_batch_size with dynamic_batching the batching, its inputs and outputs the signature
// the model is checked against at load. Its name, when given, must be the directory's.
Status apply_triton_config(const fs::path& file, const fs::path& model_dir, ModelSpec& spec, bool kind_set) {
  RECON_RETURN_IF_ERROR(check_conf_size(file));
  std::ifstream in(file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  RECON_ASSIGN_OR_RETURN(TritonConfig config, parse_triton_config(text, file.string()));
  if (!config.name.empty() && config.name != model_dir.filename().string()) {
    return invalid_argument(file.string() + ": name \"" + config.name + "\" is not the model directory's (" +
                            model_dir.filename().string() + ")");
  }
  if (!kind_set && !config.platform.empty()) spec.kind = "onnx";
  spec.max_batch_size = config.max_batch_size;
  if (config.dynamic_batching && config.max_batch_size > 1) {
    spec.batching = BatchRule{config.max_batch_size, config.max_queue_delay, false};
    spec.batching->preferred = config.preferred_batch_sizes;
    std::sort(spec.batching->preferred.begin(), spec.batching->preferred.end());
    spec.batching->preferred.erase(std::unique(spec.batching->preferred.begin(), spec.batching->preferred.end()),
                                   spec.batching->preferred.end());
  }
  spec.declared_inputs = std::move(config.inputs);
  spec.declared_outputs = std::move(config.outputs);
  return Status::ok();
}

// A file name inside the directory it is looked up in: no separator, not "." or "..".
bool is_plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

// The highest numbered subdirectory of `dir` (0: none), or `wanted` if it exists.
Result<uint32_t> pick_version(const fs::path& dir, uint32_t wanted) {
  uint32_t highest = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.empty() || name.size() > 9 ||
        name.find_first_not_of("0123456789") != std::string::npos || name.front() == '0') {
      continue;
    }
    const auto number = static_cast<uint32_t>(std::stoul(name));
    if (wanted != 0 && number == wanted) return wanted;
    highest = std::max(highest, number);
  }
  if (ec) return invalid_argument("cannot list " + dir.string() + ": " + ec.message());
  if (wanted != 0) return not_found("model directory " + dir.string() + " has no version " + std::to_string(wanted));
  return highest;
}

// The one model file of `dir`: a *.safetensors file, or model.onnx (Triton's layout).
Result<fs::path> only_weights_file(const fs::path& dir) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && (e.path().extension() == ".safetensors" || e.path().filename() == "model.onnx")) {
      found.push_back(e.path());
    }
  }
  if (ec) return invalid_argument("cannot list " + dir.string() + ": " + ec.message());
  if (found.size() == 1) return found.front();
  return invalid_argument(dir.string() + " holds " + std::to_string(found.size()) +
                          " model files (.safetensors, model.onnx); name one with `weights =` in model.conf");
}

// An .onnx file is of kind onnx unless model.conf says otherwise.
void kind_from_file(ModelSpec& spec) {
  if (fs::path(spec.path).extension() == ".onnx") spec.kind = "onnx";
}

}  // namespace

Result<ModelSpec> ModelRepository::find(const std::string& entry, const std::string& name, uint32_t version) const {
  if (!enabled()) {
    return invalid_argument("this daemon has no model directory (--model-dir); it loads only its configured models");
  }
  const fs::path relative(entry);
  bool escapes = entry.empty() || relative.is_absolute();
  for (const auto& part : relative) escapes = escapes || part == "..";
  if (escapes) return invalid_argument("'" + entry + "' must be a relative path inside the model directory");
  if (relative.lexically_normal() == ".") return invalid_argument("'" + entry + "' names the model directory itself");
  const fs::path path = (fs::path(root_) / relative).lexically_normal();
  ModelSpec spec;
  spec.name = name;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    if (version != 0) return invalid_argument("'" + entry + "' is a weights file; only a model directory has versions");
    spec.path = path.string();
    kind_from_file(spec);
    return spec;
  }
  if (!fs::is_directory(path, ec)) return not_found("the model directory has no '" + entry + "'");

  ModelConf conf;
  if (fs::exists(path / "model.conf", ec)) {
    RECON_ASSIGN_OR_RETURN(conf, read_model_conf(path / "model.conf"));
  }
  if (!conf.kind.empty()) spec.kind = conf.kind;
  spec.backbone = conf.backbone;
  spec.precision = conf.precision;
  if (conf.max_batch_size) spec.max_batch_size = *conf.max_batch_size;
  if (conf.max_batch_size.value_or(0) > 1) {
    spec.batching = BatchRule{*conf.max_batch_size, conf.max_queue_delay.value_or(std::chrono::microseconds(0)), false};
  }
  if (fs::exists(path / "config.pbtxt", ec)) {
    if (conf.max_batch_size || conf.max_queue_delay) {
      return invalid_argument(path.string() + ": batching is set in model.conf and config.pbtxt; keep one");
    }
    RECON_RETURN_IF_ERROR(apply_triton_config(path / "config.pbtxt", path, spec, !conf.kind.empty()));
  }
  RECON_ASSIGN_OR_RETURN(spec.version, pick_version(path, version));
  const fs::path dir = spec.version == 0 ? path : path / std::to_string(spec.version);
  if (conf.weights.empty()) {
    RECON_ASSIGN_OR_RETURN(const fs::path weights, only_weights_file(dir));
    spec.path = weights.string();
  } else {
    if (!is_plain_name(conf.weights)) {
      return invalid_argument((path / "model.conf").string() +
                              ": weights must be a file name in the version directory");
    }
    spec.path = (dir / conf.weights).string();
    if (!fs::is_regular_file(spec.path, ec)) return not_found("model weights " + spec.path + " do not exist");
  }
  if (conf.kind.empty()) kind_from_file(spec);
  return spec;
}

}  // namespace recon::daemon
