// `kestrel quantize`: int8 post-training quantization. Calibrates the float model on a folder of
// samples, writes a QDQ model as .kst (after the -O2 pipeline), and prints the per-layer report,
// the file sizes and the agreement with the float model on the held-back samples.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "api/convert.h"
#include "cli_util.h"
#include "commands.h"
#include "core/str_util.h"
#include "format/kst_loader.h"
#include "format/kst_writer.h"
#include "model_file.h"
#include "passes/pass.h"
#include "quant/data/calib_data.h"
#include "quant/graph_runner.h"
#include "quant/quantize.h"
#include "runtime/kernel.h"
#include "runtime/session.h"

namespace kestrel::cli {

namespace {

using core::str_cat;

struct QuantizeOptions {
  std::string input, output, calib, method = "percentile", resize, layout = "nchw", labels;
  double percentile = 99.999, target_cosine = 0, holdout = 0.2;
  bool per_tensor = false, bgr = false, quiet = false, f32_float_weights = false, f32_float_math = false;
  std::vector<std::string> keep_float;
  std::vector<float> mean, std;
  int threads = 1;
};

template <class T>
T value_or_throw(core::Result<T> r) {
  api::throw_if_error(r.status());
  return std::move(r).value();
}

// A progress bar on a terminal; otherwise a line at each tenth.
quant::ProgressFn make_progress(bool quiet) {
  if (quiet) return {};
  const bool tty = isatty(fileno(stderr));
  auto last = std::make_shared<std::string>();
  return [tty, last](std::string_view phase, size_t done, size_t total) {
    if (tty) {
      const int width = 30;
      const int filled = total ? static_cast<int>(width * done / total) : width;
      std::fprintf(stderr, "\r\033[K%.*s [%s%s] %zu/%zu", static_cast<int>(phase.size()), phase.data(),
                   std::string(static_cast<size_t>(filled), '#').c_str(),
                   std::string(static_cast<size_t>(width - filled), '.').c_str(), done, total);
      if (done >= total) std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
      return;
    }
    const size_t step = std::max<size_t>(1, (total + 9) / 10);
    if (done == total || done % step == 0) {
      const std::string line = str_cat(phase, ": ", done, "/", total);
      if (line != *last) std::fprintf(stderr, "%s\n", line.c_str());
      *last = line;
    }
  };
}

std::vector<int> read_labels(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail(ErrorCode::kIoError, str_cat("cannot open labels file '", path, "'"));
  std::vector<int> labels;
  std::string tok;
  while (f >> tok) {
    try {
      labels.push_back(std::stoi(tok));
    } catch (const std::exception&) {
      fail(ErrorCode::kInvalidArgument, str_cat(path, ": '", tok, "' is not an integer label"));
    }
  }
  return labels;
}

// Share of the samples whose first output's argmax is the label.
double accuracy(const std::vector<std::vector<core::Tensor>>& outs, const std::vector<int>& labels, size_t first) {
  size_t right = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    const core::Tensor& t = outs[i][0];
    if (t.dtype() != core::DType::kF32 || t.num_elements() == 0) continue;
    const float* p = t.data<float>();
    right += std::max_element(p, p + t.num_elements()) - p == labels[first + i];
  }
  return outs.empty() ? 0 : static_cast<double>(right) / static_cast<double>(outs.size());
}

void quantize(const QuantizeOptions& o) {
  quant::PtqOptions po;
  if (!quant::parse_calib_method(o.method, &po.calib.method))
    fail(ErrorCode::kInvalidArgument, str_cat("--method: unknown '", o.method, "' (minmax, kl, percentile, ema)"));
  po.calib.percentile = o.percentile;
  po.qdq.per_tensor = o.per_tensor;
  for (const std::string& k : o.keep_float) {
    std::stringstream ss(k);
    std::string name;
    while (std::getline(ss, name, ','))
      if (!name.empty()) po.qdq.keep_float.insert(name);
  }
  po.target_cosine = o.target_cosine;
  po.fp16_float_weights = !o.f32_float_weights;
  po.bf16_float_layers = !o.f32_float_math;
  po.num_threads = o.threads;
  po.progress = make_progress(o.quiet);
  if (o.layout != "nchw" && o.layout != "nhwc")
    fail(ErrorCode::kInvalidArgument, str_cat("--layout: '", o.layout, "' (nchw or nhwc)"));
  quant::ImageOptions io;
  io.nhwc = o.layout == "nhwc";
  io.bgr = o.bgr;
  io.mean = o.mean;
  io.std = o.std;
  if (!o.resize.empty()) {
    std::vector<int64_t> hw = parse_dims(o.resize, "--resize");
    if (hw.size() != 2 || hw[0] <= 0 || hw[1] <= 0)
      fail(ErrorCode::kInvalidArgument, "--resize takes HxW, e.g. 224x224");
    io.height = hw[0], io.width = hw[1];
  }

  runtime::LoadedModel m = load_unoptimized(o.input);
  ir::Graph& g = *m.graph;
  api::throw_if_error(quant::prepare_for_quantization(g).with_context(o.input));
  for (const std::string& k : po.qdq.keep_float) {
    bool found = false;
    for (const ir::Node* n : g.nodes()) found |= n->name() == k;
    if (!found) fail(ErrorCode::kInvalidArgument, str_cat("--keep-float: no node named '", k, "' (after -O1)"));
  }

  quant::CalibrationSet data = value_or_throw(quant::load_calibration_set(o.calib, g, io));
  const size_t n = data.samples.size();
  size_t n_hold = static_cast<size_t>(std::floor(static_cast<double>(n) * o.holdout));
  if (o.holdout > 0 && n_hold == 0 && n >= 2) n_hold = 1;
  if (n_hold >= n)
    fail(ErrorCode::kInvalidArgument,
         str_cat(o.calib, ": ", n, " samples leave none for calibration with --holdout ", o.holdout));
  std::vector<quant::Sample> calib(data.samples.begin(), data.samples.end() - static_cast<std::ptrdiff_t>(n_hold));
  std::vector<quant::Sample> hold(data.samples.end() - static_cast<std::ptrdiff_t>(n_hold), data.samples.end());
  std::vector<int> labels;
  if (!o.labels.empty()) {
    labels = read_labels(o.labels);
    if (labels.size() != n)
      fail(ErrorCode::kInvalidArgument,
           str_cat(o.labels, ": ", labels.size(), " labels for ", n, " calibration samples"));
  }

  quant::PtqResult r = value_or_throw(quant::quantize_ptq(g, calib, hold, po));

  format::KstWriteOptions wo;
  wo.metadata["convert.opt_level"] = "2";
  const std::string float_kst = value_or_throw(quant::optimized_kst(g, wo));
  wo.metadata["quantize.method"] = quant::calib_method_name(po.calib.method);
  wo.metadata["quantize.weights"] = o.per_tensor ? "int8 per-tensor symmetric" : "int8 per-channel symmetric";
  wo.metadata["quantize.activations"] = "u8 per-tensor asymmetric";
  wo.metadata["quantize.calibration_samples"] = std::to_string(calib.size());
  wo.metadata["quantize.float_layer_weights"] = po.fp16_float_weights ? "f16" : "f32";
  format::KstWriteOptions int8_wo = quant::int8_kst_options(po);
  for (const auto& [key, value] : wo.metadata) int8_wo.metadata[key] = value;
  const std::string int8_kst = value_or_throw(quant::optimized_kst(*r.graph, int8_wo));
  {
    std::ofstream f(o.output + ".tmp", std::ios::binary);
    f.write(int8_kst.data(), static_cast<std::streamsize>(int8_kst.size()));
    f.close();
    if (!f || std::rename((o.output + ".tmp").c_str(), o.output.c_str()) != 0) {
      std::remove((o.output + ".tmp").c_str());
      fail(ErrorCode::kIoError, str_cat("cannot write '", o.output, "'"));
    }
  }

  // Agreement of the written file with the float model on the held-back samples.
  quant::Agreement agree;
  double float_acc = -1, int8_acc = -1;
  if (!hold.empty()) {
    format::KstModel written = value_or_throw(format::load_kst_file(o.output));
    auto fo = value_or_throw(quant::run_model(g, hold, o.threads));
    auto qo = value_or_throw(quant::run_model(*written.graph, hold, o.threads));
    agree = quant::compare_outputs(fo, qo);
    if (!labels.empty()) {
      float_acc = accuracy(fo, labels, n - n_hold);
      int8_acc = accuracy(qo, labels, n - n_hold);
    }
  }
  if (o.quiet) return;

  std::printf("%s -> %s: int8 QDQ (weights %s, activations u8 per-tensor asymmetric), calibration %s", o.input.c_str(),
              o.output.c_str(), o.per_tensor ? "per-tensor" : "per-channel", quant::calib_method_name(po.calib.method));
  if (po.calib.method == quant::CalibMethod::kPercentile) std::printf(" %g", o.percentile);
  std::printf(" on %zu samples, %zu held out\n", calib.size(), n_hold);
  std::printf("quantized ops: %zu, weights: %d", r.qdq.nodes.size(), r.qdq.quantized_weights);
  if (!po.qdq.keep_float.empty() || !r.auto_float.empty()) {
    std::set<std::string> kept(po.qdq.keep_float.begin(), po.qdq.keep_float.end());
    kept.insert(r.auto_float.begin(), r.auto_float.end());
    std::printf(", kept in float: %s", core::join(kept, ", ").c_str());
  }
  std::printf("\n\nper-layer report (each quantized tensor vs float, over the calibration samples):\n");
  size_t w = 6;
  for (const quant::LayerStat& l : r.layers) w = std::max(w, l.tensor.size());
  w = std::min<size_t>(w, 48);
  std::printf("  %-*s %-18s %9s %8s\n", static_cast<int>(w), "tensor", "quantized after", "cosine", "SNR dB");
  for (const quant::LayerStat& l : r.layers)
    std::printf("  %-*s %-18s %9.5f %8.2f\n", static_cast<int>(w), l.tensor.c_str(), l.op.c_str(), l.cosine, l.snr_db);
  if (!r.auto_float.empty())
    std::printf("\nauto (--target-cosine %g): %zu layers kept in float, held-out cosine %.5f\n", o.target_cosine,
                r.auto_float.size(), r.holdout_cosine);
  std::printf("\nsize: float .kst (-O2) %s -> int8 .kst %s (%.1f%%)\n", format_bytes(float_kst.size()).c_str(),
              format_bytes(int8_kst.size()).c_str(),
              100.0 * static_cast<double>(int8_kst.size()) / static_cast<double>(float_kst.size()));
  if (hold.empty()) {
    std::printf("output agreement: no held-out samples (--holdout 0)\n");
    return;
  }
  std::printf("output agreement with float on %zu held-out samples: cosine %.5f (worst sample %.5f), max abs err %.4g",
              hold.size(), agree.cosine, agree.min_cosine, agree.max_abs_err);
  if (agree.top1_total > 0)
    std::printf(", top-1 agreement %lld/%lld", static_cast<long long>(agree.top1_match),
                static_cast<long long>(agree.top1_total));
  std::printf("\n");
  if (float_acc >= 0)
    std::printf("accuracy on the held-out samples: float %.1f%%, int8 %.1f%%\n", 100 * float_acc, 100 * int8_acc);
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* sub = app.add_subcommand("quantize", "Int8 post-training quantization: calibrate and write a QDQ .kst");
  sub->footer(
      "Example: kestrel quantize model.onnx --calib calib/ --method kl -o model_int8.kst\n"
      "--calib: a folder of .npy files (one sample each), one subfolder per input name with matching file names,\n"
      "a folder of PNG/JPEG images (x = (pixel/255 - mean) / std), or one .npy whose first axis lists the samples.\n"
      "Files are taken in name order; the last --holdout share is never used for calibration.");
  sub->add_option("input", o->input, "Float model (.onnx)")->required();
  sub->add_option("-o,--output", o->output, "Output .kst file")->required();
  sub->add_option("--calib", o->calib, "Calibration data (folder or .npy file)")->required();
  sub->add_option("--method", o->method, "Calibration: minmax, kl, percentile, ema")->default_val("percentile");
  sub->add_option("--percentile", o->percentile, "Percentile for --method percentile")
      ->check(CLI::Range(50.0, 100.0))
      ->default_val(99.999);
  sub->add_flag("--per-tensor", o->per_tensor, "One weight scale per tensor (default: per output channel)");
  sub->add_flag("--f32-float-weights", o->f32_float_weights,
                "Store the weights of layers left in float as f32 (default: f16, widened at load)");
  sub->add_flag("--f32-float-math", o->f32_float_math,
                "Run the layers left in float in f32 (default: their 1x1 convs in bf16 on CPUs with AVX512_BF16)");
  sub->add_option("--keep-float", o->keep_float, "Nodes to leave in float: NODE,NODE,...");
  sub->add_option("--target-cosine", o->target_cosine,
                  "Keep the most sensitive layers in float until the held-out output cosine reaches this")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--holdout", o->holdout, "Share of the samples (the last files) held out for the comparison")
      ->check(CLI::Range(0.0, 0.9))
      ->default_val(0.2);
  sub->add_option("--labels", o->labels, "Integer class labels, one per sample in file order: prints accuracy");
  sub->add_option("--resize", o->resize, "Images: resize to HxW (default: the model input's size)");
  sub->add_option("--mean", o->mean, "Images: per-channel mean after scaling to [0,1]")->delimiter(',');
  sub->add_option("--std", o->std, "Images: per-channel std")->delimiter(',');
  sub->add_flag("--bgr", o->bgr, "Images: the model takes BGR channel order");
  sub->add_option("--layout", o->layout, "Images: model input layout, nchw or nhwc")->default_val("nchw");
  sub->add_option("-t,--threads", o->threads, "Threads for calibration runs")
      ->check(CLI::Range(1, 256))
      ->default_val(1);
  sub->add_flag("-q,--quiet", o->quiet, "Print nothing on success");
  sub->callback([o] { quantize(*o); });
}

}  // namespace kestrel::cli
