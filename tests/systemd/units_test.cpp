// The shipped systemd files agree with the daemon's code: socket names and paths with
// socket_activation.h and DaemonConfig's defaults, groups with sysusers.d, the example
// recond.conf with the parser, and the service with the DESIGN §5 contract (Type=notify,
// watchdog, hardening). systemd-analyze checks the syntax (verify_units.sh); this checks meaning.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/service/config.h"
#include "daemon/service/socket_activation.h"

namespace recon::daemon {
namespace {

constexpr const char* kDir = RECON_SYSTEMD_DIR;

std::string read(const std::string& name) {
  std::ifstream in(std::string(kDir) + "/" + name);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "Section.Key" → every value assigned to it, in order (unit files repeat keys).
using Unit = std::map<std::string, std::vector<std::string>>;

Unit parse_unit(const std::string& name) {
  Unit unit;
  std::istringstream in(read(name));
  std::string line;
  std::string section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const size_t equals = line.find('=');
    if (equals == std::string::npos) continue;
    unit[section + "." + line.substr(0, equals)].push_back(line.substr(equals + 1));
  }
  return unit;
}

std::string one(const Unit& unit, const std::string& key) {
  const auto it = unit.find(key);
  if (it == unit.end()) return "(unset)";
  return it->second.back();
}

bool has_value(const Unit& unit, const std::string& key, const std::string& value) {
  const auto it = unit.find(key);
  if (it == unit.end()) return false;
  for (const std::string& v : it->second) {
    if (v == value) return true;
  }
  return false;
}

struct SocketUnit {
  const char* file;
  std::string_view fd_name;
  const char* listen_key;
  std::string DaemonConfig::*path;
  std::string DaemonConfig::*group;
};

constexpr SocketUnit kSockets[] = {
    {"recond.socket", kClientSocketName, "Socket.ListenStream", &DaemonConfig::client_socket,
     &DaemonConfig::client_group},
    {"recond-regions.socket", kRegionsSocketName, "Socket.ListenSequentialPacket", &DaemonConfig::regions_socket,
     &DaemonConfig::client_group},
    {"recond-manager.socket", kManagerSocketName, "Socket.ListenStream", &DaemonConfig::manager_socket,
     &DaemonConfig::manager_group},
};

TEST(SocketUnits, MatchTheNamesPathsAndGroupsTheDaemonExpects) {
  const DaemonConfig defaults;
  for (const SocketUnit& s : kSockets) {
    SCOPED_TRACE(s.file);
    const Unit unit = parse_unit(s.file);
    EXPECT_EQ(one(unit, "Socket.FileDescriptorName"), s.fd_name);
    // One Listen line per unit, so that each fd arrives with its own name.
    ASSERT_EQ(unit.count(s.listen_key), 1u);
    EXPECT_EQ(unit.at(s.listen_key).size(), 1u);
    EXPECT_EQ(one(unit, s.listen_key), defaults.*s.path);
    EXPECT_EQ(one(unit, "Socket.SocketGroup"), defaults.*s.group);
    EXPECT_EQ(one(unit, "Socket.SocketMode"), "0660");
    EXPECT_EQ(one(unit, "Socket.SocketUser"), "recon");
    EXPECT_EQ(one(unit, "Socket.Service"), "recond.service");
  }
}

TEST(ServiceUnit, KeepsTheDesignContract) {
  const Unit service = parse_unit("recond.service");
  EXPECT_EQ(one(service, "Service.Type"), "notify");
  EXPECT_EQ(one(service, "Service.NotifyAccess"), "main");
  EXPECT_EQ(one(service, "Service.WatchdogSec"), "30");
  EXPECT_EQ(one(service, "Service.Restart"), "on-failure");
  EXPECT_EQ(one(service, "Service.RestartPreventExitStatus"), std::to_string(kExitConfigError));
  EXPECT_EQ(one(service, "Service.ExecStart"), std::string("/usr/bin/recond --config ") + kDefaultConfigPath);
  EXPECT_EQ(one(service, "Service.User"), "recon");
  EXPECT_EQ(one(service, "Service.CacheDirectory"), "recon");
  // Socket files live in the runtime directory: it must survive stops (systemd#8635).
  EXPECT_EQ(one(service, "Service.RuntimeDirectory"), "recon");
  EXPECT_EQ(one(service, "Service.RuntimeDirectoryPreserve"), "yes");
  EXPECT_EQ(one(service, "Service.Sockets"), "recond.socket recond-regions.socket recond-manager.socket");
  for (const SocketUnit& s : kSockets) {
    EXPECT_NE(one(service, "Unit.Requires").find(s.file), std::string::npos) << s.file;
  }
  EXPECT_TRUE(has_value(service, "Service.DeviceAllow", "char-drm rw"));
  EXPECT_EQ(one(service, "Service.DevicePolicy"), "closed");
  EXPECT_EQ(one(service, "Service.RestrictAddressFamilies"), "AF_UNIX");
  EXPECT_EQ(one(service, "Service.NoNewPrivileges"), "yes");
  EXPECT_EQ(one(service, "Service.ProtectSystem"), "strict");
  EXPECT_EQ(one(service, "Service.CapabilityBoundingSet"), "");
  // Off on purpose: lavapipe's LLVM JIT needs W+X pages; PrivateDevices hides the GPU.
  EXPECT_EQ(service.count("Service.MemoryDenyWriteExecute"), 0u);
  EXPECT_EQ(service.count("Service.PrivateDevices"), 0u);
}

TEST(Sysusers, CreatesTheUserAndEveryGroupTheUnitsName) {
  const std::string text = read("sysusers.d/recon.conf");
  const auto declares = [&](const std::string& kind, const std::string& name) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string k;
      std::string n;
      if (words >> k >> n && k == kind && n == name) return true;
    }
    return false;
  };
  EXPECT_TRUE(declares("u", "recon"));
  const DaemonConfig defaults;
  EXPECT_TRUE(declares("g", defaults.client_group));
  EXPECT_TRUE(declares("g", defaults.manager_group));
  std::istringstream groups(one(parse_unit("recond.service"), "Service.SupplementaryGroups"));
  std::string group;
  while (groups >> group) EXPECT_TRUE(declares("g", group)) << group;
}

TEST(ExampleConfig, ParsesAndAgreesWithTheSocketUnits) {
  auto config = load_config_file(std::string(kDir) + "/recond.conf");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  const DaemonConfig defaults;
  EXPECT_EQ(config->client_socket, defaults.client_socket);
  EXPECT_EQ(config->regions_socket, defaults.regions_socket);
  EXPECT_EQ(config->manager_socket, defaults.manager_socket);
  EXPECT_FALSE(config->tcp.has_value());  // off unless the unit's address families are widened
  EXPECT_EQ(config->metrics_port, 0);
  // Its [limits] section documents the defaults; keep them in step.
  EXPECT_EQ(config->max_queue, defaults.max_queue);
  EXPECT_EQ(config->max_clients, defaults.max_clients);
  EXPECT_EQ(config->max_regions_per_client, defaults.max_regions_per_client);
  EXPECT_EQ(config->max_region_bytes, defaults.max_region_bytes);
  EXPECT_EQ(config->max_client_bytes, defaults.max_client_bytes);
  EXPECT_EQ(config->max_total_region_bytes, defaults.max_total_region_bytes);
  EXPECT_EQ(config->max_handles_per_client, defaults.max_handles_per_client);
  EXPECT_EQ(config->handle_ttl, defaults.handle_ttl);
}

TEST(Tmpfiles, CreatesTheSocketDirectory) {
  const std::string text = read("tmpfiles.d/recon.conf");
  const std::string directory = DaemonConfig{}.client_socket.substr(0, DaemonConfig{}.client_socket.rfind('/'));
  EXPECT_NE(text.find("d " + directory + " 0755 recon recon"), std::string::npos) << directory;
}

}  // namespace
}  // namespace recon::daemon
