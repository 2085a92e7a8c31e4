/* The C ABI (recon/recon.h) against a real recond, compiled as C11: a pair from images in this
 * program's memory, its tensors listed, viewed in place and copied into a caller buffer (the same
 * bytes), its match, and every error path a binding meets: a daemon refusal with its code and
 * message, NULL arguments, a buffer too small, an unknown tensor, releasing NULL.
 *   c_api_test SOCKET_DIR          (tests/client/c_api_recond_test.sh starts the daemon) */
#include <math.h>
#include <recon/recon.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond)                                                                                                \
  do {                                                                                                             \
    if (!(cond)) {                                                                                                 \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, recon_last_error()); \
      ++failures;                                                                                                  \
    }                                                                                                              \
  } while (0)

enum { W = 64, H = 48 };

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_api_test SOCKET_DIR\n");
    return 2;
  }
  CHECK(recon_c_abi_version() == RECON_C_ABI_VERSION);
  CHECK(strcmp(recon_status_name(RECON_NOT_FOUND), "NOT_FOUND") == 0);
  recon_client_release(NULL); /* no-ops */
  recon_result_release(NULL);

  static uint8_t pixels[2][H][W][3];
  for (int v = 0; v < 2; ++v)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x)
        for (int c = 0; c < 3; ++c) pixels[v][y][x][c] = (uint8_t)((x * 7 + y * 13 + c * 29 + v * 101) % 256);
  const recon_image a = {&pixels[0][0][0][0], W, H, 0};
  const recon_image b = {&pixels[1][0][0][0], W, H, 0};

  recon_client* client = NULL;
  CHECK(recon_client_connect(argv[1], "c-api-test", 120000, &client) == RECON_OK);
  if (client == NULL) return 1;

  recon_result* pair = NULL;
  recon_infer_options options = RECON_INIT(recon_infer_options);
  options.height = H;
  options.width = W;
  CHECK(recon_infer_pair(client, &a, &b, &options, &pair) == RECON_OK);
  if (pair == NULL) return 1;
  CHECK(recon_result_tensor_count(pair) == 8);
  int saw_pts = 0;
  for (size_t i = 0; i < recon_result_tensor_count(pair); ++i) {
    recon_tensor_info info;
    CHECK(recon_result_tensor_info(pair, i, &info) == RECON_OK);
    if (strcmp(info.name, "pts3d_1") == 0) {
      saw_pts = 1;
      CHECK(info.dtype == RECON_F32 && info.ndim == 3);
      CHECK(info.shape[0] == H && info.shape[1] == W && info.shape[2] == 3);
      CHECK(info.bytes == (uint64_t)H * W * 3 * sizeof(float));
    }
  }
  CHECK(saw_pts);
  recon_tensor_info beyond;
  CHECK(recon_result_tensor_info(pair, 8, &beyond) == RECON_INVALID_ARGUMENT);

  /* A view in shared memory and a copy into our buffer hold the same bytes. */
  const void* view = NULL;
  uint64_t bytes = 0;
  CHECK(recon_result_view(pair, "conf_1", &view, &bytes) == RECON_OK);
  CHECK(bytes == (uint64_t)H * W * sizeof(float));
  static float conf[H * W];
  uint64_t written = 0;
  CHECK(recon_result_fetch(pair, "conf_1", conf, sizeof(conf), &written) == RECON_OK);
  CHECK(written == bytes && view != NULL && memcmp(view, conf, sizeof(conf)) == 0);
  for (int i = 0; i < H * W; ++i) CHECK(isfinite(conf[i]) && conf[i] >= 1.0f); /* conf = 1 + exp(x) */
  CHECK(recon_result_fetch(pair, "conf_1", conf, 16, &written) == RECON_RESOURCE_EXHAUSTED);
  CHECK(strstr(recon_last_error(), "conf_1") != NULL);
  CHECK(recon_result_view(pair, "nope", &view, &bytes) == RECON_NOT_FOUND);

  /* Matching on the daemon. */
  recon_result* matches = NULL;
  recon_match_options match = RECON_INIT(recon_match_options);
  match.subsample = 4;
  CHECK(recon_match(client, pair, &match, &matches) == RECON_OK);
  if (matches != NULL) {
    recon_tensor_info info;
    CHECK(recon_result_tensor_info(matches, 0, &info) == RECON_OK);
    CHECK(strcmp(info.name, "matches_1") == 0 && info.dtype == RECON_I32 && info.ndim == 2 && info.shape[1] == 2);
  }
  recon_result_release(matches);

  /* The daemon's refusal: its code and its message. */
  recon_result* refused = (recon_result*)&failures; /* must be reset to NULL */
  options.model = "nope";
  CHECK(recon_infer_pair(client, &a, &b, &options, &refused) == RECON_NOT_FOUND);
  CHECK(refused == NULL);
  CHECK(strstr(recon_last_error(), "nope") != NULL);
  CHECK(recon_infer_pair(client, &a, NULL, NULL, &refused) == RECON_INVALID_ARGUMENT);
  CHECK(recon_infer_pair(client, &a, &b, NULL, NULL) == RECON_INVALID_ARGUMENT);
  const recon_image empty = {NULL, W, H, 0};
  CHECK(recon_infer_pair(client, &a, &empty, NULL, &refused) == RECON_INVALID_ARGUMENT);
  /* An old caller's shorter options struct is read only as far as it goes. */
  recon_infer_options short_options = RECON_INIT(recon_infer_options);
  short_options.struct_size = sizeof(size_t) + sizeof(const char*); /* knows only `model` */
  short_options.height = 9999;                                      /* beyond its size: ignored */
  recon_result* second = NULL;
  CHECK(recon_infer_pair(client, &a, &b, &short_options, &second) == RECON_OK);
  recon_result_release(second);

  recon_result_release(pair);
  recon_client_release(client);
  /* No daemon there: UNAVAILABLE. */
  recon_client* none = NULL;
  CHECK(recon_client_connect("/nonexistent/recon", NULL, 2000, &none) == RECON_UNAVAILABLE && none == NULL);
  if (failures == 0) printf("c_api_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
