// Public C API: thin wrappers over the C++ API that turn exceptions into status codes.
#include <cstring>
#include <new>
#include <string>

#include "kestrel/kestrel.h"
#include "kestrel/kestrel.hpp"

struct KestrelSession {
  kestrel::Session session;
};

struct KestrelTensor {
  kestrel::Tensor tensor;
};

namespace {

thread_local std::string t_last_error;

template <class F>
KestrelStatus guarded(F&& f) {
  try {
    t_last_error.clear();
    f();
    return KESTREL_OK;
  } catch (const kestrel::Error& e) {
    t_last_error = e.what();
    return static_cast<KestrelStatus>(e.code());
  } catch (const std::bad_alloc&) {
    t_last_error = "out of memory";
    return KESTREL_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    t_last_error = e.what();
    return KESTREL_INTERNAL;
  }
}

KestrelStatus fail(KestrelStatus s, const char* msg) {
  t_last_error = msg;
  return s;
}

kestrel::SessionOptions to_options(const KestrelOptions* o) {
  kestrel::SessionOptions r;
  if (!o) return r;
  r.num_threads = o->num_threads > 0 ? o->num_threads : 1;
  r.optimization_level = o->optimization_level;
  r.reference_kernels = o->reference_kernels != 0;
  if (o->isa) r.isa = o->isa;
  if (o->float_math) r.float_math = o->float_math;
  return r;
}

KestrelStatus io_info(const std::vector<kestrel::TensorInfo>& v, size_t i, const char** name, KestrelDType* dtype,
                      const int64_t** shape, size_t* rank) {
  if (i >= v.size()) return fail(KESTREL_OUT_OF_RANGE, "index out of range");
  if (name) *name = v[i].name.c_str();
  if (dtype) *dtype = static_cast<KestrelDType>(v[i].dtype);
  if (shape) *shape = v[i].shape.data();
  if (rank) *rank = v[i].shape.size();
  return KESTREL_OK;
}

}  // namespace

extern "C" {

void kestrel_options_default(KestrelOptions* o) {
  if (!o) return;
  o->num_threads = 1;
  o->optimization_level = 2;
  o->reference_kernels = 0;
  o->isa = nullptr;
  o->float_math = nullptr;
}

const char* kestrel_last_error(void) { return t_last_error.c_str(); }
const char* kestrel_version(void) { return kestrel::version(); }

KestrelStatus kestrel_session_open(const char* path, const KestrelOptions* options, KestrelSession** out) {
  if (!path || !out) return fail(KESTREL_INVALID_ARGUMENT, "kestrel_session_open: null argument");
  *out = nullptr;
  return guarded([&] { *out = new KestrelSession{kestrel::Session::open(path, to_options(options))}; });
}

KestrelStatus kestrel_session_open_memory(const void* data, size_t size, const KestrelOptions* options,
                                          KestrelSession** out) {
  if (!data || !out) return fail(KESTREL_INVALID_ARGUMENT, "kestrel_session_open_memory: null argument");
  *out = nullptr;
  return guarded([&] { *out = new KestrelSession{kestrel::Session::from_memory(data, size, to_options(options))}; });
}

void kestrel_session_free(KestrelSession* s) { delete s; }

size_t kestrel_session_input_count(const KestrelSession* s) { return s ? s->session.inputs().size() : 0; }
size_t kestrel_session_output_count(const KestrelSession* s) { return s ? s->session.outputs().size() : 0; }

KestrelStatus kestrel_session_input_info(const KestrelSession* s, size_t i, const char** name, KestrelDType* dtype,
                                         const int64_t** shape, size_t* rank) {
  if (!s) return fail(KESTREL_INVALID_ARGUMENT, "null session");
  return io_info(s->session.inputs(), i, name, dtype, shape, rank);
}

KestrelStatus kestrel_session_output_info(const KestrelSession* s, size_t i, const char** name, KestrelDType* dtype,
                                          const int64_t** shape, size_t* rank) {
  if (!s) return fail(KESTREL_INVALID_ARGUMENT, "null session");
  return io_info(s->session.outputs(), i, name, dtype, shape, rank);
}

KestrelStatus kestrel_session_run(KestrelSession* s, const KestrelTensor* const* inputs, size_t num_inputs,
                                  KestrelTensor** outputs, size_t num_outputs) {
  if (!s || (num_inputs && !inputs) || (num_outputs && !outputs))
    return fail(KESTREL_INVALID_ARGUMENT, "kestrel_session_run: null argument");
  if (num_outputs != s->session.outputs().size())
    return fail(KESTREL_INVALID_ARGUMENT, "kestrel_session_run: num_outputs does not match the model");
  return guarded([&] {
    std::vector<kestrel::Tensor> ins;
    for (size_t i = 0; i < num_inputs; ++i) {
      if (!inputs[i]) throw kestrel::Error(kestrel::ErrorCode::kInvalidArgument, "null input tensor");
      ins.push_back(inputs[i]->tensor);
    }
    std::vector<kestrel::Tensor> outs(num_outputs);
    for (size_t i = 0; i < num_outputs; ++i)
      if (outputs[i]) outs[i] = outputs[i]->tensor;
    s->session.run(ins, outs);
    for (size_t i = 0; i < num_outputs; ++i) {
      if (outputs[i]) outputs[i]->tensor = outs[i];
      else outputs[i] = new KestrelTensor{outs[i]};
    }
  });
}

KestrelStatus kestrel_tensor_create(KestrelDType dtype, const int64_t* shape, size_t rank, const void* data,
                                    KestrelTensor** out) {
  if (!out || (rank && !shape)) return fail(KESTREL_INVALID_ARGUMENT, "kestrel_tensor_create: null argument");
  *out = nullptr;
  return guarded([&] {
    std::vector<int64_t> dims(shape, shape + rank);
    auto d = static_cast<kestrel::DType>(dtype);
    *out = new KestrelTensor{data ? kestrel::Tensor::from_data(d, dims, data) : kestrel::Tensor::empty(d, dims)};
  });
}

KestrelStatus kestrel_tensor_wrap(KestrelDType dtype, const int64_t* shape, size_t rank, void* data,
                                  KestrelTensor** out) {
  if (!out || (rank && !shape) || !data) return fail(KESTREL_INVALID_ARGUMENT, "kestrel_tensor_wrap: null argument");
  return guarded([&] {
    for (size_t i = 0; i < rank; ++i)
      if (shape[i] < 0) throw kestrel::Error(kestrel::ErrorCode::kInvalidArgument, "negative dimension");
    *out = new KestrelTensor{
        kestrel::Tensor::view(static_cast<kestrel::DType>(dtype), std::vector<int64_t>(shape, shape + rank), data)};
  });
}

void kestrel_tensor_free(KestrelTensor* t) { delete t; }
KestrelDType kestrel_tensor_dtype(const KestrelTensor* t) {
  return t ? static_cast<KestrelDType>(t->tensor.dtype()) : KESTREL_UNDEFINED;
}
size_t kestrel_tensor_rank(const KestrelTensor* t) { return t ? t->tensor.shape().size() : 0; }
const int64_t* kestrel_tensor_shape(const KestrelTensor* t) { return t ? t->tensor.shape().data() : nullptr; }
size_t kestrel_tensor_num_elements(const KestrelTensor* t) { return t ? t->tensor.num_elements() : 0; }
void* kestrel_tensor_data(KestrelTensor* t) { return t ? t->tensor.data() : nullptr; }

}  // extern "C"
