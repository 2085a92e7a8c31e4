// Manager-socket access check: see peer_access.h.
#include "daemon/server/peer_access.h"

#include <grp.h>
#include <pwd.h>

#include <vector>

namespace recon::daemon {

bool user_in_group(uid_t uid, gid_t primary_gid, gid_t gid) {
  if (primary_gid == gid) return true;
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) return false;
  int count = 64;
  std::vector<gid_t> groups(static_cast<size_t>(count));
  if (::getgrouplist(found->pw_name, found->pw_gid, groups.data(), &count) < 0) {
    groups.resize(static_cast<size_t>(count));
    if (::getgrouplist(found->pw_name, found->pw_gid, groups.data(), &count) < 0) return false;
  }
  groups.resize(static_cast<size_t>(count));
  for (gid_t g : groups) {
    if (g == gid) return true;
  }
  return false;
}

Status check_manager_access(const ManagerPolicy& policy, const std::optional<PeerCredentials>& peer) {
  if (!peer) return permission_denied("management needs a local (ipc) connection with peer credentials");
  if (peer->uid == 0 || peer->uid == policy.daemon_uid) return Status::ok();
  if (policy.manager_gid && user_in_group(peer->uid, peer->gid, *policy.manager_gid)) return Status::ok();
  return permission_denied("uid " + std::to_string(peer->uid) +
                           " is neither root, the daemon's user nor in the manager group");
}

}  // namespace recon::daemon
