/* Install-test consumer of the C API: runs the test model (y = relu(x + c)) on ones and checks
 * y. Built with -DRUNTIME_ONLY against the runtime library alone, it checks instead that opening
 * an .onnx file fails cleanly (the ONNX loader lives in kestrel_convert). */
#include <kestrel/kestrel.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  KestrelSession* session = NULL;
  KestrelStatus st;
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.onnx\n", argv[0]);
    return 2;
  }
  printf("kestrel %s (C API)\n", kestrel_version());
  st = kestrel_session_open(argv[1], NULL, &session);
#ifdef RUNTIME_ONLY
  if (st == KESTREL_OK || strstr(kestrel_last_error(), "formats") == NULL) {
    fprintf(stderr, "runtime-only build: expected a clean 'unknown format' error, got %d: %s\n", (int)st,
            kestrel_last_error());
    kestrel_session_free(session);
    return 1;
  }
  printf("runtime only: %s\n", kestrel_last_error());
  return 0;
#else
  {
    const float want[6] = {2, 0, 4, 2, 0, 4};
    float x[6] = {1, 1, 1, 1, 1, 1};
    int64_t shape[2] = {2, 3};
    KestrelTensor* in = NULL;
    KestrelTensor* out = NULL;
    const float* y;
    int i, ok = 1;
    if (st != KESTREL_OK) {
      fprintf(stderr, "open failed: %s\n", kestrel_last_error());
      return 1;
    }
    if (kestrel_tensor_create(KESTREL_F32, shape, 2, x, &in) != KESTREL_OK ||
        kestrel_session_run(session, (const KestrelTensor* const*)&in, 1, &out, 1) != KESTREL_OK) {
      fprintf(stderr, "run failed: %s\n", kestrel_last_error());
      return 1;
    }
    y = (const float*)kestrel_tensor_data(out);
    printf("y =");
    for (i = 0; i < 6; ++i) {
      printf(" %g", y[i]);
      if (y[i] != want[i]) ok = 0;
    }
    printf("\n");
    kestrel_tensor_free(in);
    kestrel_tensor_free(out);
    kestrel_session_free(session);
    return ok ? 0 : 1;
  }
#endif
}
