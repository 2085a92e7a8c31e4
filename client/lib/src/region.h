// Region: the state behind an ImageBuffer: the mapped memfd, its id on the daemon, and a weak
// link to the connection so that destroying the buffer unregisters it (when the connection is
// already gone, so is the registration: the daemon drops a session's regions with it).
#pragma once

#include <memory>
#include <string>

#include "core.h"
#include "shared_memory.h"

namespace recon::client::detail {

class Region {
 public:
  Region(SharedMemory memory, RegisteredRegion registered, std::string label, std::weak_ptr<Core> core)
      : memory_(std::move(memory)), registered_(registered), label_(std::move(label)), core_(std::move(core)) {}
  ~Region() {
    if (auto core = core_.lock()) core->unregister_region(registered_.id);
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  const SharedMemory& memory() const { return memory_; }
  const RegisteredRegion& registered() const { return registered_; }
  const std::string& label() const { return label_; }

 private:
  SharedMemory memory_;
  RegisteredRegion registered_;
  std::string label_;
  std::weak_ptr<Core> core_;
};

}  // namespace recon::client::detail
