// activation_probe: started by systemd-socket-activate in SocketActivation tests. Adopts the
// "client" and "manager" sockets through ListenFds / acquire_listener, prints one line per
// socket ("NAME PATH activated|bound") and the unclaimed names, and exits (1 on any error).
#include <cstdio>

#include "daemon/service/socket_activation.h"

int main() {
  using namespace recon::daemon;
  auto fds = ListenFds::from_environment();
  if (!fds.is_ok()) {
    std::printf("error: %s\n", fds.status().message().c_str());
    return 1;
  }
  for (std::string_view name : {kClientSocketName, kManagerSocketName}) {
    auto listener = acquire_listener(*fds, name, {.path = "/nonexistent-recon/fallback.sock"});
    if (!listener.is_ok()) {
      std::printf("error: %s\n", listener.status().message().c_str());
      return 1;
    }
    std::printf("%.*s %s %s\n", static_cast<int>(name.size()), name.data(), listener->path.c_str(),
                listener->activated ? "activated" : "bound");
  }
  for (const std::string& name : fds->unclaimed_names()) std::printf("unclaimed %s\n", name.c_str());
  return 0;
}
