// Kernel bindings for the data-rearranging ops (and inference-time Dropout): node attributes and
// shape-like inputs -> reference kernel parameters.
#include "kernels/reference/transform.h"

#include "kernels/cpu/transform/concat.h"
#include "kernels/cpu/transform/transpose.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kernels/reference/data_movement.h"
#include "runtime/kernel.h"
#include "runtime/ops/run_key.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

// An optional int input's values (nullopt when the input is absent).
Result<std::optional<std::vector<int64_t>>> optional_ints(const KernelContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return std::optional<std::vector<int64_t>>();
  KESTREL_ASSIGN_OR_RETURN(auto v, ref::read_indices(ctx.input(i), what));
  return std::optional<std::vector<int64_t>>(std::move(v));
}

Result<std::unique_ptr<OpKernel>> make_transpose(const KernelCreateInfo& info) {
  KESTREL_ASSIGN_OR_RETURN(auto perm, info.node.attr_ints("perm", std::vector<int64_t>{}));
  if (!info.options.reference_only) {
    return make_kernel(
        [perm](KernelContext& ctx) -> Status {
          if (kernels::cpu::transpose_fast(ctx.input(0), perm, ctx.output(0), ctx.pool())) return Status::ok();
          return ref::transpose(ctx.input(0), perm, ctx.output(0));
        },
        "transpose.blocked");
  }
  return make_kernel([perm](KernelContext& ctx) { return ref::transpose(ctx.input(0), perm, ctx.output(0)); });
}

Result<std::unique_ptr<OpKernel>> make_concat(const KernelCreateInfo& info) {
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, info.node.attr_int("axis"));
  const bool fast = !info.options.reference_only;
  // xs only grows: no allocation per run.
  auto kernel = [axis, fast, xs = std::vector<const Tensor*>()](KernelContext& ctx) mutable -> Status {
    xs.clear();
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) return core::invalid_argument("Concat: an input is missing");
      xs.push_back(&ctx.input(i));
    }
    if (fast && kernels::cpu::concat_fast(xs, axis, ctx.output(0), ctx.pool())) return Status::ok();
    return ref::concat(xs, axis, ctx.output(0));
  };
  if (fast) return make_kernel(std::move(kernel), "concat.memcpy");
  return make_kernel(std::move(kernel));
}

Result<std::unique_ptr<OpKernel>> make_split(const KernelCreateInfo& info) {
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, info.node.attr_int("axis", 0));
  std::optional<int64_t> num_outputs;
  if (info.node.has_attr("num_outputs")) {
    KESTREL_ASSIGN_OR_RETURN(int64_t n, info.node.attr_int("num_outputs"));
    num_outputs = n;
  }
  // The sizes depend on x's shape and the split input only; ys only grows.
  struct Cache {
    RunKey key;
    int64_t axis = 0;
    std::vector<int64_t> sizes;
    std::vector<Tensor*> ys;
  };
  return make_kernel([axis, num_outputs, c = Cache()](KernelContext& ctx) mutable -> Status {
    const Tensor& x = ctx.input(0);
    c.key.begin().add_dims(x.dims()).add_values(ctx.input_or_null(1)).add(static_cast<int64_t>(ctx.num_outputs()));
    if (!c.key.same()) {
      KESTREL_ASSIGN_OR_RETURN(c.axis, core::normalize_axis(axis, x.rank(), "Split axis"));
      KESTREL_ASSIGN_OR_RETURN(auto split, optional_ints(ctx, 1, "split"));
      KESTREL_ASSIGN_OR_RETURN(
          c.sizes, ref::split_sizes(x.dim(c.axis), split, num_outputs, static_cast<int64_t>(ctx.num_outputs())));
      c.key.commit();
    }
    const int64_t a = c.axis;
    c.ys.clear();
    for (size_t o = 0; o < ctx.num_outputs(); ++o) {
      Tensor& y = ctx.output(o);
      // Planned outputs already have their shape (ref::split checks the dims other than the axis).
      if (!y.defined() || y.rank() != x.rank() || y.dim(a) != c.sizes[o]) {
        core::Dims dims = x.dims();
        dims[static_cast<size_t>(a)] = c.sizes[o];
        if (!y.defined()) KESTREL_RETURN_IF_ERROR(ctx.allocate_output(o, dims));
        KESTREL_RETURN_IF_ERROR(ref::check_output(y, dims, x.dtype(), "Split"));
      }
      c.ys.push_back(&y);
    }
    return ref::split(x, a, c.ys);
  });
}

// Slice as a strided copy; false when the output does not have the sliced shape (the reference
// kernel then reports it).
bool slice_fast(const Tensor& x, const std::vector<ref::SliceAxis>& spec, Tensor& y, core::ThreadPool* pool) {
  constexpr size_t kMaxRank = 16;
  const size_t rank = spec.size();
  if (static_cast<int64_t>(rank) != x.rank() || y.rank() != x.rank() || rank > kMaxRank) return false;
  int64_t in_strides[kMaxRank], strides[kMaxRank];
  int64_t acc = 1;
  for (size_t d = rank; d-- > 0;) {
    in_strides[d] = acc;
    acc *= x.dims()[d];
  }
  int64_t base = 0;
  bool empty = false;
  for (size_t d = 0; d < rank; ++d) {
    if (y.dims()[d] != spec[d].count) return false;
    empty |= spec[d].count == 0;
    base += spec[d].start * in_strides[d];
    strides[d] = spec[d].count > 1 ? spec[d].step * in_strides[d] : 0;
  }
  if (empty) return true;
  return kernels::cpu::strided_copy_fast(x, base, std::span<const int64_t>(strides, rank), y, pool);
}

Result<std::unique_ptr<OpKernel>> make_slice(const KernelCreateInfo& info) {
  const bool fast = !info.options.reference_only;
  // The resolved ranges depend on x's shape and the starts / ends / axes / steps values only: they
  // are resolved again when those change.
  struct Cache {
    RunKey key;
    std::vector<ref::SliceAxis> spec;
  };
  return make_kernel(
      [fast, c = Cache()](KernelContext& ctx) mutable -> Status {
        c.key.begin().add_dims(ctx.input(0).dims());
        for (size_t i = 1; i <= 4; ++i) c.key.add_values(ctx.input_or_null(i));
        if (!c.key.same()) {
          KESTREL_ASSIGN_OR_RETURN(auto starts, ref::read_indices(ctx.input(1), "starts"));
          KESTREL_ASSIGN_OR_RETURN(auto ends, ref::read_indices(ctx.input(2), "ends"));
          KESTREL_ASSIGN_OR_RETURN(auto axes, optional_ints(ctx, 3, "axes"));
          KESTREL_ASSIGN_OR_RETURN(auto steps, optional_ints(ctx, 4, "steps"));
          static const std::vector<int64_t> kNone;
          KESTREL_ASSIGN_OR_RETURN(c.spec, ref::resolve_slice(ctx.input(0).dims(), starts, ends, axes ? *axes : kNone,
                                                              steps ? *steps : kNone));
          c.key.commit();
        }
        if (fast && slice_fast(ctx.input(0), c.spec, ctx.output(0), ctx.pool())) return Status::ok();
        return ref::slice(ctx.input(0), c.spec, ctx.output(0));
      },
      fast ? "slice.strided" : "reference");
}

Result<std::unique_ptr<OpKernel>> make_tile(const KernelCreateInfo&) {
  return make_kernel([](KernelContext& ctx) -> Status {
    KESTREL_ASSIGN_OR_RETURN(auto reps, ref::read_indices(ctx.input(1), "repeats"));
    return ref::tile(ctx.input(0), reps, ctx.output(0));
  });
}

Result<std::unique_ptr<OpKernel>> make_pad(const KernelCreateInfo& info) {
  KESTREL_ASSIGN_OR_RETURN(std::string m, info.node.attr_string("mode", std::string("constant")));
  ref::PadMode mode;
  if (m == "constant")
    mode = ref::PadMode::kConstant;
  else if (m == "reflect")
    mode = ref::PadMode::kReflect;
  else if (m == "edge")
    mode = ref::PadMode::kEdge;
  else if (m == "wrap")
    mode = ref::PadMode::kWrap;
  else
    return info.fail("mode must be constant, reflect, edge or wrap, got '", m, "'");
  return make_kernel([mode](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    KESTREL_ASSIGN_OR_RETURN(auto pads, ref::read_indices(ctx.input(1), "pads"));
    KESTREL_ASSIGN_OR_RETURN(auto axes, optional_ints(ctx, 3, "axes"));
    KESTREL_ASSIGN_OR_RETURN(auto full, ref::full_pads(x.rank(), pads, std::move(axes)));
    const Tensor* value = ctx.input_or_null(2);
    // An empty constant_value tensor means the default (zero).
    if (value && value->num_elements() == 0) value = nullptr;
    return ref::pad(x, full, mode, value, ctx.output(0));
  });
}

Result<std::unique_ptr<OpKernel>> make_depth_to_space(const KernelCreateInfo& info) {
  KESTREL_ASSIGN_OR_RETURN(int64_t b, info.node.attr_int("blocksize"));
  KESTREL_ASSIGN_OR_RETURN(std::string mode, info.node.attr_string("mode", std::string("DCR")));
  if (mode != "DCR" && mode != "CRD") return info.fail("mode must be DCR or CRD, got '", mode, "'");
  const bool crd = mode == "CRD";
  return make_kernel([b, crd](KernelContext& ctx) { return ref::depth_to_space(ctx.input(0), b, crd, ctx.output(0)); });
}

Result<std::unique_ptr<OpKernel>> make_space_to_depth(const KernelCreateInfo& info) {
  KESTREL_ASSIGN_OR_RETURN(int64_t b, info.node.attr_int("blocksize"));
  return make_kernel([b](KernelContext& ctx) { return ref::space_to_depth(ctx.input(0), b, ctx.output(0)); });
}

Result<std::unique_ptr<OpKernel>> make_trilu(const KernelCreateInfo& info) {
  KESTREL_ASSIGN_OR_RETURN(int64_t upper, info.node.attr_int("upper", 1));
  return make_kernel([upper](KernelContext& ctx) -> Status {
    int64_t k = 0;
    if (ctx.has_input(1)) {
      KESTREL_ASSIGN_OR_RETURN(auto kv, ref::read_indices(ctx.input(1), "k"));
      if (kv.size() != 1) return core::invalid_argument("Trilu: k must be a scalar");
      k = kv[0];
    }
    return ref::trilu(ctx.input(0), k, upper != 0, ctx.output(0));
  });
}

// Inference-time Dropout: the identity, with an all-true mask. Training mode draws random masks,
// which inference does not do; ratio 0 is the exception (nothing is dropped).
Result<std::unique_ptr<OpKernel>> make_dropout(const KernelCreateInfo&) {
  return make_kernel([](KernelContext& ctx) -> Status {
    if (const Tensor* t = ctx.input_or_null(2)) {
      if (t->dtype() != core::DType::kBool || t->num_elements() != 1)
        return core::invalid_argument("Dropout: training_mode must be a bool scalar");
      if (t->data<bool>()[0]) {
        const Tensor* ratio = ctx.input_or_null(1);
        const double r = ratio && ratio->num_elements() == 1 ? ratio->element_as_double(0) : 0.5;
        if (r != 0.0) return core::unsupported("Dropout: training mode (random masking) is not supported");
      }
    }
    KESTREL_RETURN_IF_ERROR(core::copy_tensor_data(ctx.input(0), ctx.output(0)));
    if (ctx.num_outputs() > 1) {
      Tensor& mask = ctx.output(1);
      if (mask.dtype() != core::DType::kBool || mask.num_elements() != ctx.input(0).num_elements())
        return core::internal_error("Dropout: mask output has the wrong type");
      std::fill_n(mask.data<bool>(), mask.num_elements(), true);
    }
    return Status::ok();
  });
}

}  // namespace

void register_transform_kernels(KernelRegistry& r) {
  r.add("Transpose", make_transpose);
  r.add("Concat", make_concat);
  r.add("Split", make_split);
  r.add("Slice", make_slice);
  r.add("Tile", make_tile);
  r.add("Pad", make_pad);
  r.add("DepthToSpace", make_depth_to_space);
  r.add("SpaceToDepth", make_space_to_depth);
  r.add("Trilu", make_trilu);
  r.add("Dropout", make_dropout);
}

}  // namespace kestrel::runtime
