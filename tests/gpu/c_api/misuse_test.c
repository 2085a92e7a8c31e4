/* Every misuse of recon/runtime.h a binding meets is RECON_INVALID_ARGUMENT (or the code given)
 * with a message naming what is wrong, never a crash: NULL handles and pointers, wrong ranks,
 * shapes and dtypes, a tensor or sequence of another context, bad flags and enums, struct_size 0,
 * byte counts that do not match; releasing NULL is a no-op; the last error is per thread.
 *   misuse_test              (RECON_TEST_DEVICE=N picks the device; default: lavapipe) */
#include <threads.h>

#include "test_util.h"

/* The values shared with recon.h (recon/c_common.h) are ABI: never renumbered. */
_Static_assert(RECON_OK == 0 && RECON_INVALID_ARGUMENT == 1 && RECON_NOT_FOUND == 2 && RECON_PERMISSION_DENIED == 3 &&
                   RECON_RESOURCE_EXHAUSTED == 4 && RECON_UNAVAILABLE == 5 && RECON_INTERNAL == 6 &&
                   RECON_DATA_LOSS == 7 && RECON_UNIMPLEMENTED == 8 && RECON_CANCELLED == 9 && RECON_UNKNOWN == 99,
               "recon_status values changed");
_Static_assert(RECON_F32 == 0 && RECON_F16 == 1 && RECON_BF16 == 2 && RECON_U8 == 3 && RECON_I32 == 4 &&
                   RECON_U32 == 5 && RECON_I64 == 6,
               "recon_dtype values changed");

static int other_thread(void* unused) {
  (void)unused;
  /* This thread's failure leaves the main thread's last error alone. */
  return recon_tensor_create(NULL, RECON_F32, 0, NULL, NULL) == RECON_INVALID_ARGUMENT &&
         strstr(recon_runtime_last_error(), "out is NULL") != NULL;
}

int main(void) {
  CHECK(recon_runtime_abi_version() == RECON_RUNTIME_ABI_VERSION);
  CHECK(recon_runtime_version()[0] != '\0');
  CHECK(strcmp(recon_runtime_status_name(RECON_INVALID_ARGUMENT), "INVALID_ARGUMENT") == 0);
  CHECK(strcmp(recon_runtime_status_name(RECON_OK), "OK") == 0);
  CHECK(strcmp(recon_runtime_status_name((recon_status)42), "UNKNOWN") == 0);
  recon_context_release(NULL);
  recon_tensor_release(NULL);
  recon_sequence_release(NULL);

  /* Devices and contexts. */
  uint32_t count = 0;
  CHECK_FAILS(recon_device_count(NULL), RECON_INVALID_ARGUMENT, "count is NULL");
  CHECK_OK(recon_device_count(&count));
  recon_device_info info = RECON_INIT(recon_device_info);
  CHECK_FAILS(recon_device_describe(count, &info), RECON_INVALID_ARGUMENT, "out of range");
  CHECK_FAILS(recon_device_describe(0, NULL), RECON_INVALID_ARGUMENT, "info is NULL");
  info.struct_size = 0;
  CHECK_FAILS(recon_device_describe(0, &info), RECON_INVALID_ARGUMENT, "RECON_INIT");
  recon_context* ctx = NULL;
  CHECK_FAILS(recon_context_create(count, NULL, &ctx), RECON_INVALID_ARGUMENT, "out of range");
  CHECK(ctx == NULL);
  CHECK_FAILS(recon_context_create(0, NULL, NULL), RECON_INVALID_ARGUMENT, "out is NULL");
  recon_context_options zero_size = {0};
  CHECK_FAILS(recon_context_create(0, &zero_size, &ctx), RECON_INVALID_ARGUMENT, "struct_size");
  ctx = open_context();
  recon_context* other = open_context();

  /* Tensors. */
  const uint64_t s4x8[] = {4, 8}, s8x4[] = {8, 4}, s8[] = {8}, s5[] = {5, 1, 1, 1, 1}, s0[] = {4, 0};
  recon_tensor* t = NULL;
  CHECK_FAILS(recon_tensor_create(NULL, RECON_F32, 2, s4x8, &t), RECON_INVALID_ARGUMENT, "context is NULL");
  CHECK_FAILS(recon_tensor_create(ctx, RECON_F32, 2, s4x8, NULL), RECON_INVALID_ARGUMENT, "out is NULL");
  CHECK_FAILS(recon_tensor_create(ctx, RECON_F32, 0, s4x8, &t), RECON_INVALID_ARGUMENT, "rank 0");
  CHECK_FAILS(recon_tensor_create(ctx, RECON_F32, 5, s5, &t), RECON_INVALID_ARGUMENT, "rank 5");
  CHECK_FAILS(recon_tensor_create(ctx, RECON_F32, 2, NULL, &t), RECON_INVALID_ARGUMENT, "shape is NULL");
  CHECK_FAILS(recon_tensor_create(ctx, RECON_F32, 2, s0, &t), RECON_INVALID_ARGUMENT, "dimension 1 is 0");
  CHECK_FAILS(recon_tensor_create(ctx, RECON_U8, 2, s4x8, &t), RECON_INVALID_ARGUMENT, "RECON_U8");
  CHECK_FAILS(recon_tensor_create(ctx, (recon_dtype)77, 2, s4x8, &t), RECON_INVALID_ARGUMENT, "dtype 77");
  CHECK(t == NULL);

  recon_tensor* a = tensor_from(ctx, RECON_F32, 2, s4x8, NULL);
  recon_tensor* b = tensor_from(ctx, RECON_F32, 2, s8x4, NULL);
  recon_tensor* c = tensor_from(ctx, RECON_F32, 2, s4x8, NULL);
  recon_tensor* h = tensor_from(ctx, RECON_F16, 2, s4x8, NULL);
  recon_tensor* v = tensor_from(ctx, RECON_F32, 1, s8, NULL);
  recon_tensor* foreign = tensor_from(other, RECON_F32, 2, s4x8, NULL);
  float buffer[32] = {0};
  CHECK_FAILS(recon_tensor_upload(NULL, RECON_F32, buffer, sizeof(buffer)), RECON_INVALID_ARGUMENT, "tensor is NULL");
  CHECK_FAILS(recon_tensor_upload(a, RECON_F32, NULL, sizeof(buffer)), RECON_INVALID_ARGUMENT, "data is NULL");
  CHECK_FAILS(recon_tensor_upload(a, RECON_F32, buffer, 100), RECON_INVALID_ARGUMENT, "100 bytes given");
  CHECK_FAILS(recon_tensor_upload(a, RECON_F16, buffer, sizeof(buffer)), RECON_INVALID_ARGUMENT, "64 bytes");
  CHECK_FAILS(recon_tensor_upload(a, RECON_I32, buffer, sizeof(buffer)), RECON_INVALID_ARGUMENT, "host_dtype");
  CHECK_FAILS(recon_tensor_download(a, RECON_F32, buffer, 64), RECON_INVALID_ARGUMENT, "64 bytes given");
  CHECK_FAILS(recon_tensor_download(a, RECON_F32, NULL, sizeof(buffer)), RECON_INVALID_ARGUMENT, "data is NULL");
  CHECK_FAILS(recon_tensor_shape(NULL, NULL, NULL, NULL), RECON_INVALID_ARGUMENT, "tensor is NULL");

  /* matmul. */
  CHECK_FAILS(recon_matmul(NULL, NULL, a, b, c, 1, 0, 0), RECON_INVALID_ARGUMENT, "context is NULL");
  CHECK_FAILS(recon_matmul(ctx, NULL, NULL, b, c, 1, 0, 0), RECON_INVALID_ARGUMENT, "a is NULL");
  CHECK_FAILS(recon_matmul(ctx, NULL, a, b, NULL, 1, 0, 0), RECON_INVALID_ARGUMENT, "c is NULL");
  CHECK_FAILS(recon_matmul(ctx, NULL, a, b, c, 1, 0, 0), RECON_INVALID_ARGUMENT, "c is [4,8] but op(a)");
  CHECK_FAILS(recon_matmul(ctx, NULL, a, a, c, 1, 0, 0), RECON_INVALID_ARGUMENT, "inner dimensions");
  CHECK_FAILS(recon_matmul(ctx, NULL, a, a, b, 1, 0, RECON_TRANSPOSE_A), RECON_INVALID_ARGUMENT, "op(a)·op(b) is 8x8");
  CHECK_FAILS(recon_matmul(ctx, NULL, a, b, c, 1, 0, 4), RECON_INVALID_ARGUMENT, "flags 4");
  CHECK_FAILS(recon_matmul(ctx, NULL, a, c, h, 1, 0, RECON_TRANSPOSE_B), RECON_INVALID_ARGUMENT,
              "c is RECON_F16 but a is RECON_F32");
  CHECK_FAILS(recon_matmul(ctx, NULL, a, foreign, c, 1, 0, RECON_TRANSPOSE_B), RECON_INVALID_ARGUMENT,
              "b is a tensor of another context");
  CHECK_FAILS(recon_matmul(ctx, NULL, a, c, a, 1, 0, RECON_TRANSPOSE_B), RECON_INVALID_ARGUMENT,
              "c must not be a or b");
  CHECK_FAILS(recon_matmul(ctx, NULL, v, b, c, 1, 0, 0), RECON_INVALID_ARGUMENT, "a is [8]; 2-D or 3-D");

  /* add, mul. */
  CHECK_FAILS(recon_add(ctx, NULL, a, b, c), RECON_INVALID_ARGUMENT, "do not broadcast");
  CHECK_FAILS(recon_mul(ctx, NULL, a, v, b), RECON_INVALID_ARGUMENT, "out is [8,4] but a and b broadcast to [4,8]");
  CHECK_FAILS(recon_add(ctx, NULL, a, h, c), RECON_INVALID_ARGUMENT, "b is RECON_F16");
  CHECK_FAILS(recon_add(ctx, NULL, v, a, v), RECON_INVALID_ARGUMENT, "out is [8] but");
  CHECK_FAILS(recon_add(other, NULL, a, c, c), RECON_INVALID_ARGUMENT, "a is a tensor of another context");

  /* linear. */
  CHECK_FAILS(recon_linear(ctx, NULL, a, b, NULL, c, RECON_ACTIVATION_NONE), RECON_INVALID_ARGUMENT,
              "input [4,8] has K = 8 but weight [8,4] has K = 4");
  CHECK_FAILS(recon_linear(ctx, NULL, a, a, v, c, RECON_ACTIVATION_NONE), RECON_INVALID_ARGUMENT,
              "bias is [8]; [4] expected");
  CHECK_FAILS(recon_linear(ctx, NULL, a, c, NULL, b, RECON_ACTIVATION_NONE), RECON_INVALID_ARGUMENT,
              "output is [8,4]; [4,4] expected");
  CHECK_FAILS(recon_linear(ctx, NULL, a, b, NULL, c, (recon_activation)9), RECON_INVALID_ARGUMENT, "activation 9");
  CHECK_FAILS(recon_linear(ctx, NULL, a, v, NULL, c, RECON_ACTIVATION_RELU), RECON_INVALID_ARGUMENT,
              "weight is [8]; [N, K]");
  CHECK_FAILS(recon_linear(ctx, NULL, a, c, NULL, a, RECON_ACTIVATION_RELU), RECON_INVALID_ARGUMENT,
              "output must not be an input");

  /* conv2d. */
  const uint64_t img[] = {1, 2, 6, 6}, ker[] = {3, 2, 3, 3}, ker_bad[] = {3, 1, 3, 3}, outs[] = {1, 3, 4, 4};
  const uint64_t outs_bad[] = {1, 3, 6, 6}, cout[] = {3};
  recon_tensor* image = tensor_from(ctx, RECON_F32, 4, img, NULL);
  recon_tensor* kernel = tensor_from(ctx, RECON_F32, 4, ker, NULL);
  recon_tensor* kernel_bad = tensor_from(ctx, RECON_F32, 4, ker_bad, NULL);
  recon_tensor* conv_out = tensor_from(ctx, RECON_F32, 4, outs, NULL);
  recon_tensor* conv_out_bad = tensor_from(ctx, RECON_F32, 4, outs_bad, NULL);
  recon_tensor* conv_bias = tensor_from(ctx, RECON_F32, 1, cout, NULL);
  recon_conv2d_desc desc = RECON_INIT(recon_conv2d_desc);
  CHECK_OK(recon_conv2d(ctx, NULL, &desc, image, kernel, conv_bias, conv_out));
  CHECK_FAILS(recon_conv2d(ctx, NULL, NULL, image, kernel, conv_bias, conv_out), RECON_INVALID_ARGUMENT,
              "desc is NULL");
  recon_conv2d_desc no_size = {0};
  CHECK_FAILS(recon_conv2d(ctx, NULL, &no_size, image, kernel, conv_bias, conv_out), RECON_INVALID_ARGUMENT,
              "RECON_INIT");
  CHECK_FAILS(recon_conv2d(ctx, NULL, &desc, image, kernel, conv_bias, conv_out_bad), RECON_INVALID_ARGUMENT,
              "output is [1,3,6,6]; [1,3,4,4] expected");
  CHECK_FAILS(recon_conv2d(ctx, NULL, &desc, image, kernel_bad, conv_bias, conv_out), RECON_INVALID_ARGUMENT,
              "has Cin = 1 but input");
  CHECK_FAILS(recon_conv2d(ctx, NULL, &desc, image, kernel, v, conv_out), RECON_INVALID_ARGUMENT, "bias is [8]");
  CHECK_FAILS(recon_conv2d(ctx, NULL, &desc, a, kernel, NULL, conv_out), RECON_INVALID_ARGUMENT, "input is [4,8]");
  desc.dilation_h = 2;
  CHECK_FAILS(recon_conv2d(ctx, NULL, &desc, image, kernel, conv_bias, conv_out), RECON_UNIMPLEMENTED, "dilation");
  desc.dilation_h = 1;
  desc.activation = (recon_activation)-1;
  CHECK_FAILS(recon_conv2d(ctx, NULL, &desc, image, kernel, conv_bias, conv_out), RECON_INVALID_ARGUMENT,
              "activation -1");

  /* softmax, layer norm. */
  CHECK_FAILS(recon_softmax(ctx, NULL, a, b), RECON_INVALID_ARGUMENT, "out is [8,4] but x is [4,8]");
  CHECK_FAILS(recon_softmax(ctx, NULL, a, a), RECON_INVALID_ARGUMENT, "out must not be x");
  CHECK_FAILS(recon_softmax(ctx, NULL, a, h), RECON_INVALID_ARGUMENT, "out is RECON_F16");
  CHECK_OK(recon_layer_norm(ctx, NULL, a, v, NULL, c, 1e-5f));
  CHECK_FAILS(recon_layer_norm(ctx, NULL, a, NULL, a, c, 1e-5f), RECON_INVALID_ARGUMENT, "bias is [4,8]; [8]");
  CHECK_FAILS(recon_layer_norm(ctx, NULL, a, NULL, NULL, c, -1.0f), RECON_INVALID_ARGUMENT, "eps");
  CHECK_FAILS(recon_layer_norm(ctx, NULL, a, NULL, NULL, c, NAN), RECON_INVALID_ARGUMENT, "eps");
  CHECK_FAILS(recon_layer_norm(ctx, NULL, NULL, NULL, NULL, c, 1e-5f), RECON_INVALID_ARGUMENT, "x is NULL");

  /* Sequences. */
  recon_sequence* seq = NULL;
  CHECK_FAILS(recon_sequence_create(NULL, &seq), RECON_INVALID_ARGUMENT, "context is NULL");
  CHECK_FAILS(recon_sequence_create(ctx, NULL), RECON_INVALID_ARGUMENT, "out is NULL");
  CHECK_FAILS(recon_sequence_submit(NULL), RECON_INVALID_ARGUMENT, "sequence is NULL");
  CHECK_FAILS(recon_sequence_wait(NULL), RECON_INVALID_ARGUMENT, "sequence is NULL");
  CHECK_FAILS(recon_sequence_op_count(NULL, &count), RECON_INVALID_ARGUMENT, "NULL");
  CHECK_OK(recon_sequence_create(other, &seq));
  CHECK_FAILS(recon_softmax(ctx, seq, a, c), RECON_INVALID_ARGUMENT, "the sequence belongs to another context");
  CHECK_FAILS(recon_softmax(other, seq, a, c), RECON_INVALID_ARGUMENT, "x is a tensor of another context");
  CHECK_FAILS(recon_softmax(ctx, seq, a, b), RECON_INVALID_ARGUMENT, "out is [8,4]");
  CHECK_OK(recon_sequence_op_count(seq, &count));
  CHECK(count == 0);
  recon_sequence_release(seq);

  /* The last error is per thread. */
  CHECK_FAILS(recon_softmax(ctx, NULL, a, a), RECON_INVALID_ARGUMENT, "out must not be x");
  thrd_t thread;
  int thread_ok = 0;
  CHECK(thrd_create(&thread, other_thread, NULL) == thrd_success);
  CHECK(thrd_join(thread, &thread_ok) == thrd_success);
  CHECK(thread_ok == 1);
  CHECK(strstr(recon_runtime_last_error(), "out must not be x") != NULL);

  recon_tensor* all[] = {a, b, c, h, v, foreign, image, kernel, kernel_bad, conv_out, conv_out_bad, conv_bias};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) recon_tensor_release(all[i]);
  recon_context_release(other);
  recon_context_release(ctx);
  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("misuse_test: all checks passed\n");
  return 0;
}
