// Schemas of the signal ops: DFT (opset 20 form: dft_length and axis as inputs 1 and 2), STFT,
// HannWindow / HammingWindow / BlackmanWindow and MelWeightMatrix.
#include "core/str_util.h"
#include "ir/onnx_types.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

constexpr uint64_t kInput0Value = uint64_t{1} << 0;
constexpr uint64_t kInput1Value = uint64_t{1} << 1;
constexpr uint64_t kInput2Value = uint64_t{1} << 2;
constexpr uint64_t kInput3Value = uint64_t{1} << 3;

bool is_int_index(DType t) {
  return t == DType::kI32 || t == DType::kI64;
}

// One integer from a scalar (or one-element) input whose value is known; nullopt if unknown.
core::Result<std::optional<int64_t>> scalar_int(const InferContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return std::optional<int64_t>{};
  DType t = ctx.input_dtype(i);
  if (t != DType::kUndefined && !is_int_index(t))
    return ctx.fail(what, " (input ", i, ") must be int32 or int64, is ", core::dtype_name(t));
  const Shape& s = ctx.input_shape(i);
  if (s.rank_known() && (s.rank() > 1 || (s.fully_known() && s.num_elements() != 1)))
    return ctx.fail(what, " (input ", i, ") must be a scalar, has shape ", s.to_string());
  auto v = input_ints(ctx, i);
  if (!v) return std::optional<int64_t>{};
  if (v->size() != 1) return ctx.fail(what, " (input ", i, ") must hold one value, has ", v->size());
  return std::optional<int64_t>((*v)[0]);
}

core::Result<DType> output_datatype(const InferContext& ctx, bool allow_bool) {
  KESTREL_ASSIGN_OR_RETURN(int64_t code, ctx.attr_int("output_datatype", 1));
  DType t = dtype_from_onnx(code);
  if (t == DType::kUndefined || t == DType::kString || (t == DType::kBool && !allow_bool))
    return core::unsupported(core::str_cat(ctx.node().describe(), ": output_datatype ", code, " is not supported"));
  return t;
}

Status infer_dft(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t inverse, ctx.attr_int("inverse", 0));
  KESTREL_ASSIGN_OR_RETURN(int64_t onesided, ctx.attr_int("onesided", 0));
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  const DType dtype = ctx.input_dtype(0);
  const Shape& x = ctx.input_shape(0);
  KESTREL_ASSIGN_OR_RETURN(std::optional<int64_t> length, scalar_int(ctx, 1, "dft_length"));
  KESTREL_ASSIGN_OR_RETURN(std::optional<int64_t> axis, scalar_int(ctx, 2, "axis"));
  if (ctx.has_input(2) && ctx.input_dtype(2) != DType::kI64 && ctx.input_dtype(2) != DType::kUndefined)
    return ctx.fail("axis (input 2) must be int64");
  if (!ctx.has_input(2)) axis = -2;
  if (length && *length < 1) return ctx.fail("dft_length must be >= 1, is ", *length);
  if (!x.rank_known()) {
    ctx.set_output(0, dtype, Shape::unknown_rank());
    return Status::ok();
  }
  const int64_t rank = x.rank();
  if (rank < 2) return ctx.fail("input must be [..., 1 or 2], has shape ", x.to_string());
  const Dim& last = x[rank - 1];
  if (last.known() && last.value != 1 && last.value != 2)
    return ctx.fail("last dimension must be 1 (real) or 2 (complex), is ", last.value);
  const bool irfft = onesided && inverse;
  if (last.known() && onesided && !inverse && last.value == 2)
    return ctx.fail("a one-sided forward DFT needs a real input ([..., 1])");
  if (last.known() && irfft && last.value == 1)
    return ctx.fail("a one-sided inverse DFT needs a complex input ([..., 2])");
  Shape out = x;
  out[rank - 1] = Dim(irfft ? 1 : 2);
  if (!axis) {
    for (int64_t d = 0; d < rank - 1; ++d) out[d] = Dim::unknown();
    ctx.set_output(0, dtype, std::move(out));
    return Status::ok();
  }
  int64_t a = *axis;
  if (a < -rank || a > rank - 2 || a == -1)
    return ctx.fail("axis ", a, " is out of range for rank ", rank, " (the last dimension holds real/imaginary parts)");
  if (a < 0) a += rank;
  const Dim& n = x[a];
  Dim len = length ? Dim(*length) : Dim::unknown();
  if (!ctx.has_input(1) && n.known()) len = Dim(irfft ? 2 * (n.value - 1) : n.value);
  if (!ctx.has_input(1) && irfft && n.known() && n.value < 2)
    return ctx.fail("a one-sided inverse DFT of ", n.value, " bins needs dft_length");
  if (onesided && !inverse && len.known()) len = Dim(len.value / 2 + 1);
  out[a] = len;
  ctx.set_output(0, dtype, std::move(out));
  return Status::ok();
}

Status infer_stft(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t onesided, ctx.attr_int("onesided", 1));
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  const DType dtype = ctx.input_dtype(0);
  KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 0, 3));
  const Shape& s = ctx.input_shape(0);
  if (s.rank_known() && s[2].known() && s[2].value != 1 && s[2].value != 2)
    return ctx.fail("signal must be [batch, length, 1 or 2], has shape ", s.to_string());
  if (s.rank_known() && s[2].known() && s[2].value == 2 && onesided)
    return ctx.fail("a one-sided STFT needs a real signal ([batch, length, 1])");
  KESTREL_ASSIGN_OR_RETURN(std::optional<int64_t> step, scalar_int(ctx, 1, "frame_step"));
  KESTREL_ASSIGN_OR_RETURN(std::optional<int64_t> frame_length, scalar_int(ctx, 3, "frame_length"));
  if (step && *step < 1) return ctx.fail("frame_step must be >= 1, is ", *step);
  Dim len = frame_length ? Dim(*frame_length) : Dim::unknown();
  if (ctx.has_input(2)) {
    if (ctx.input_dtype(2) != dtype && ctx.input_dtype(2) != DType::kUndefined)
      return ctx.fail("window (input 2) must have the signal's dtype");
    KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 2, 1));
    const Shape& w = ctx.input_shape(2);
    if (w.rank_known() && w[0].known()) {
      if (len.known() && len.value != w[0].value)
        return ctx.fail("window has ", w[0].value, " samples but frame_length is ", len.value);
      len = w[0];
    }
  } else if (!ctx.has_input(3)) {
    return ctx.fail("needs a window or a frame_length");
  }
  if (len.known() && len.value < 1) return ctx.fail("frame_length must be >= 1, is ", len.value);
  Dim frames = Dim::unknown();
  if (s.rank_known() && s[1].known() && len.known() && step) {
    if (len.value > s[1].value)
      return ctx.fail("frame_length ", len.value, " is longer than the signal (", s[1].value, ")");
    frames = Dim((s[1].value - len.value) / *step + 1);
  }
  Dim bins = len.known() ? Dim(onesided ? len.value / 2 + 1 : len.value) : Dim::unknown();
  ctx.set_output(0, dtype, Shape(std::vector<Dim>{s.rank_known() ? s[0] : Dim::unknown(), frames, bins, Dim(2)}));
  return Status::ok();
}

Status infer_window(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t periodic, ctx.attr_int("periodic", 1));
  (void)periodic;
  KESTREL_ASSIGN_OR_RETURN(DType t, output_datatype(ctx, false));
  KESTREL_ASSIGN_OR_RETURN(std::optional<int64_t> size, scalar_int(ctx, 0, "size"));
  if (size && *size < 0) return ctx.fail("size must be >= 0, is ", *size);
  ctx.set_output(0, t, Shape(std::vector<Dim>{size ? Dim(*size) : Dim::unknown()}));
  return Status::ok();
}

Status infer_mel_weight_matrix(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(DType t, output_datatype(ctx, false));
  KESTREL_ASSIGN_OR_RETURN(std::optional<int64_t> bins, scalar_int(ctx, 0, "num_mel_bins"));
  KESTREL_ASSIGN_OR_RETURN(std::optional<int64_t> length, scalar_int(ctx, 1, "dft_length"));
  KESTREL_ASSIGN_OR_RETURN(std::optional<int64_t> rate, scalar_int(ctx, 2, "sample_rate"));
  (void)rate;
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 3));
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 4));
  if (bins && *bins < 1) return ctx.fail("num_mel_bins must be >= 1, is ", *bins);
  if (length && *length < 1) return ctx.fail("dft_length must be >= 1, is ", *length);
  ctx.set_output(
      0, t,
      Shape(std::vector<Dim>{length ? Dim(*length / 2 + 1) : Dim::unknown(), bins ? Dim(*bins) : Dim::unknown()}));
  return Status::ok();
}

}  // namespace

void register_signal_ops(OpRegistry& r) {
  add_op(r, "DFT", 1, 3, 1, 1, infer_dft,
         "discrete Fourier transform along axis (input 2); inverse, one-sided (RFFT / IRFFT), dft_length",
         kInput1Value | kInput2Value);
  add_op(r, "STFT", 2, 4, 1, 1, infer_stft, "short-time Fourier transform of [batch, length, 1|2] signals",
         kInput1Value | kInput3Value);
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    add_op(r, op, 1, 1, 1, 1, infer_window, "cosine window of length `size` (periodic or symmetric)", kInput0Value);
  add_op(r, "MelWeightMatrix", 5, 5, 1, 1, infer_mel_weight_matrix,
         "[dft_length/2+1, num_mel_bins] triangular mel filter bank", kInput0Value | kInput1Value);
}

}  // namespace kestrel::ir
