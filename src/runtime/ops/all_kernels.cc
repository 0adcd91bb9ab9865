// The list of kernel families; each family's bindings live in its own file in this folder.
#include "runtime/kernel.h"

namespace kestrel::runtime {

void register_elementwise_kernels(KernelRegistry& r);
void register_conv_kernels(KernelRegistry& r);
void register_matmul_kernels(KernelRegistry& r);
void register_pool_kernels(KernelRegistry& r);
void register_normalization_kernels(KernelRegistry& r);
void register_softmax_kernels(KernelRegistry& r);

void register_all_kernels(KernelRegistry& r) {
  register_elementwise_kernels(r);
  register_conv_kernels(r);
  register_matmul_kernels(r);
  register_pool_kernels(r);
  register_normalization_kernels(r);
  register_softmax_kernels(r);
}

}  // namespace kestrel::runtime
