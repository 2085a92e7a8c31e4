/* Record once, submit many (recon/runtime.h sequences): a small MLP block recorded once gives,
 * on every submit, bit-identical results to the same ops run at once; new inputs uploaded
 * between submits are seen; handles released while a sequence holds their tensors (the context
 * too) do not disturb it; two sequences run in submission order; and the rules of a sequence in
 * flight and of a sealed one.
 *   sequence_test            (RECON_TEST_DEVICE=N picks the device; default: lavapipe) */
#include "test_util.h"

enum { ROWS = 24, K = 32, HIDDEN = 48 };

typedef struct block {
  recon_tensor *x, *w1, *b1, *h, *w2, *y, *gamma, *beta, *norm, *prob;
} block;

static const uint64_t kX[] = {ROWS, K}, kW1[] = {HIDDEN, K}, kB1[] = {HIDDEN}, kH[] = {ROWS, HIDDEN};
static const uint64_t kW2[] = {HIDDEN, K}, kY[] = {ROWS, K}, kC[] = {K};

static block make_block(recon_context* ctx) {
  block b;
  float* v;
  b.x = tensor_from(ctx, RECON_F32, 2, kX, v = random_floats(ROWS * K, -1, 1)), free(v);
  b.w1 = tensor_from(ctx, RECON_F32, 2, kW1, v = random_floats(HIDDEN * K, -0.3f, 0.3f)), free(v);
  b.b1 = tensor_from(ctx, RECON_F32, 1, kB1, v = random_floats(HIDDEN, -0.1f, 0.1f)), free(v);
  b.h = tensor_from(ctx, RECON_F32, 2, kH, NULL);
  b.w2 = tensor_from(ctx, RECON_F32, 2, kW2, v = random_floats(HIDDEN * K, -0.3f, 0.3f)), free(v);
  b.y = tensor_from(ctx, RECON_F32, 2, kY, NULL);
  b.gamma = tensor_from(ctx, RECON_F32, 1, kC, v = random_floats(K, 0.5f, 1.5f)), free(v);
  b.beta = tensor_from(ctx, RECON_F32, 1, kC, v = random_floats(K, -0.5f, 0.5f)), free(v);
  b.norm = tensor_from(ctx, RECON_F32, 2, kY, NULL);
  b.prob = tensor_from(ctx, RECON_F32, 2, kY, NULL);
  return b;
}

/* h = gelu(x·w1ᵀ + b1); y = h·w2 (matmul, alpha 0.5); y = y + x; norm = layer_norm(y); prob =
 * softmax(norm): into `seq`, or at once when seq is NULL. */
static void run_block(recon_context* ctx, recon_sequence* seq, const block* b) {
  CHECK_OK(recon_linear(ctx, seq, b->x, b->w1, b->b1, b->h, RECON_ACTIVATION_GELU));
  CHECK_OK(recon_matmul(ctx, seq, b->h, b->w2, b->y, 0.5f, 0.0f, 0));
  CHECK_OK(recon_add(ctx, seq, b->y, b->x, b->y));
  CHECK_OK(recon_layer_norm(ctx, seq, b->y, b->gamma, b->beta, b->norm, 1e-6f));
  CHECK_OK(recon_softmax(ctx, seq, b->norm, b->prob));
}

static int same(const float* a, const float* b, size_t n) {
  return memcmp(a, b, n * sizeof(float)) == 0;
}

int main(void) {
  recon_context* ctx = open_context();
  block b = make_block(ctx);

  /* The reference: the ops run at once. */
  run_block(ctx, NULL, &b);
  float* want = fetch(b.prob);
  float* want_y = fetch(b.y);

  recon_sequence* seq = NULL;
  CHECK_OK(recon_sequence_create(ctx, &seq));
  CHECK_FAILS(recon_sequence_submit(seq), RECON_INVALID_ARGUMENT, "empty");
  run_block(ctx, seq, &b);
  uint32_t count = 0;
  CHECK_OK(recon_sequence_op_count(seq, &count));
  CHECK(count == 5);
  CHECK_OK(recon_sequence_wait(seq)); /* nothing in flight: returns at once */

  /* Recording ran nothing: the outputs still hold the immediate results. Zero them, then replay. */
  float* zeros = calloc(ROWS * K, sizeof(float));
  for (int round = 0; round < 5; ++round) {
    CHECK_OK(recon_tensor_upload(b.prob, RECON_F32, zeros, ROWS * K * sizeof(float)));
    CHECK_OK(recon_tensor_upload(b.y, RECON_F32, zeros, ROWS * K * sizeof(float)));
    CHECK_OK(recon_sequence_submit(seq));
    CHECK_OK(recon_sequence_wait(seq));
    float* got = fetch(b.prob);
    float* got_y = fetch(b.y);
    if (!same(got, want, ROWS * K) || !same(got_y, want_y, ROWS * K)) {
      fprintf(stderr, "submit %d: the sequence's results differ from the ops run at once\n", round);
      ++failures;
    }
    free(got), free(got_y);
  }

  /* While in flight: a second submit, host access to its tensors and ops on them are refused. */
  CHECK_OK(recon_sequence_submit(seq));
  CHECK_FAILS(recon_sequence_submit(seq), RECON_INVALID_ARGUMENT, "in flight");
  CHECK_FAILS(recon_tensor_upload(b.x, RECON_F32, zeros, ROWS * K * sizeof(float)), RECON_INVALID_ARGUMENT,
              "recon_sequence_wait");
  CHECK_FAILS(recon_tensor_download(b.prob, RECON_F32, zeros, ROWS * K * sizeof(float)), RECON_INVALID_ARGUMENT,
              "submitted sequence");
  CHECK_FAILS(recon_softmax(ctx, NULL, b.norm, b.prob), RECON_INVALID_ARGUMENT, "x is used by a submitted sequence");
  CHECK_OK(recon_sequence_wait(seq));
  CHECK_OK(recon_sequence_wait(seq));
  /* Sealed by its first submit. */
  CHECK_FAILS(recon_softmax(ctx, seq, b.norm, b.prob), RECON_INVALID_ARGUMENT, "sealed");
  CHECK_OK(recon_sequence_op_count(seq, &count));
  CHECK(count == 5);

  /* A new input is seen by the next submit, and matches the immediate ops on it. */
  float* x2 = random_floats(ROWS * K, -2, 2);
  CHECK_OK(recon_tensor_upload(b.x, RECON_F32, x2, ROWS * K * sizeof(float)));
  run_block(ctx, NULL, &b);
  float* want2 = fetch(b.prob);
  CHECK(!same(want2, want, ROWS * K));
  CHECK_OK(recon_tensor_upload(b.prob, RECON_F32, zeros, ROWS * K * sizeof(float)));
  CHECK_OK(recon_sequence_submit(seq));
  CHECK_OK(recon_sequence_wait(seq));
  float* got2 = fetch(b.prob);
  CHECK(same(got2, want2, ROWS * K));

  /* A refused op leaves a sequence as it was: the next submit runs what was recorded. */
  recon_sequence* partial = NULL;
  CHECK_OK(recon_sequence_create(ctx, &partial));
  CHECK_OK(recon_linear(ctx, partial, b.x, b.w1, b.b1, b.h, RECON_ACTIVATION_GELU));
  CHECK_FAILS(recon_matmul(ctx, partial, b.x, b.w1, b.y, 1.0f, 0.0f, 0), RECON_INVALID_ARGUMENT, "inner dimensions");
  CHECK_OK(recon_sequence_op_count(partial, &count));
  CHECK(count == 1);
  CHECK_OK(recon_sequence_submit(partial));
  CHECK_OK(recon_sequence_wait(partial));
  recon_sequence_release(partial);

  /* Two sequences in submission order: the second reads what the first wrote. */
  recon_sequence* first = NULL;
  recon_sequence* second = NULL;
  CHECK_OK(recon_sequence_create(ctx, &first));
  CHECK_OK(recon_sequence_create(ctx, &second));
  CHECK_OK(recon_add(ctx, first, b.x, b.x, b.y));     /* y = 2x */
  CHECK_OK(recon_mul(ctx, second, b.y, b.y, b.norm)); /* norm = 4x² */
  CHECK_OK(recon_sequence_submit(first));
  CHECK_OK(recon_sequence_submit(second));
  CHECK_OK(recon_sequence_wait(second));
  CHECK_OK(recon_sequence_wait(first));
  float* sq = fetch(b.norm);
  int exact = 1;
  for (int i = 0; i < ROWS * K; ++i) exact &= sq[i] == (2 * x2[i]) * (2 * x2[i]);
  CHECK(exact);
  free(sq);
  recon_sequence_release(first);
  /* Released while in flight: waits first. */
  CHECK_OK(recon_sequence_submit(second));
  recon_sequence_release(second);

  /* Handles released while the sequence holds their tensors, the context too: it still replays. */
  recon_tensor* prob = b.prob;
  recon_tensor_release(b.w1);
  recon_tensor_release(b.w2);
  recon_tensor_release(b.b1);
  recon_tensor_release(b.h);
  recon_context_release(ctx);
  CHECK_OK(recon_tensor_upload(prob, RECON_F32, zeros, ROWS * K * sizeof(float)));
  CHECK_OK(recon_sequence_submit(seq));
  CHECK_OK(recon_sequence_wait(seq));
  float* got3 = fetch(prob);
  CHECK(same(got3, want2, ROWS * K));
  recon_sequence_release(seq);
  recon_tensor_release(b.x), recon_tensor_release(b.y), recon_tensor_release(b.gamma);
  recon_tensor_release(b.beta), recon_tensor_release(b.norm), recon_tensor_release(prob);

  free(want), free(want_y), free(zeros), free(x2), free(want2), free(got2), free(got3);
  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("sequence_test: all checks passed\n");
  return 0;
}
