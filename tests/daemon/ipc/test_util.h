// Helpers for the ipc tests: counting this process's open fds and memfd mappings (to prove that
// nothing leaked), building sample messages, sending raw SCM_RIGHTS packets.
#pragma once

#include <dirent.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "daemon/ipc/wire_convert.h"
#include "schema/protocol.h"
#include "schema/request_generated.h"

namespace recon::daemon::testing {

inline int open_fd_count() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count - 1;  // the DIR's own fd
}

// Mappings in /proc/self/maps whose file is "memfd:<name>".
inline int memfd_mapping_count(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  const std::string needle = "/memfd:" + name + " ";
  const std::string needle_end = "/memfd:" + name;
  int count = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find(needle) != std::string::npos ||
        line.compare(line.size() >= needle_end.size() ? line.size() - needle_end.size() : 0, std::string::npos,
                     needle_end) == 0) {
      ++count;
    }
  }
  return count;
}

// Sends one packet with any number of fds (RegionChannel::send allows one).
inline bool send_with_fds(int socket, std::span<const uint8_t> bytes, const std::vector<int>& fds) {
  iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  if (!fds.empty()) {
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  }
  return ::sendmsg(socket, &message, MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// A request exercising most of the schema: InferBatch with region and inline images.
inline std::vector<uint8_t> sample_infer_batch(uint32_t protocol_version = wire::kProtocolVersion) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<wire::Image>> images;
  const wire::Id128 region(0x1234, 0x5678);
  for (uint32_t i = 0; i < 3; ++i) {
    const auto ref = wire::CreateImageRef(b, &region, uint64_t{i} << 20, 384, 512, 512 * 3);
    images.push_back(wire::CreateImage(b, wire::ImageSource::ImageRef, ref.Union()));
  }
  const std::vector<uint8_t> pixels(4 * 4 * 3, 0x5a);
  const auto inline_image = wire::CreateInlineImageDirect(b, 4, 4, wire::PixelFormat::RGB8, &pixels);
  images.push_back(wire::CreateImage(b, wire::ImageSource::InlineImage, inline_image.Union()));
  const std::vector<wire::ImagePair> pairs = {{0, 1}, {1, 2}, {2, 3}};
  const std::vector<std::string> outputs_text = {"pts3d_1", "conf_1"};
  const auto outputs = b.CreateVectorOfStrings(outputs_text);
  const wire::Resolution resolution(384, 512);
  const auto options = wire::CreateInferOptions(b, &resolution, outputs, wire::Precision::FP16, 100, 1000);
  const auto body = wire::CreateInferBatchDirect(b, "mast3r", &images, &pairs, true, options, false);
  wire::RequestBuilder request(b);
  request.add_protocol_version(protocol_version);
  request.add_request_id(99);
  const wire::Id128 session(1, 2);
  request.add_session(&session);
  request.add_body_type(wire::RequestBody::InferBatch);
  request.add_body(body.Union());
  wire::FinishRequestBuffer(b, request.Finish());
  return to_bytes(b);
}

}  // namespace recon::daemon::testing
