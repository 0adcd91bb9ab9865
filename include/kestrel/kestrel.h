/* Kestrel public C API: the same reach as the C++ API, with opaque handles and error codes.
 *
 *   KestrelSession* s;
 *   if (kestrel_session_open("model.onnx", NULL, &s) != KESTREL_OK) puts(kestrel_last_error());
 *
 * Every function returns a KestrelStatus; on failure kestrel_last_error() (per thread) says why.
 */
#ifndef KESTREL_KESTREL_H_
#define KESTREL_KESTREL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  KESTREL_OK = 0,
  KESTREL_INVALID_ARGUMENT = 1,
  KESTREL_INVALID_MODEL = 2,
  KESTREL_UNSUPPORTED = 3,
  KESTREL_OUT_OF_RANGE = 4,
  KESTREL_IO_ERROR = 5,
  KESTREL_OUT_OF_MEMORY = 6,
  KESTREL_INTERNAL = 7,
} KestrelStatus;

/* Same values as kestrel::DType. */
typedef enum {
  KESTREL_UNDEFINED = 0, KESTREL_F32, KESTREL_F16, KESTREL_BF16, KESTREL_F64, KESTREL_I8, KESTREL_U8,
  KESTREL_I16, KESTREL_U16, KESTREL_I32, KESTREL_U32, KESTREL_I64, KESTREL_U64, KESTREL_BOOL, KESTREL_STRING,
} KestrelDType;

typedef struct KestrelSession KestrelSession;
typedef struct KestrelTensor KestrelTensor;

typedef struct {
  int num_threads;          /* 0 or 1: single thread */
  int optimization_level;   /* 0..2; default 2 (use kestrel_options_default) */
  int reference_kernels;    /* nonzero: plain reference kernels only */
  const char* isa;          /* NULL or "": best available; "scalar", "avx2", "avx512" */
  const char* float_math;   /* NULL or "": what the model asks; "f32" or "bf16" (SessionOptions::float_math) */
} KestrelOptions;

void kestrel_options_default(KestrelOptions* options);

/* Message of the last failed call on this thread ("" if none). Valid until the next call. */
const char* kestrel_last_error(void);
const char* kestrel_version(void);

KestrelStatus kestrel_session_open(const char* path, const KestrelOptions* options, KestrelSession** out);
KestrelStatus kestrel_session_open_memory(const void* data, size_t size, const KestrelOptions* options,
                                          KestrelSession** out);
void kestrel_session_free(KestrelSession* session);

size_t kestrel_session_input_count(const KestrelSession* session);
size_t kestrel_session_output_count(const KestrelSession* session);
/* Name, dtype and shape of input/output i. *shape points into the session (valid while it
 * lives); unknown dims are -1. */
KestrelStatus kestrel_session_input_info(const KestrelSession* session, size_t i, const char** name,
                                         KestrelDType* dtype, const int64_t** shape, size_t* rank);
KestrelStatus kestrel_session_output_info(const KestrelSession* session, size_t i, const char** name,
                                          KestrelDType* dtype, const int64_t** shape, size_t* rank);

/* Runs with inputs in the session's input order. outputs[i] receives a new tensor the caller
 * frees with kestrel_tensor_free (if outputs[i] is non-NULL and has the right dtype and shape,
 * it is filled in place instead). */
KestrelStatus kestrel_session_run(KestrelSession* session, const KestrelTensor* const* inputs, size_t num_inputs,
                                  KestrelTensor** outputs, size_t num_outputs);

/* Tensors. kestrel_tensor_create copies `data` if non-NULL (else zero-fills);
 * kestrel_tensor_wrap uses caller memory that must outlive the tensor. */
KestrelStatus kestrel_tensor_create(KestrelDType dtype, const int64_t* shape, size_t rank, const void* data,
                                    KestrelTensor** out);
KestrelStatus kestrel_tensor_wrap(KestrelDType dtype, const int64_t* shape, size_t rank, void* data,
                                  KestrelTensor** out);
void kestrel_tensor_free(KestrelTensor* tensor);
KestrelDType kestrel_tensor_dtype(const KestrelTensor* tensor);
size_t kestrel_tensor_rank(const KestrelTensor* tensor);
const int64_t* kestrel_tensor_shape(const KestrelTensor* tensor);
size_t kestrel_tensor_num_elements(const KestrelTensor* tensor);
void* kestrel_tensor_data(KestrelTensor* tensor);

#ifdef __cplusplus
}
#endif

#endif /* KESTREL_KESTREL_H_ */
