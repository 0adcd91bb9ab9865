// The list of op families; each family's schemas live in its own file in this folder.
#include "ir/op_schema.h"

namespace kestrel::ir {

void register_control_flow_ops(OpRegistry& r);
void register_elementwise_ops(OpRegistry& r);
void register_loss_ops(OpRegistry& r);
void register_quantize_ops(OpRegistry& r);
void register_random_ops(OpRegistry& r);
void register_reduce_ops(OpRegistry& r);
void register_recurrent_ops(OpRegistry& r);
void register_shape_ops(OpRegistry& r);
void register_transform_ops(OpRegistry& r);
void register_gather_scatter_ops(OpRegistry& r);
void register_conv_ops(OpRegistry& r);
void register_matmul_ops(OpRegistry& r);
void register_pool_ops(OpRegistry& r);
void register_normalization_ops(OpRegistry& r);
void register_softmax_ops(OpRegistry& r);
void register_signal_ops(OpRegistry& r);
void register_text_ops(OpRegistry& r);
void register_resize_ops(OpRegistry& r);
void register_detection_ops(OpRegistry& r);
void register_linalg_ops(OpRegistry& r);
void register_misc_ops(OpRegistry& r);
void register_training_ops(OpRegistry& r);
void register_attention_ops(OpRegistry& r);
void register_weight_int8_ops(OpRegistry& r);

void register_all_ops(OpRegistry& r) {
  register_control_flow_ops(r);
  register_elementwise_ops(r);
  register_loss_ops(r);
  register_quantize_ops(r);
  register_random_ops(r);
  register_reduce_ops(r);
  register_recurrent_ops(r);
  register_shape_ops(r);
  register_transform_ops(r);
  register_gather_scatter_ops(r);
  register_conv_ops(r);
  register_matmul_ops(r);
  register_pool_ops(r);
  register_normalization_ops(r);
  register_softmax_ops(r);
  register_signal_ops(r);
  register_text_ops(r);
  register_resize_ops(r);
  register_detection_ops(r);
  register_linalg_ops(r);
  register_misc_ops(r);
  register_training_ops(r);
  register_attention_ops(r);
  register_weight_int8_ops(r);
}

}  // namespace kestrel::ir
