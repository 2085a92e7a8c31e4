// recond.conf and command-line parsing. See config.h. The options table below is the single list
// of keys: the file parser, the flag parser, --help and format_config all read it.
#include "daemon/service/config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace recon::daemon {
namespace {

enum class Origin { kFile, kFlag };

struct ApplyContext {
  Origin origin = Origin::kFile;
  bool warmup_replaced = false;  // the first --warmup replaces the file's list, later ones append
};

using Apply = Status (*)(DaemonConfig&, std::string_view value, ApplyContext&);
using Show = std::string (*)(const DaemonConfig&);

struct Option {
  std::string_view section;
  std::string_view key;
  std::string_view flag;
  std::string_view metavar;
  std::string_view help;
  Apply apply;
  Show show;
};

constexpr std::string_view kSections[] = {"gpu", "models", "warmup", "limits", "sockets", "network", "log"};

// A path from the file must be absolute (the daemon runs from /); one from a flag is made
// absolute against the working directory.
Result<std::string> path_value(std::string_view value, const ApplyContext& context) {
  const std::string path(trim(value));
  if (path.empty()) return invalid_argument("expected a path, got nothing");
  if (path.front() == '/') return path;
  if (context.origin == Origin::kFile) {
    return invalid_argument("path '" + path + "' must be absolute (recond runs with / as its working directory)");
  }
  std::error_code error;
  const auto absolute = std::filesystem::absolute(path, error);
  if (error) return invalid_argument("cannot make '" + path + "' absolute: " + error.message());
  return absolute.lexically_normal().string();
}

template <typename T>
Status set_uint(T& field, std::string_view value, uint64_t min, uint64_t max) {
  RECON_ASSIGN_OR_RETURN(const uint64_t parsed, parse_uint(trim(value), min, max));
  field = static_cast<T>(parsed);
  return Status::ok();
}

Status set_bytes(uint64_t& field, std::string_view value, uint64_t max) {
  RECON_ASSIGN_OR_RETURN(field, parse_byte_size(value, uint64_t{4} << 10, max));
  return Status::ok();
}

Status set_socket(std::string& field, std::string_view value, const ApplyContext& context) {
  RECON_ASSIGN_OR_RETURN(std::string path, path_value(value, context));
  RECON_RETURN_IF_ERROR(check_socket_path(path));
  field = std::move(path);
  return Status::ok();
}

Status set_group(std::string& field, std::string_view value) {
  const std::string_view name = trim(value);
  RECON_RETURN_IF_ERROR(check_group_name(name));
  field = std::string(name);
  return Status::ok();
}

// "512x384, 512x288" or "512x384 512x288"; empty means none.
Status add_resolutions(std::vector<Resolution>& list, std::string_view value) {
  std::string text(value);
  std::replace(text.begin(), text.end(), ',', ' ');
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    RECON_ASSIGN_OR_RETURN(const Resolution r, parse_resolution(word));
    if (std::find(list.begin(), list.end(), r) == list.end()) list.push_back(r);
  }
  return Status::ok();
}

std::string show_u64(uint64_t value) {
  return std::to_string(value);
}

constexpr uint64_t kTiB = uint64_t{1} << 40;

constexpr Option kOptions[] = {
    {"gpu", "device", "device", "SELECTOR",
     "GPUs to use: a device index or a name substring, a comma-separated list of them, or all (every discrete GPU); "
     "empty picks the best one",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) {
       c.device = std::string(trim(v));
       return Status::ok();
     },
     [](const DaemonConfig& c) { return c.device; }},
    {"gpu", "precision", "precision", "fp32|fp32-split|fp16|fp16-heads",
     "the models' precision unless theirs is given (gpu/precision.h: fp16 accumulates in fp32 and keeps "
     "MASt3R's heads in fp32, fp16-heads does not; fp32-split puts an ONNX model's fp32 GEMMs on tensor cores)",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) {
       RECON_ASSIGN_OR_RETURN(c.precision, gpu::parse_precision(trim(v)));
       return Status::ok();
     },
     [](const DaemonConfig& c) { return std::string(gpu::precision_name(c.precision)); }},
    {"gpu", "pipeline_cache", "pipeline-cache", "auto|off|PATH",
     "persistent VkPipelineCache file; auto: $CACHE_DIRECTORY/pipeline-cache.bin",
     [](DaemonConfig& c, std::string_view v, ApplyContext& context) {
       const std::string_view t = trim(v);
       if (t == "auto" || t == "off") {
         c.pipeline_cache = t == "auto" ? PipelineCacheMode::kAuto : PipelineCacheMode::kOff;
         c.pipeline_cache_path.clear();
         return Status::ok();
       }
       auto path = path_value(t, context);
       if (!path) return path.status().with_context("expected auto, off or a path");
       c.pipeline_cache = PipelineCacheMode::kPath;
       c.pipeline_cache_path = std::move(path).value();
       return Status::ok();
     },
     [](const DaemonConfig& c) {
       return c.pipeline_cache == PipelineCacheMode::kPath  ? c.pipeline_cache_path
              : c.pipeline_cache == PipelineCacheMode::kOff ? std::string("off")
                                                            : std::string("auto");
     }},
    {"warmup", "resolutions", "warmup", "WxH",
     "warm-up resolution, e.g. 512x384 (repeatable; the first replaces the file's list)",
     [](DaemonConfig& c, std::string_view v, ApplyContext& context) {
       if (context.origin == Origin::kFlag && !context.warmup_replaced) {
         c.warmup.clear();
         context.warmup_replaced = true;
       }
       return add_resolutions(c.warmup, v);
     },
     [](const DaemonConfig& c) {
       std::string out;
       for (const Resolution& r : c.warmup) out += (out.empty() ? "" : ", ") + format_resolution(r);
       return out;
     }},
    {"limits", "max_queue", "max-queue", "N", "requests queued over all clients (1..65536)",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) { return set_uint(c.max_queue, v, 1, 65536); },
     [](const DaemonConfig& c) { return show_u64(c.max_queue); }},
    {"limits", "max_clients", "max-clients", "N", "concurrent local client sessions (1..4096)",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) { return set_uint(c.max_clients, v, 1, 4096); },
     [](const DaemonConfig& c) { return show_u64(c.max_clients); }},
    {"limits", "max_remote_sessions", "max-remote-sessions", "N",
     "sessions opened over ZeroMQ (no side channel), all peers together (0..4096; 0 = none)",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) { return set_uint(c.max_remote_sessions, v, 0, 4096); },
     [](const DaemonConfig& c) { return show_u64(c.max_remote_sessions); }},
    {"limits", "max_remote_sessions_per_peer", "max-remote-sessions-per-peer", "N",
     "remote sessions of one peer: a uid on the client socket, an IP address over tcp (1..4096)",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) {
       return set_uint(c.max_remote_sessions_per_peer, v, 1, 4096);
     },
     [](const DaemonConfig& c) { return show_u64(c.max_remote_sessions_per_peer); }},
    {"limits", "max_regions_per_client", "max-regions-per-client", "N",
     "shared-memory regions one client may register (1..4096)",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) { return set_uint(c.max_regions_per_client, v, 1, 4096); },
     [](const DaemonConfig& c) { return show_u64(c.max_regions_per_client); }},
    {"limits", "max_region_bytes", "max-region-bytes", "SIZE", "size of one region (4KiB..1TiB)",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) { return set_bytes(c.max_region_bytes, v, kTiB); },
     [](const DaemonConfig& c) { return format_byte_size(c.max_region_bytes); }},
    {"limits", "max_client_bytes", "max-client-bytes", "SIZE", "all regions of one client (4KiB..4TiB)",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) { return set_bytes(c.max_client_bytes, v, 4 * kTiB); },
     [](const DaemonConfig& c) { return format_byte_size(c.max_client_bytes); }},
    {"limits", "max_total_region_bytes", "max-total-region-bytes", "SIZE",
     "all regions of all clients, i.e. pinned host memory (4KiB..16TiB)",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) {
       return set_bytes(c.max_total_region_bytes, v, 16 * kTiB);
     },
     [](const DaemonConfig& c) { return format_byte_size(c.max_total_region_bytes); }},
    {"limits", "max_handles_per_client", "max-handles-per-client", "N", "result handles one client may hold (1..65536)",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) { return set_uint(c.max_handles_per_client, v, 1, 65536); },
     [](const DaemonConfig& c) { return show_u64(c.max_handles_per_client); }},
    {"limits", "handle_ttl", "handle-ttl", "DURATION", "unreleased result handles expire after this (1s..24h)",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) {
       RECON_ASSIGN_OR_RETURN(c.handle_ttl, parse_duration(v, std::chrono::seconds(1), std::chrono::hours(24)));
       return Status::ok();
     },
     [](const DaemonConfig& c) { return format_duration(c.handle_ttl); }},
    {"sockets", "client", "client-socket", "PATH", "ZeroMQ request socket, if not socket-activated",
     [](DaemonConfig& c, std::string_view v, ApplyContext& context) { return set_socket(c.client_socket, v, context); },
     [](const DaemonConfig& c) { return c.client_socket; }},
    {"sockets", "regions", "regions-socket", "PATH", "region (memfd) socket, if not socket-activated",
     [](DaemonConfig& c, std::string_view v, ApplyContext& context) {
       return set_socket(c.regions_socket, v, context);
     },
     [](const DaemonConfig& c) { return c.regions_socket; }},
    {"sockets", "manager", "manager-socket", "PATH", "management socket, if not socket-activated",
     [](DaemonConfig& c, std::string_view v, ApplyContext& context) {
       return set_socket(c.manager_socket, v, context);
     },
     [](const DaemonConfig& c) { return c.manager_socket; }},
    {"sockets", "client_group", "client-group", "GROUP", "group of the client and region sockets recond binds",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) { return set_group(c.client_group, v); },
     [](const DaemonConfig& c) { return c.client_group; }},
    {"sockets", "manager_group", "manager-group", "GROUP",
     "group of the manager socket; manager requests from others are refused",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) { return set_group(c.manager_group, v); },
     [](const DaemonConfig& c) { return c.manager_group; }},
    {"network", "tcp", "tcp", "off|HOST:PORT",
     "also serve ZeroMQ over TCP (inline image bytes; needs AF_INET in the unit)",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) {
       if (trim(v) == "off") {
         c.tcp.reset();
         return Status::ok();
       }
       RECON_ASSIGN_OR_RETURN(c.tcp, parse_tcp_endpoint(v));
       return Status::ok();
     },
     [](const DaemonConfig& c) { return c.tcp ? format_tcp_endpoint(*c.tcp) : std::string("off"); }},
    {"network", "metrics_port", "metrics-port", "off|PORT", "serve Prometheus metrics on this TCP port",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) {
       if (trim(v) == "off") {
         c.metrics_port = 0;
         return Status::ok();
       }
       return set_uint(c.metrics_port, v, 1, 65535);
     },
     [](const DaemonConfig& c) { return c.metrics_port ? show_u64(c.metrics_port) : std::string("off"); }},
    {"log", "level", "log-level", "LEVEL", "least important messages logged: debug, info, warning or error",
     [](DaemonConfig& c, std::string_view v, ApplyContext&) {
       RECON_ASSIGN_OR_RETURN(c.log_level, parse_log_level(v));
       return Status::ok();
     },
     [](const DaemonConfig& c) { return std::string(log_level_name(c.log_level)); }},
};

// ---- Suggestions ---------------------------------------------------------------------------------

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (did you mean 'x'?)" when one candidate is close, else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

const Option* find_option(std::string_view section, std::string_view key) {
  for (const Option& o : kOptions) {
    if (o.section == section && o.key == key) return &o;
  }
  return nullptr;
}

const Option* find_flag(std::string_view flag) {
  for (const Option& o : kOptions) {
    if (o.flag == flag) return &o;
  }
  return nullptr;
}

// ---- Models --------------------------------------------------------------------------------------

Status set_model(DaemonConfig& config, std::string_view name, std::string_view value, const ApplyContext& context,
                 bool replace) {
  RECON_RETURN_IF_ERROR(check_model_name(name));
  auto path = path_value(value, context);
  if (!path) return path.status().with_context("model '" + std::string(name) + "'");
  for (ModelSource& model : config.models) {
    if (model.name != name) continue;
    if (!replace) return invalid_argument("model '" + std::string(name) + "' is listed twice");
    model.path = std::move(path).value();
    return Status::ok();
  }
  config.models.push_back({std::string(name), std::move(path).value()});
  return Status::ok();
}

// ---- File ----------------------------------------------------------------------------------------

// The value without a trailing " # comment"; "double quotes" keep '#' and outer spaces.
Result<std::string> value_text(std::string_view raw) {
  std::string_view v = trim(raw);
  if (!v.empty() && v.front() == '"') {
    const size_t close = v.find('"', 1);
    if (close == std::string_view::npos) return invalid_argument("unterminated quote");
    const std::string_view rest = trim(v.substr(close + 1));
    if (!rest.empty() && rest.front() != '#' && rest.front() != ';') {
      return invalid_argument("unexpected text after the closing quote: '" + std::string(rest) + "'");
    }
    return std::string(v.substr(1, close - 1));
  }
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] == '#' && (v[i - 1] == ' ' || v[i - 1] == '\t')) return std::string(trim(v.substr(0, i)));
  }
  if (!v.empty() && v.front() == '#') return std::string();
  return std::string(v);
}

// One file, line by line; errors are "name:line: ...".
class FileParser {
 public:
  FileParser(DaemonConfig& config, const std::string& name) : config_(config), name_(name) {}

  Status parse(std::string_view text) {
    size_t number = 0;
    while (!text.empty()) {
      const size_t end = text.find('\n');
      const std::string_view line = trim(text.substr(0, end));
      text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
      RECON_RETURN_IF_ERROR(parse_line(line, ++number));
    }
    return Status::ok();
  }

 private:
  Status parse_line(std::string_view line, size_t number) {
    if (line.empty() || line.front() == '#' || line.front() == ';') return Status::ok();
    const std::string where = name_ + ":" + std::to_string(number) + ": ";
    if (line.front() == '[') return parse_section(line, where);

    const size_t equals = line.find('=');
    if (equals == std::string_view::npos) {
      return invalid_argument(where + "expected 'key = value' or '[section]', got '" + std::string(line) + "'");
    }
    const std::string key(trim(line.substr(0, equals)));
    if (key.empty()) return invalid_argument(where + "missing key before '='");
    if (section_.empty()) return invalid_argument(where + "key '" + key + "' comes before any [section]");
    auto value = value_text(line.substr(equals + 1));
    if (!value) return value.status().with_context(where + key);

    const auto [it, inserted] = seen_.emplace(section_ + "." + key, number);
    if (!inserted) {
      return invalid_argument(where + "'" + key + "' in [" + section_ + "] was already set on line " +
                              std::to_string(it->second));
    }
    if (section_ == "models") {
      return set_model(config_, key, *value, context_, /*replace=*/false).with_context(where + key);
    }
    const Option* option = find_option(section_, key);
    if (option == nullptr) return invalid_argument(where + unknown_key(key));
    return option->apply(config_, *value, context_).with_context(where + key);
  }

  Status parse_section(std::string_view line, const std::string& where) {
    if (line.back() != ']') return invalid_argument(where + "expected '[section]', got '" + std::string(line) + "'");
    const std::string wanted(trim(line.substr(1, line.size() - 2)));
    if (std::find(std::begin(kSections), std::end(kSections), wanted) == std::end(kSections)) {
      const std::vector<std::string> names(std::begin(kSections), std::end(kSections));
      return invalid_argument(where + "unknown section [" + wanted + "]" + did_you_mean(wanted, names));
    }
    section_ = wanted;
    return Status::ok();
  }

  // "unknown key 'k' in [s]" plus where it belongs or what was meant.
  std::string unknown_key(const std::string& key) const {
    std::vector<std::string> here;
    std::string hint;
    for (const Option& o : kOptions) {
      if (o.section == section_) here.emplace_back(o.key);
      if (o.key == key) hint = " (it belongs in [" + std::string(o.section) + "])";
    }
    if (hint.empty()) hint = did_you_mean(key, here);
    return "unknown key '" + key + "' in [" + section_ + "]" + hint;
  }

  DaemonConfig& config_;
  const std::string& name_;
  ApplyContext context_{Origin::kFile};
  std::string section_;
  std::map<std::string, size_t> seen_;  // "section.key" → line, for duplicates
};

Status parse_into(DaemonConfig& config, std::string_view text, const std::string& name) {
  return FileParser(config, name).parse(text);
}

Result<std::string> read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return not_found("cannot read config file " + path + ": " + std::strerror(errno));
  }
  // Not only regular files: --config /dev/null (no file) and --config <(...) are useful.
  if (S_ISDIR(st.st_mode)) return invalid_argument("config file " + path + " is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open config file " + path);
  constexpr size_t kMaxBytes = 1 << 20;
  std::string content(kMaxBytes + 1, '\0');
  in.read(content.data(), static_cast<std::streamsize>(content.size()));
  if (in.bad()) return data_loss("error reading config file " + path);
  content.resize(static_cast<size_t>(in.gcount()));
  if (content.size() > kMaxBytes) return invalid_argument("config file " + path + " is larger than 1 MiB");
  return content;
}

// ---- Command line --------------------------------------------------------------------------------

struct FlagAssignment {
  std::string flag;  // as written, for errors
  const Option* option = nullptr;
  bool model = false;  // --model NAME=PATH
  std::string value;
};

std::vector<std::string> all_flag_names() {
  std::vector<std::string> names = {"config", "foreground", "check-config", "help", "model"};
  for (const Option& o : kOptions) names.emplace_back(o.flag);
  return names;
}

}  // namespace

Result<DaemonConfig> parse_config(std::string_view text, const std::string& name, DaemonConfig base) {
  RECON_RETURN_IF_ERROR(parse_into(base, text, name));
  RECON_RETURN_IF_ERROR(validate_config(base).with_context(name));
  return base;
}

Result<DaemonConfig> load_config_file(const std::string& path, DaemonConfig base) {
  RECON_ASSIGN_OR_RETURN(const std::string text, read_file(path));
  return parse_config(text, path, std::move(base));
}

Result<CommandLine> parse_command_line(int argc, const char* const* argv) {
  CommandLine out;
  std::string config_path = kDefaultConfigPath;
  bool explicit_config = false;
  std::vector<FlagAssignment> assignments;

  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      out.help = true;  // nothing else is read: --help works with a broken config file
      return out;
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      return invalid_argument("unexpected argument '" + arg + "': recond takes only --options (see --help)");
    }
    const size_t equals = arg.find('=');
    const std::string name = arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    std::optional<std::string> inline_value;
    if (equals != std::string::npos) inline_value = arg.substr(equals + 1);

    if (name == "foreground" || name == "check-config") {
      if (inline_value) return invalid_argument("--" + name + " takes no value");
      (name == "foreground" ? out.foreground : out.check_config) = true;
      continue;
    }
    FlagAssignment assignment{"--" + name};
    if (name == "model") {
      assignment.model = true;
    } else if (name != "config") {
      assignment.option = find_flag(name);
      if (assignment.option == nullptr) {
        return invalid_argument("unknown option --" + name + did_you_mean(name, all_flag_names()) + " (see --help)");
      }
    }
    if (inline_value) {
      assignment.value = *inline_value;
    } else if (i + 1 < argc) {
      assignment.value = argv[++i];
    } else {
      const std::string_view metavar = assignment.option  ? assignment.option->metavar
                                       : assignment.model ? std::string_view("NAME=PATH")
                                                          : std::string_view("PATH");
      return invalid_argument("--" + name + " needs a value (" + std::string(metavar) + ")");
    }
    if (name == "config") {
      if (assignment.value.empty()) return invalid_argument("--config needs a path");
      config_path = assignment.value;
      explicit_config = true;
      continue;
    }
    assignments.push_back(std::move(assignment));
  }

  // The file first, then the flags on top of it.
  struct stat st {};
  if (explicit_config || ::stat(config_path.c_str(), &st) == 0) {
    RECON_ASSIGN_OR_RETURN(const std::string text, read_file(config_path));
    RECON_RETURN_IF_ERROR(parse_into(out.config, text, config_path));
    out.config_path = config_path;
  }
  ApplyContext context{Origin::kFlag};
  for (const FlagAssignment& a : assignments) {
    if (a.model) {
      const size_t equals = a.value.find('=');
      if (equals == std::string::npos) {
        return invalid_argument("--model: expected NAME=PATH, got '" + a.value + "'");
      }
      RECON_RETURN_IF_ERROR(set_model(out.config, std::string_view(a.value).substr(0, equals),
                                      std::string_view(a.value).substr(equals + 1), context, /*replace=*/true)
                                .with_context("--model"));
      continue;
    }
    RECON_RETURN_IF_ERROR(a.option->apply(out.config, a.value, context).with_context(a.flag));
  }
  const std::string origin = out.config_path.empty() ? "command line" : out.config_path + " and command line";
  RECON_RETURN_IF_ERROR(validate_config(out.config).with_context(origin));
  return out;
}

Status validate_config(const DaemonConfig& c) {
  const std::pair<const char*, const std::string*> sockets[] = {
      {"client", &c.client_socket}, {"regions", &c.regions_socket}, {"manager", &c.manager_socket}};
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = i + 1; j < 3; ++j) {
      if (*sockets[i].second == *sockets[j].second) {
        return invalid_argument(std::string("the ") + sockets[i].first + " and " + sockets[j].first +
                                " sockets are both " + *sockets[i].second);
      }
    }
  }
  if (c.max_region_bytes > c.max_client_bytes) {
    return invalid_argument("max_region_bytes (" + format_byte_size(c.max_region_bytes) +
                            ") exceeds max_client_bytes (" + format_byte_size(c.max_client_bytes) +
                            "): such a region could never be registered");
  }
  if (c.max_client_bytes > c.max_total_region_bytes) {
    return invalid_argument("max_client_bytes (" + format_byte_size(c.max_client_bytes) +
                            ") exceeds max_total_region_bytes (" + format_byte_size(c.max_total_region_bytes) + ")");
  }
  if (c.tcp && c.metrics_port != 0 && c.tcp->port == c.metrics_port) {
    return invalid_argument("tcp and metrics_port both use port " + std::to_string(c.metrics_port));
  }
  return Status::ok();
}

std::string format_config(const DaemonConfig& config) {
  std::string out = "# recond configuration (effective values)\n";
  for (std::string_view section : kSections) {
    out += "\n[" + std::string(section) + "]\n";
    if (section == "models") {
      for (const ModelSource& m : config.models) out.append(m.name).append(" = ").append(m.path).append("\n");
      continue;
    }
    for (const Option& o : kOptions) {
      if (o.section != section) continue;
      std::string value = o.show(config);
      const bool needs_quotes =
          value.find('#') != std::string::npos || (!value.empty() && (value.front() == ' ' || value.back() == ' '));
      if (needs_quotes) {
        value.insert(0, 1, '"');
        value.push_back('"');
      }
      out.append(o.key).append(" = ").append(value).append("\n");
    }
  }
  return out;
}

std::string usage(std::string_view program) {
  std::string out = "Usage: " + std::string(program) + " [--config PATH] [OPTIONS]\n\n";
  out += "recond: the recon GPU inference daemon. Options override the same key of the config file.\n\n";
  const auto line = [&out](std::string left, std::string_view help) {
    left.insert(0, "  ");
    if (left.size() < 36) {
      left.resize(36, ' ');
    } else {
      left.append("\n").append(36, ' ');
    }
    out.append(left).append(help).append("\n");
  };
  line("--config PATH", std::string("configuration file (default ") + kDefaultConfigPath + ")");
  line("--foreground", "log to stderr, not the journal (development)");
  line("--check-config", "check the configuration, print the effective values and exit");
  line("--help", "show this text");
  for (std::string_view section : kSections) {
    out += "\n[" + std::string(section) + "]\n";
    if (section == "models") {
      line("--model NAME=PATH", "load a model at start (repeatable; replaces the file's NAME)");
      continue;
    }
    for (const Option& o : kOptions) {
      if (o.section == section) line("--" + std::string(o.flag) + " " + std::string(o.metavar), o.help);
    }
  }
  out += "\nA configuration error exits with status " + std::to_string(kExitConfigError) + " (EX_CONFIG).\n";
  return out;
}

std::string pipeline_cache_file(const DaemonConfig& config, const char* cache_directory, const std::string& fallback) {
  switch (config.pipeline_cache) {
    case PipelineCacheMode::kOff:
      return "";
    case PipelineCacheMode::kPath:
      return config.pipeline_cache_path;
    case PipelineCacheMode::kAuto:
      break;
  }
  if (cache_directory != nullptr && cache_directory[0] != '\0') {
    std::string first(cache_directory);
    first = first.substr(0, first.find(':'));
    if (!first.empty()) return first + "/pipeline-cache.bin";
  }
  return fallback;
}

}  // namespace recon::daemon
