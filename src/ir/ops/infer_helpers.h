// Shared pieces of shape inference: broadcasting, axis handling, reading shape-like inputs.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "core/status.h"
#include "ir/op_schema.h"
#include "ir/types.h"

namespace kestrel::ir {

// ONNX multidirectional (numpy) broadcasting of two or more shapes; unknown rank stays unknown.
core::Result<Shape> broadcast_shapes(const std::vector<const Shape*>& shapes);
// Broadcast of all present inputs of ctx.
core::Result<Shape> broadcast_inputs(const InferContext& ctx);

// Output i gets input j's type (dtype and shape).
core::Status same_as_input(InferContext& ctx, size_t out = 0, size_t in = 0);

// Reads a known int tensor input (axes, shape, pads...) as int64s; nullopt if the value is unknown.
std::optional<std::vector<int64_t>> input_ints(const InferContext& ctx, size_t i);

// Dim of the product / quotient when known, else unknown.
Dim dim_mul(const Dim& a, const Dim& b);

// Shape with `rank` unknown dims.
Shape unknown_dims(int64_t rank);

// Common checks.
core::Status expect_rank(const InferContext& ctx, size_t input, int64_t rank);
core::Status expect_float(const InferContext& ctx, size_t input);
// A fused op's residual Z (input `input`, when present) must have the output's shape `out` (dims known on both
// sides equal; unknown ranks pass).
core::Status expect_residual_shape(const InferContext& ctx, size_t input, const Shape& out);

// Registers a simple op: fixed arity and an inference function (domain "": ONNX's).
void add_op(OpRegistry& r, const char* name, int min_in, int max_in, int min_out, int max_out, InferFn fn,
            const char* doc, uint64_t value_inputs = 0, const char* domain = "");
// A Kestrel op (domain kKestrelDomain) with one output.
inline void add_kestrel_op(OpRegistry& r, const char* name, int min_in, int max_in, InferFn fn, const char* doc) {
  add_op(r, name, min_in, max_in, 1, 1, std::move(fn), doc, 0, kKestrelDomain);
}

}  // namespace kestrel::ir
