// The list of op families; each family's schemas live in its own file in this folder.
#include "ir/op_schema.h"

namespace kestrel::ir {

void register_elementwise_ops(OpRegistry& r);
void register_conv_ops(OpRegistry& r);
void register_matmul_ops(OpRegistry& r);
void register_pool_ops(OpRegistry& r);
void register_normalization_ops(OpRegistry& r);
void register_softmax_ops(OpRegistry& r);

void register_all_ops(OpRegistry& r) {
  register_elementwise_ops(r);
  register_conv_ops(r);
  register_matmul_ops(r);
  register_pool_ops(r);
  register_normalization_ops(r);
  register_softmax_ops(r);
}

}  // namespace kestrel::ir
