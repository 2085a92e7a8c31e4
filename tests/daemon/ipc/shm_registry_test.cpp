// ShmRegistry: which fds it accepts, what the seals guarantee, per-client limits and isolation,
// image bounds with hostile values, deferred unregister while leased, and that dropping a
// client unmaps and closes everything (counted in /proc/self/maps and /proc/self/fd).
#include "daemon/ipc/shm_registry.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <limits>
#include <thread>
#include <vector>

#include "daemon/ipc/region_client.h"
#include "tests/daemon/ipc/test_util.h"

namespace recon::daemon {
namespace {

using testing::memfd_mapping_count;
using testing::open_fd_count;

const uint64_t kPage = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));

UniqueFd sealed(const std::string& name, uint64_t size) {
  auto fd = create_sealed_memfd(name, size);
  EXPECT_TRUE(fd.is_ok()) << fd.status().to_string();
  return std::move(fd).value();
}

UniqueFd memfd_with_seals(const std::string& name, uint64_t size, int seals) {
  UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd.valid());
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  if (seals != 0) {
    EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, seals), 0);
  }
  return fd;
}

UniqueFd dup_of(const UniqueFd& fd) {
  return UniqueFd(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
}

Status register_status(ShmRegistry& registry, UniqueFd fd, uint64_t expected = 0) {
  return registry.register_region(1, std::move(fd), expected, "test").status();
}

TEST(ShmRegistry, RegistersASealedMemfdAndSharesItsBytes) {
  ShmRegistry registry;
  UniqueFd fd = sealed("recon-shares", 4 * kPage);
  auto* client_view =
      static_cast<uint8_t*>(::mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0));
  ASSERT_NE(client_view, MAP_FAILED);
  client_view[100] = 0xab;

  auto info = registry.register_region(1, dup_of(fd), 4 * kPage, "frames");
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_FALSE(info->id.is_zero());
  EXPECT_EQ(info->size, 4 * kPage);
  EXPECT_EQ(info->page_size, kPage);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(info->base) % kPage, 0u);
  EXPECT_EQ(info->label, "frames");

  auto lease = registry.lease(1, info->id);
  ASSERT_TRUE(lease.is_ok());
  EXPECT_EQ(lease->bytes()[100], 0xab);  // the client's write, seen by the daemon
  lease->bytes()[200] = 0xcd;            // mapped read-write (GPU import needs it)
  EXPECT_EQ(client_view[200], 0xcd);
  ::munmap(client_view, 4 * kPage);
}

TEST(ShmRegistry, RefusesAnUnsealedMemfd) {
  ShmRegistry registry;
  const Status status = register_status(registry, memfd_with_seals("recon-unsealed", kPage, 0));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("F_SEAL_SHRINK|F_SEAL_GROW"), std::string::npos) << status.message();
  // Half sealed is not sealed.
  EXPECT_EQ(register_status(registry, memfd_with_seals("recon-half", kPage, F_SEAL_SHRINK)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.stats().regions, 0u);
}

TEST(ShmRegistry, RefusesAMemfdCreatedWithoutSealing) {
  ShmRegistry registry;
  UniqueFd fd(::memfd_create("recon-nosealing", MFD_CLOEXEC));
  ASSERT_EQ(::ftruncate(fd.get(), static_cast<off_t>(kPage)), 0);
  // Its seal set is just F_SEAL_SEAL: not sealed against resizing.
  EXPECT_EQ(register_status(registry, std::move(fd)).code(), StatusCode::kInvalidArgument);
}

TEST(ShmRegistry, RefusesFdsThatAreNotMemfds) {
  ShmRegistry registry;
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  Status status = register_status(registry, std::move(read_end));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("not a memfd"), std::string::npos) << status.message();

  char path[] = "/tmp/recon-regular-XXXXXX";
  UniqueFd file(::mkostemp(path, O_CLOEXEC));
  ASSERT_TRUE(file.valid());
  ::unlink(path);
  ASSERT_EQ(::ftruncate(file.get(), static_cast<off_t>(kPage)), 0);
  status = register_status(registry, std::move(file));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("not a memfd"), std::string::npos) << status.message();

  int sockets[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets), 0);
  UniqueFd other(sockets[1]);
  EXPECT_EQ(register_status(registry, UniqueFd(sockets[0])).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(register_status(registry, UniqueFd()).code(), StatusCode::kInvalidArgument);
}

TEST(ShmRegistry, RefusesWriteSealedMemfdsItCouldNotImport) {
  ShmRegistry registry;
  UniqueFd fd = memfd_with_seals("recon-wseal", kPage, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
  const Status status = register_status(registry, std::move(fd));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("write-sealed"), std::string::npos);
}

TEST(ShmRegistry, RefusesAReadOnlyFd) {
  ShmRegistry registry;
  UniqueFd fd = sealed("recon-rdonly", kPage);
  const std::string proc = "/proc/self/fd/" + std::to_string(fd.get());
  UniqueFd read_only(::open(proc.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(read_only.valid());
  const Status status = register_status(registry, std::move(read_only));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("O_RDWR"), std::string::npos);
}

TEST(ShmRegistry, RefusesBadSizes) {
  ShmRegistry registry;
  EXPECT_EQ(register_status(registry, sealed("recon-empty", 0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(register_status(registry, sealed("recon-odd", kPage + 1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(register_status(registry, sealed("recon-mismatch", kPage), 2 * kPage).code(), StatusCode::kInvalidArgument);
  RegistryLimits limits;
  limits.max_region_bytes = kPage;
  ShmRegistry small(limits);
  EXPECT_EQ(register_status(small, sealed("recon-big", 2 * kPage)).code(), StatusCode::kResourceExhausted);
}

TEST(ShmRegistry, ClientCannotResizeARegisteredRegion) {
  ShmRegistry registry;
  UniqueFd fd = sealed("recon-noshrink", 2 * kPage);
  ASSERT_TRUE(registry.register_region(1, dup_of(fd), 0, "x").is_ok());
  EXPECT_NE(::ftruncate(fd.get(), static_cast<off_t>(kPage)), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::ftruncate(fd.get(), static_cast<off_t>(4 * kPage)), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::fallocate(fd.get(), 0, 0, static_cast<off_t>(8 * kPage)), 0);
  // And the seals cannot be removed (F_SEAL_SEAL): no way to get SIGBUS into the daemon.
  EXPECT_NE(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE), 0);
}

TEST(ShmRegistry, EnforcesPerClientRegionCount) {
  RegistryLimits limits;
  limits.max_regions_per_client = 3;
  ShmRegistry registry(limits);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(registry.register_region(1, sealed("recon-count", kPage), 0, "").is_ok());
  }
  const Status refused = registry.register_region(1, sealed("recon-count", kPage), 0, "").status();
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("limit 3"), std::string::npos) << refused.message();
  // Another client has its own budget.
  EXPECT_TRUE(registry.register_region(2, sealed("recon-count", kPage), 0, "").is_ok());
  EXPECT_EQ(registry.usage(1).regions, 3u);
  EXPECT_EQ(registry.usage(2).regions, 1u);
}

TEST(ShmRegistry, EnforcesPerClientAndGlobalBytes) {
  RegistryLimits limits;
  limits.max_bytes_per_client = 4 * kPage;
  limits.max_total_bytes = 6 * kPage;
  ShmRegistry registry(limits);
  auto first = registry.register_region(1, sealed("recon-bytes", 3 * kPage), 0, "");
  ASSERT_TRUE(first.is_ok());
  EXPECT_EQ(registry.register_region(1, sealed("recon-bytes", 2 * kPage), 0, "").status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_TRUE(registry.register_region(1, sealed("recon-bytes", kPage), 0, "").is_ok());
  EXPECT_EQ(registry.usage(1).bytes, 4 * kPage);
  // Client 2 is under its own limit but the daemon-wide cap (6 pages) is reached at 2 more.
  EXPECT_TRUE(registry.register_region(2, sealed("recon-bytes", 2 * kPage), 0, "").is_ok());
  const Status global = registry.register_region(2, sealed("recon-bytes", kPage), 0, "").status();
  EXPECT_EQ(global.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(global.message().find("all clients"), std::string::npos);
  // Freeing makes room again.
  ASSERT_TRUE(registry.unregister_region(1, first->id).is_ok());
  EXPECT_TRUE(registry.register_region(2, sealed("recon-bytes", kPage), 0, "").is_ok());
}

TEST(ShmRegistry, AnotherClientsRegionIsNotFound) {
  ShmRegistry registry;
  auto info = registry.register_region(1, sealed("recon-owner", kPage), 0, "");
  ASSERT_TRUE(info.is_ok());
  auto foreign = registry.lease(2, info->id);
  ASSERT_FALSE(foreign.is_ok());
  EXPECT_EQ(foreign.status().code(), StatusCode::kNotFound);
  // Indistinguishable from an id that never existed (only the id in the text differs).
  auto missing = registry.lease(2, Id128{1, 1});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(foreign.status().message().size(), missing.status().message().size());
  EXPECT_EQ(registry.unregister_region(2, info->id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(registry.lease_image(2, info->id, {0, 1, 1, 3}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(registry.drop_client(2), 0u);
  EXPECT_TRUE(registry.lease(1, info->id).is_ok());  // still the owner's
}

struct ImageCase {
  const char* what;
  ImageGeometry image;
  bool ok;
};

TEST(ShmRegistry, RefusesOutOfBoundsImagesIncludingOverflowingValues) {
  ShmRegistry registry;
  const uint64_t size = 16 * kPage;  // 65536 with 4 KiB pages
  auto info = registry.register_region(1, sealed("recon-bounds", size), 0, "");
  ASSERT_TRUE(info.is_ok());
  constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();
  constexpr uint32_t kMax32 = std::numeric_limits<uint32_t>::max();
  // 64x64 RGB8 packed: 12288 bytes.
  const uint64_t packed = 64 * 64 * 3;
  const std::vector<ImageCase> cases = {
      {"packed image at 0", {0, 64, 64, 192}, true},
      {"exact fit at the end", {size - packed, 64, 64, 192}, true},
      {"one byte past the end", {size - packed + 1, 64, 64, 192}, false},
      {"last row needs only width*3, not stride", {size - (63 * 256 + 192), 64, 64, 256}, true},
      {"offset past the end", {size, 1, 1, 3}, false},
      {"offset near 2^64", {kMax64 - 10, 1, 1, 3}, false},
      {"offset 2^64-1", {kMax64, 64, 64, 192}, false},
      {"zero height", {0, 0, 64, 192}, false},
      {"zero width", {0, 64, 0, 192}, false},
      {"stride smaller than a row", {0, 64, 64, 191}, false},
      {"stride 0", {0, 64, 64, 0}, false},
      {"huge stride", {0, 2, 1, kMax32}, false},
      {"huge stride, max height", {0, kMaxImageSide, 1, kMax32}, false},
      {"width*3 overflows 32 bits", {0, 1, 0x5555'5556u, kMax32}, false},
      {"height beyond the limit", {0, kMaxImageSide + 1, 1, 3}, false},
      {"width beyond the limit", {0, 1, kMaxImageSide + 1, kMax32}, false},
      {"max sides, too big for the region", {0, kMaxImageSide, kMaxImageSide, kMaxImageSide * 3}, false},
      {"max sides and stride, offset 2^63", {uint64_t{1} << 63, kMaxImageSide, kMaxImageSide, kMax32}, false},
  };
  for (const ImageCase& c : cases) {
    auto lease = registry.lease_image(1, info->id, c.image);
    EXPECT_EQ(lease.is_ok(), c.ok) << c.what << ": " << lease.status().to_string();
    if (!c.ok) {
      EXPECT_EQ(lease.status().code(), StatusCode::kInvalidArgument) << c.what;
    } else {
      EXPECT_EQ(lease->bytes().data(), info->base + c.image.offset) << c.what;
    }
  }
  EXPECT_EQ(registry.stats().leases, 0u);
}

TEST(ShmRegistry, RefusesOutOfBoundsRanges) {
  ShmRegistry registry;
  auto info = registry.register_region(1, sealed("recon-range", kPage), 0, "");
  ASSERT_TRUE(info.is_ok());
  constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();
  EXPECT_TRUE(registry.lease_range(1, info->id, 0, kPage).is_ok());
  EXPECT_TRUE(registry.lease_range(1, info->id, kPage, 0).is_ok());
  EXPECT_FALSE(registry.lease_range(1, info->id, 1, kPage).is_ok());
  EXPECT_FALSE(registry.lease_range(1, info->id, kPage + 1, 0).is_ok());
  EXPECT_FALSE(registry.lease_range(1, info->id, 16, kMax64).is_ok());
  EXPECT_FALSE(registry.lease_range(1, info->id, kMax64, 2).is_ok());
}

// Counts destruction and proves the memory is still mapped at that moment.
class ProbeAttachment : public RegionAttachment {
 public:
  ProbeAttachment(const uint8_t* base, std::atomic<int>* destroyed) : base_(base), destroyed_(destroyed) {}
  ~ProbeAttachment() override {
    volatile uint8_t byte = base_[0];  // would fault if unmapped first
    (void)byte;
    destroyed_->fetch_add(1);
  }

 private:
  const uint8_t* base_;
  std::atomic<int>* destroyed_;
};

TEST(ShmRegistry, UnregisterWhileLeasedDefersUntilTheLastLeaseEnds) {
  ShmRegistry registry;
  const std::string name = "recon-defer";
  auto info = registry.register_region(1, sealed(name, 2 * kPage), 0, "");
  ASSERT_TRUE(info.is_ok());
  std::atomic<int> destroyed{0};
  ASSERT_TRUE(registry.attach(1, info->id, std::make_unique<ProbeAttachment>(info->base, &destroyed)).is_ok());
  EXPECT_EQ(memfd_mapping_count(name), 1);

  auto lease = registry.lease_image(1, info->id, {0, 8, 8, 24});
  ASSERT_TRUE(lease.is_ok());
  EXPECT_NE(lease->attachment(), nullptr);
  auto second = registry.lease(1, info->id);
  ASSERT_TRUE(second.is_ok());

  auto deferred = registry.unregister_region(1, info->id);
  ASSERT_TRUE(deferred.is_ok());
  EXPECT_TRUE(*deferred);
  // Gone for lookups at once, but still mapped for the leases.
  EXPECT_EQ(registry.lease(1, info->id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(registry.unregister_region(1, info->id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(registry.stats().retiring_regions, 1u);
  EXPECT_EQ(registry.usage(1).bytes, 2 * kPage);  // still counted: still pinned
  lease->bytes()[0] = 1;
  EXPECT_EQ(memfd_mapping_count(name), 1);
  EXPECT_EQ(destroyed.load(), 0);

  lease->reset();
  EXPECT_EQ(memfd_mapping_count(name), 1);  // `second` still holds it
  second = RegionLease();
  EXPECT_EQ(destroyed.load(), 1);
  EXPECT_EQ(memfd_mapping_count(name), 0);
  EXPECT_TRUE(registry.wait_until_freed(info->id, std::chrono::milliseconds(0)));
  const RegistryStats stats = registry.stats();
  EXPECT_EQ(stats.retiring_regions, 0u);
  EXPECT_EQ(stats.mapped_bytes, 0u);
  EXPECT_EQ(registry.usage(1).regions, 0u);
}

TEST(ShmRegistry, UnregisterWithoutLeasesFreesAtOnce) {
  ShmRegistry registry;
  auto info = registry.register_region(1, sealed("recon-now", kPage), 0, "");
  ASSERT_TRUE(info.is_ok());
  auto deferred = registry.unregister_region(1, info->id);
  ASSERT_TRUE(deferred.is_ok());
  EXPECT_FALSE(*deferred);
  EXPECT_EQ(memfd_mapping_count("recon-now"), 0);
}

TEST(ShmRegistry, WaitUntilFreedReturnsWhenAnotherThreadReleases) {
  ShmRegistry registry;
  auto info = registry.register_region(1, sealed("recon-wait", kPage), 0, "");
  ASSERT_TRUE(info.is_ok());
  auto lease = registry.lease(1, info->id);
  ASSERT_TRUE(lease.is_ok());
  ASSERT_TRUE(registry.unregister_region(1, info->id).is_ok());
  EXPECT_FALSE(registry.wait_until_freed(info->id, std::chrono::milliseconds(10)));
  std::thread worker([held = std::move(lease).value()]() mutable {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    held.reset();
  });
  EXPECT_TRUE(registry.wait_until_freed(info->id, std::chrono::seconds(10)));
  EXPECT_EQ(memfd_mapping_count("recon-wait"), 0);
  worker.join();
}

TEST(ShmRegistry, DropClientUnmapsAndClosesEverythingOfThatClient) {
  const std::string mine = "recon-drop-mine";
  const std::string theirs = "recon-drop-theirs";
  const int fds_before = open_fd_count();
  ShmRegistry registry;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(registry.register_region(7, sealed(mine, kPage * (i + 1)), 0, "").is_ok());
  }
  ASSERT_TRUE(registry.register_region(8, sealed(theirs, kPage), 0, "").is_ok());
  EXPECT_EQ(memfd_mapping_count(mine), 5);
  EXPECT_EQ(open_fd_count(), fds_before);  // fds are closed once mapped

  EXPECT_EQ(registry.drop_client(7), 5u);
  EXPECT_EQ(memfd_mapping_count(mine), 0);
  EXPECT_EQ(memfd_mapping_count(theirs), 1);
  EXPECT_EQ(registry.usage(7).regions, 0u);
  EXPECT_EQ(registry.usage(7).bytes, 0u);
  EXPECT_EQ(registry.stats().regions, 1u);
  EXPECT_EQ(registry.drop_client(7), 0u);
}

TEST(ShmRegistry, DropClientDefersRegionsThatAreLeased) {
  ShmRegistry registry;
  auto a = registry.register_region(7, sealed("recon-dropl", kPage), 0, "");
  auto b = registry.register_region(7, sealed("recon-dropl", kPage), 0, "");
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  auto lease = registry.lease(7, a->id);
  ASSERT_TRUE(lease.is_ok());
  EXPECT_EQ(registry.drop_client(7), 2u);
  EXPECT_EQ(memfd_mapping_count("recon-dropl"), 1);
  EXPECT_EQ(registry.stats().retiring_regions, 1u);
  lease->reset();
  EXPECT_EQ(memfd_mapping_count("recon-dropl"), 0);
  EXPECT_EQ(registry.stats().mapped_bytes, 0u);
}

TEST(ShmRegistry, SurvivesConcurrentLeasesAndUnregisters) {
  ShmRegistry registry;
  std::vector<RegionId> ids;
  for (int i = 0; i < 8; ++i) {
    auto info = registry.register_region(1, sealed("recon-stress", kPage), 0, "");
    ASSERT_TRUE(info.is_ok());
    ids.push_back(info->id);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> leased{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      for (int n = 0; !stop.load(); ++n) {
        auto lease = registry.lease_range(1, ids[(t + n) % ids.size()], 0, kPage);
        if (lease.is_ok()) {
          lease->bytes()[t] = static_cast<uint8_t>(n);  // own byte: content is unguarded
          leased.fetch_add(1);
        }
      }
    });
  }
  while (leased.load() < 1000) std::this_thread::yield();
  for (const RegionId& id : ids) {
    ASSERT_TRUE(registry.unregister_region(1, id).is_ok());
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  stop = true;
  for (auto& reader : readers) reader.join();
  for (const RegionId& id : ids) EXPECT_TRUE(registry.wait_until_freed(id, std::chrono::seconds(5)));
  EXPECT_EQ(memfd_mapping_count("recon-stress"), 0);
  EXPECT_EQ(registry.stats().leases, 0u);
}

}  // namespace
}  // namespace recon::daemon
