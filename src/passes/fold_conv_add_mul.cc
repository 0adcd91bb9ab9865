// Folds an Add / Sub / Mul of a per-channel (or scalar) f32 constant that follows a Conv into the
// conv's bias / weights: conv(x) * c = conv_{W*c, b*c}(x), conv(x) + c = conv_{W, b+c}(x). Only when
// the constant does not broadcast the conv output to a larger shape and the conv output has no
// other consumer.
#include "passes/fusion_util.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kestrel::passes {

namespace {

// Per-output-channel values of constant c applied to a conv output of rank `rank` with m
// channels, or empty if c is not of the [m,1,...,1] / [1,m,1,...] / scalar kind.
std::optional<std::vector<double>> per_channel(const ir::Value* c, int64_t rank, int64_t m) {
  auto data = f32_constant(c);
  if (!data) return std::nullopt;
  const core::Dims& d = c->constant().dims();
  const int64_t r = static_cast<int64_t>(d.size());
  if (r > rank) return std::nullopt;
  if (data->size() == 1) return std::vector<double>(static_cast<size_t>(m), (*data)[0]);
  // Aligned right: c's axis i is the output's axis rank - r + i; only the channel axis (1) may be > 1.
  for (int64_t i = 0; i < r; ++i) {
    const int64_t axis = rank - r + i;
    if (d[static_cast<size_t>(i)] != 1 && !(axis == 1 && d[static_cast<size_t>(i)] == m)) return std::nullopt;
  }
  if (static_cast<int64_t>(data->size()) != m) return std::nullopt;
  return data;
}

class FoldConvAddMul final : public Pass {
 public:
  const char* name() const override { return "fold-conv-add-mul"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    // Matched from the last node of the pattern, so only visited nodes are removed.
    for (ir::Node* op : g.nodes()) {
      if (!op->domain().empty() || op->num_inputs() != 2) continue;
      const bool mul = op->op_type() == "Mul", add = op->op_type() == "Add", sub = op->op_type() == "Sub";
      if (!mul && !add && !sub) continue;
      ir::Node* conv = nullptr;
      ir::Value* y = nullptr;
      for (size_t i = 0; i < 2 && !conv; ++i) {
        ir::Node* p = producer_is(op->input(i), "Conv");
        if (p && only_consumer(op->input(i), op) && !(sub && i == 1)) {
          conv = p;
          y = op->input(i);
        }
      }
      if (!conv || y->dtype() != core::DType::kF32) continue;
      ir::Value* c = other_input(op, y);
      auto w = f32_constant(conv->input(1));
      if (!c || !w || !y->shape().rank_known() || y->shape().rank() < 3) continue;
      const core::Dims wd = conv->input(1)->constant().dims();
      const int64_t m = wd[0];
      auto cv = per_channel(c, y->shape().rank(), m);
      if (!cv) continue;
      std::vector<double> b(static_cast<size_t>(m), 0.0);
      if (conv->input(2)) {
        auto bd = f32_constant(conv->input(2));
        if (!bd || static_cast<int64_t>(bd->size()) != m) continue;
        b = *bd;
      }
      if (mul) {
        const size_t per = w->size() / static_cast<size_t>(m);
        for (size_t i = 0; i < w->size(); ++i) (*w)[i] *= (*cv)[i / per];
        for (size_t i = 0; i < b.size(); ++i) b[i] *= (*cv)[i];
        conv->set_input(1, add_f32_constant(g, conv->input(1)->name() + "_scaled", *w, wd));
      } else {
        for (size_t i = 0; i < b.size(); ++i) b[i] += sub ? -(*cv)[i] : (*cv)[i];
      }
      ir::Value* bv = add_f32_constant(g, conv->name() + "_bias", b, {m});
      if (conv->num_inputs() > 2)
        conv->set_input(2, bv);
      else
        conv->add_input(bv);
      forward_value(g, op->output(0), y);
      KESTREL_RETURN_IF_ERROR(g.remove_node(op));
      ++stats.removed;
    }
    if (stats.changed()) g.remove_unused_values();
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_conv_add_mul() {
  return std::make_unique<FoldConvAddMul>();
}

}  // namespace kestrel::passes
