// Reference scaled-dot-product attention (kestrel.Attention): plain loops, float accumulation
// (double for f64); the oracle for fast attention kernels.
#pragma once

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

// y[b,h,i,:] = sum_j softmax_j(scale * q[b,h,i,:] . k[b,h,j,:] + mask[b,h,i,j]) v[b,h,j,:]
// q [B,H,Sq,D], k [B,H,Sk,D] (not transposed), v [B,H,Sk,Dv], y [B,H,Sq,Dv]. The B and H dims of
// q, k, v broadcast (each 1 or y's); mask (optional, additive) broadcasts numpy-style to
// [B,H,Sq,Sk]. A row whose scores are all -inf gives NaN, as Softmax does.
Status attention(float scale, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, Tensor& y);

}  // namespace kestrel::kernels::ref
