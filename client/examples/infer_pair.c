/* infer_pair.c: the smallest complete C program over librecon's C ABI (recon/recon.h). Connects to
 * recond, sends two synthetic RGB images from its own memory, runs one MASt3R pair, copies
 * conf_1 into its own buffer, views pts3d_1 in place, and prints the mean depth of view 1.
 *
 *   infer_pair_c [--socket-dir DIR] [WIDTHxHEIGHT]     (default /run/recon, 512x384)
 *   infer_pair_c --version
 * Exit codes: 0 done, 2 usage, 3 no daemon (or it refused). */
#include <recon/recon.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  const char* socket_dir = NULL;
  unsigned width = 512, height = 384;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--version") == 0) {
      printf("infer_pair_c: librecon %s, C ABI %u\n", recon_library_version(), (unsigned)recon_c_abi_version());
      return 0;
    }
    if (strcmp(argv[i], "--socket-dir") == 0 && i + 1 < argc) {
      socket_dir = argv[++i];
    } else if (sscanf(argv[i], "%ux%u", &width, &height) != 2) {
      fprintf(stderr, "usage: infer_pair_c [--socket-dir DIR] [WIDTHxHEIGHT] | --version\n");
      return 2;
    }
  }
  uint8_t* pixels = malloc((size_t)width * height * 3 * 2);
  if (pixels == NULL) return 1;
  for (size_t i = 0; i < (size_t)width * height * 3 * 2; ++i) pixels[i] = (uint8_t)((i * 31 + i / 191) % 256);
  const recon_image a = {pixels, width, height, 0};
  const recon_image b = {pixels + (size_t)width * height * 3, width, height, 0};

  recon_client* client = NULL;
  recon_result* pair = NULL;
  int code = 3;
  if (recon_client_connect(socket_dir, "infer_pair_c", 0, &client) != RECON_OK) goto done;
  recon_infer_options options = RECON_INIT(recon_infer_options);
  options.height = height;
  options.width = width;
  if (recon_infer_pair(client, &a, &b, &options, &pair) != RECON_OK) goto done;
  const void* pts = NULL;
  uint64_t bytes = 0;
  if (recon_result_view(pair, "pts3d_1", &pts, &bytes) != RECON_OK) goto done;
  double depth = 0;
  const size_t n = bytes / (3 * sizeof(float));
  for (size_t i = 0; i < n; ++i) depth += ((const float*)pts)[3 * i + 2];
  printf("pair %ux%u: %zu tensors, mean depth of view 1 %.4f\n", width, height, recon_result_tensor_count(pair),
         n > 0 ? depth / (double)n : 0.0);
  code = 0;
done:
  if (code != 0) fprintf(stderr, "infer_pair_c: %s\n", recon_last_error());
  recon_result_release(pair);
  recon_client_release(client);
  free(pixels);
  return code;
}
