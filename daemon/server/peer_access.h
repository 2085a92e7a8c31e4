// Who may use the manager socket: the daemon's own uid, root, or a member of the configured
// manager group (primary or supplementary, as NSS lists the peer's user). The socket file's mode
// and group are the first gate (recond-manager.socket); this check is the second, so that a
// loosened file mode does not open management to everyone. Pure decision, no logging.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "daemon/ipc/region_channel.h"
#include "gpu/status.h"

namespace recon::daemon {

struct ManagerPolicy {
  uid_t daemon_uid = 0;
  std::optional<gid_t> manager_gid;
};

// OK or PERMISSION_DENIED naming the uid (never UNAVAILABLE: an unknown user is simply refused).
// nullopt peer (a tcp connection) is always refused.
Status check_manager_access(const ManagerPolicy& policy, const std::optional<PeerCredentials>& peer);

// True when the user `uid` is in group `gid` (primary group or getgrouplist).
bool user_in_group(uid_t uid, gid_t primary_gid, gid_t gid);

}  // namespace recon::daemon
