// Id128: random generation (getrandom) and formatting.
#include "daemon/ipc/id128.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace recon::daemon {

std::string Id128::to_string() const {
  char text[33];
  std::snprintf(text, sizeof(text), "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return text;
}

Result<Id128> Id128::random() {
  for (;;) {
    uint64_t words[2] = {0, 0};
    auto* bytes = reinterpret_cast<uint8_t*>(words);
    size_t got = 0;
    while (got < sizeof(words)) {
      const ssize_t n = ::getrandom(bytes + got, sizeof(words) - got, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        return internal_error(std::string("getrandom failed: ") + std::strerror(errno));
      }
      got += static_cast<size_t>(n);
    }
    Id128 id{words[0], words[1]};
    if (!id.is_zero()) return id;  // zero means "none" on the wire
  }
}

}  // namespace recon::daemon
