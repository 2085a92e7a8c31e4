// Listening sockets for recond: adopted from systemd socket activation (sd_listen_fds_with_names,
// matched by the units' FileDescriptorName= client / regions / manager) or, when the daemon was
// not activated (foreground runs, tests), bound here with the mode and group the .socket units
// would have given them. It checks every fd's family, type and listening state before handing it
// out; it never accepts connections and knows nothing of ZeroMQ.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/ipc/unique_fd.h"
#include "gpu/status.h"

namespace recon::daemon {

// FileDescriptorName= of the three socket units (systemd/recond*.socket).
inline constexpr std::string_view kClientSocketName = "client";
inline constexpr std::string_view kRegionsSocketName = "regions";
inline constexpr std::string_view kManagerSocketName = "manager";

enum class UnixSocketType { kStream, kSeqPacket };
const char* unix_socket_type_name(UnixSocketType type);

// The fds systemd passed in ($LISTEN_FDS / $LISTEN_PID / $LISTEN_FDNAMES), by name.
class ListenFds {
 public:
  // Takes ownership of the passed fds and unsets the LISTEN_* variables (children must not
  // inherit them). Not activated (no fds) is fine: activated() is false. Errors: malformed
  // variables, or one name given to two fds (one .socket unit with several Listen= lines).
  static Result<ListenFds> from_environment();
  ListenFds() = default;

  bool activated() const { return !fds_.empty(); }
  // Takes the fd named `name` after checking that it is a listening AF_UNIX socket of `type`;
  // nullopt when no fd has that name.
  Result<std::optional<UniqueFd>> take(std::string_view name, UnixSocketType type);
  // Names of the fds nobody took yet (the daemon warns about them and closes them).
  std::vector<std::string> unclaimed_names() const;

 private:
  std::map<std::string, UniqueFd, std::less<>> fds_;
};

// How recond binds a socket itself when it was not socket-activated.
struct UnixSocketOptions {
  std::string path;  // absolute file path; abstract (@name) sockets are refused (no permissions)
  UnixSocketType type = UnixSocketType::kStream;
  mode_t mode = 0660;
  std::optional<gid_t> group;  // chown to this group (the daemon must be a member, or root)
  int backlog = 128;
};

// Binds and listens. A stale socket file (nobody accepting) is replaced; a live one, or a file
// that is not a socket, is an error: two daemons must never share an endpoint (zmq_ipc(7): a
// second bind silently steals it). The file is created under the process umask (recond.service
// sets 0077), then given `group` and `mode`, so it is never more open than asked for.
Result<UniqueFd> bind_unix_socket(const UnixSocketOptions& options);

// A listening socket and where it is, as the server needs it for ZMQ_USE_FD + zmq_bind("ipc://"+path).
struct Listener {
  UniqueFd fd;
  std::string path;  // the socket's own address (getsockname), which wins over the configured one
  bool activated = false;
};

// The activated fd named `name` when there is one, else a socket bound from `fallback`.
Result<Listener> acquire_listener(ListenFds& fds, std::string_view name, const UnixSocketOptions& fallback);

// Checks that the socket file at `path` still has the group and mode clients rely on; the daemon
// logs a warning when it does not. (If /run/recon was not owned by recon when recond.service
// first started, systemd's RuntimeDirectory= setup chowns everything in it, sockets included,
// to recon:recon, and members of recon-clients can no longer connect.)
Status check_socket_file(const std::string& path, gid_t group, mode_t mode);

// The path a bound AF_UNIX socket listens on ("" for unnamed or abstract sockets).
Result<std::string> unix_socket_path(int fd);

// Resolves a group name (or a decimal gid) through NSS.
Result<gid_t> resolve_group(const std::string& name);

}  // namespace recon::daemon
