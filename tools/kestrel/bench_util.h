// Pure helpers of `kestrel bench` (statistics, FLOP counts, JSON text, memory readings), apart
// from the command so that tests can check them directly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace kestrel::cli {

// Percentile p in [0, 1] of `sorted` (ascending), interpolating linearly between ranks (numpy's
// default); 0 for an empty list.
double percentile(const std::vector<double>& sorted, double p);

// Floating-point operations (2 per multiply-add) of one call of an op, from its input and output
// shapes (an empty shape vector for an absent input); 0 when the op is not one whose FLOPs are
// counted (Conv, ConvTranspose, Gemm, MatMul and their fused or quantized forms).
double op_flops(std::string_view op_type, const std::vector<std::vector<int64_t>>& input_dims,
                const std::vector<std::vector<int64_t>>& output_dims);
// op_flops for a node. A kestrel.FusedConv with a MaxPool computes its conv over the unpooled plane, so its FLOPs
// follow from the conv's own output (from X, W and the conv window), not from the pooled Y; 0 if that fails.
double node_flops(const ir::Node& n, const std::vector<std::vector<int64_t>>& input_dims,
                  std::vector<std::vector<int64_t>> output_dims);

// `s` as a JSON string literal, quotes included.
std::string json_string(std::string_view s);
// A finite double as JSON (non-finite values become null).
std::string json_number(double v);

// Peak resident set size of this process in bytes (VmHWM, else getrusage); 0 if unknown.
uint64_t peak_rss_bytes();

}  // namespace kestrel::cli
