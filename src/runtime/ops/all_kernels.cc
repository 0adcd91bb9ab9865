// The list of kernel families; each family's bindings live in its own file in this folder.
#include "runtime/kernel.h"

namespace kestrel::runtime {

void register_control_flow_kernels(KernelRegistry& r);
void register_elementwise_kernels(KernelRegistry& r);
void register_loss_kernels(KernelRegistry& r);
void register_quantize_kernels(KernelRegistry& r);
void register_random_kernels(KernelRegistry& r);
void register_reduce_kernels(KernelRegistry& r);
void register_recurrent_kernels(KernelRegistry& r);
void register_shape_kernels(KernelRegistry& r);
void register_transform_kernels(KernelRegistry& r);
void register_gather_scatter_kernels(KernelRegistry& r);
void register_conv_kernels(KernelRegistry& r);
void register_matmul_kernels(KernelRegistry& r);
void register_pool_kernels(KernelRegistry& r);
void register_normalization_kernels(KernelRegistry& r);
void register_softmax_kernels(KernelRegistry& r);
void register_signal_kernels(KernelRegistry& r);
void register_text_kernels(KernelRegistry& r);
void register_resize_kernels(KernelRegistry& r);
void register_detection_kernels(KernelRegistry& r);
void register_linalg_kernels(KernelRegistry& r);
void register_misc_kernels(KernelRegistry& r);
void register_training_kernels(KernelRegistry& r);
void register_fused_kernels(KernelRegistry& r);
void register_attention_kernels(KernelRegistry& r);
void register_weight_int8_kernels(KernelRegistry& r);

void register_all_kernels(KernelRegistry& r) {
  register_control_flow_kernels(r);
  register_elementwise_kernels(r);
  register_loss_kernels(r);
  register_quantize_kernels(r);
  register_random_kernels(r);
  register_reduce_kernels(r);
  register_recurrent_kernels(r);
  register_shape_kernels(r);
  register_transform_kernels(r);
  register_gather_scatter_kernels(r);
  register_conv_kernels(r);
  register_matmul_kernels(r);
  register_pool_kernels(r);
  register_normalization_kernels(r);
  register_softmax_kernels(r);
  register_signal_kernels(r);
  register_text_kernels(r);
  register_resize_kernels(r);
  register_detection_kernels(r);
  register_linalg_kernels(r);
  register_misc_kernels(r);
  register_training_kernels(r);
  register_fused_kernels(r);
  register_attention_kernels(r);
  register_weight_int8_kernels(r);
}

}  // namespace kestrel::runtime
