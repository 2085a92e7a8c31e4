// ConnectOptions defaults: the daemon's socket paths (daemon/service/config.h) or $RECON_SOCKET_DIR.
#include "recon/client/options.h"

#include <cerrno>
#include <cstdlib>

namespace recon::client {

std::string default_socket_dir() {
  const char* dir = std::getenv(kSocketDirEnv);
  return dir != nullptr && dir[0] != '\0' ? std::string(dir) : std::string(kDefaultSocketDir);
}

ConnectOptions ConnectOptions::in_directory(const std::string& dir) {
  ConnectOptions options;
  options.client_socket = dir + "/client.sock";
  options.regions_socket = dir + "/regions.sock";
  options.manager_socket = dir + "/manager.sock";
  return options;
}

ConnectOptions ConnectOptions::resolved() const {
  ConnectOptions out = *this;
  const std::string dir = default_socket_dir();
  if (out.client_socket.empty()) out.client_socket = dir + "/client.sock";
  if (out.regions_socket.empty()) out.regions_socket = dir + "/regions.sock";
  if (out.manager_socket.empty()) out.manager_socket = dir + "/manager.sock";
  if (out.client_name.empty()) out.client_name = program_invocation_short_name;
  return out;
}

}  // namespace recon::client
