// infer_pair: the smallest complete librecon program. Connects to recond, writes two synthetic
// RGB images into a registered shared-memory buffer, runs one MASt3R pair, fetches only the
// tensors it needs (lazily, into shared memory, no copy) and prints the median depth of view 1.
//
//   infer_pair [--socket-dir DIR] [WIDTHxHEIGHT]     (default /run/recon, 512x384)
//   infer_pair --version
#include <recon/client.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  recon::client::ConnectOptions options;
  uint32_t width = 512, height = 384;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--version") == 0) {
      std::printf("infer_pair built with librecon %s, running with %s\n", RECON_CLIENT_VERSION,
                  recon::client::library_version());
      return 0;
    }
    if (std::strcmp(argv[i], "--socket-dir") == 0 && i + 1 < argc) {
      options = recon::client::ConnectOptions::in_directory(argv[++i]);
    } else if (std::sscanf(argv[i], "%ux%u", &width, &height) != 2) {
      std::fprintf(stderr, "usage: infer_pair [--socket-dir DIR] [WIDTHxHEIGHT] | --version\n");
      return 2;
    }
  }

  try {
    recon::client::Client client = recon::client::Client::connect(options);

    // One buffer, two images, written in place; registered with the daemon once.
    const uint64_t image_bytes = recon::client::ImageBuffer::rgb_bytes(width, height);
    recon::client::ImageBuffer buffer = client.create_buffer(2 * image_bytes, "example");
    for (uint64_t i = 0; i < 2 * image_bytes; ++i) buffer.data()[i] = static_cast<uint8_t>((i * 7) % 251);
    const auto view1 = buffer.view(0, width, height);
    const auto view2 = buffer.view(image_bytes, width, height);

    recon::client::InferOptions infer;
    infer.resolution = recon::client::Resolution{height, width};
    recon::client::PendingResult pending = client.infer(view1, view2, infer);  // returns at once
    recon::client::Result result = pending.get();                              // waits for the handle

    // Only pts3d_1 crosses into this process; the other tensors stay on the GPU until released.
    const recon::client::TensorView pts = result.tensor("pts3d_1");
    std::vector<float> depth;
    const auto xyz = pts.to_float();
    for (size_t i = 2; i < xyz.size(); i += 3) depth.push_back(xyz[i]);
    std::nth_element(depth.begin(), depth.begin() + static_cast<std::ptrdiff_t>(depth.size() / 2), depth.end());
    std::printf("%s: pts3d_1 [%llu x %llu x 3], median depth %.3f, GPU %.1f ms, round trip %.1f ms\n",
                result.model().c_str(), static_cast<unsigned long long>(pts.shape()[0]),
                static_cast<unsigned long long>(pts.shape()[1]), static_cast<double>(depth[depth.size() / 2]),
                static_cast<double>(result.timings().compute.count()) / 1e6,
                static_cast<double>(result.round_trip().count()) / 1e6);
    return 0;  // `result` releases the handle, `buffer` unregisters, `client` ends the session
  } catch (const recon::client::Error& e) {
    std::fprintf(stderr, "infer_pair: %s\n", e.what());
    return e.daemon_unavailable() ? 3 : 1;
  }
}
