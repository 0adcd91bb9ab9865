// `kestrel bench`: latency statistics of Session::run, session-creation time, memory (arena, peak
// RSS, heap allocations per run), a per-op profile and a Chrome trace.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/convert.h"
#include "bench_util.h"
#include "cli_util.h"
#include "commands.h"
#include "core/cpu_features.h"
#include "core/str_util.h"
#include "runtime/session.h"
#include "testing/alloc_counter.h"

namespace kestrel::cli {

namespace {

using core::str_cat;
using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::vector<std::string> shapes;  // NAME=1x3x224x224
  int threads = 1;
  int warmup = 5;
  int iters = 30;
  double max_time = 0;  // seconds of timed runs after which to stop early (0: no limit)
  int opt_level = 2;
  std::string isa;
  std::string float_math;
  uint64_t seed = 0;
  bool reference = false;
  bool profile = false;
  bool json = false;
  int top = 25;
  std::string trace;
  std::string against;  // a second model timed in alternation with the first
};

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string shapes_string(std::span<const core::Tensor* const> ts) {
  std::vector<std::string> parts;
  for (const core::Tensor* t : ts) parts.push_back(t && t->defined() ? t->type_string() : "-");
  return core::join(parts, ", ");
}
std::string shapes_string(std::span<core::Tensor* const> ts) {
  std::vector<const core::Tensor*> c(ts.begin(), ts.end());
  return shapes_string(std::span<const core::Tensor* const>(c));
}

std::vector<std::vector<int64_t>> dims_of(std::span<const core::Tensor* const> ts) {
  std::vector<std::vector<int64_t>> r;
  for (const core::Tensor* t : ts) r.push_back(t && t->defined() ? t->dims() : std::vector<int64_t>{});
  return r;
}

// Per-node accumulation while profiling.
struct NodeProfile {
  std::string name, op, impl, inputs, outputs;
  double total_ms = 0;
  int64_t calls = 0;
  double flop = 0;  // per call
  uint64_t allocs = 0;
  bool seen = false;
};

struct TraceEvent {
  uint32_t node;
  int64_t start_ns, dur_ns;
};

// Collects per-node times (and trace events) from the executor's profiler hook. Allocation counts
// per node are the allocations since the previous kernel ended: the kernel's, plus whatever the
// executor did in between (nothing, for static shapes).
class Profiler {
 public:
  // The per-run vectors are reserved so that growing them is not counted as the first kernel's (or the run's)
  // allocations.
  Profiler(const ir::Graph& g, bool keep_events, size_t expected_events, size_t expected_runs)
      : keep_events_(keep_events) {
    for (const ir::Node* n : g.nodes()) {
      index_[n] = static_cast<uint32_t>(nodes_.size());
      NodeProfile p;
      p.name = n->name().empty() ? n->describe() : n->name();
      p.op = n->domain().empty() ? n->op_type() : n->domain() + "." + n->op_type();
      nodes_.push_back(std::move(p));
    }
    if (keep_events_) events_.reserve(expected_events);
    run_starts_.reserve(expected_runs);
    run_ends_.reserve(expected_runs);
  }

  void start_run(Clock::time_point t) {
    last_allocs_ = testing::alloc_count();
    run_starts_.push_back(t);
  }
  void end_run(Clock::time_point t) { run_ends_.push_back(t); }
  void set_recording(bool on) { recording_ = on; }

  void on_event(const runtime::Executor::ProfileEvent& e) {
    uint64_t allocs = testing::alloc_count() - last_allocs_;
    auto it = index_.find(&e.node);
    if (it != index_.end()) {
      NodeProfile& p = nodes_[it->second];
      if (!p.seen) {
        p.seen = true;
        p.impl = e.impl;
        p.inputs = shapes_string(e.inputs);
        p.outputs = shapes_string(e.outputs);
        const std::vector<const core::Tensor*> outs(e.outputs.begin(), e.outputs.end());
        p.flop = node_flops(e.node, dims_of(e.inputs), dims_of(outs));
      }
    }
    if (it != index_.end() && recording_) {
      NodeProfile& p = nodes_[it->second];
      p.total_ms += ms_between(e.start, e.end);
      ++p.calls;
      p.allocs += allocs;
      if (keep_events_)
        events_.push_back({it->second, std::chrono::duration_cast<std::chrono::nanoseconds>(e.start - origin_).count(),
                           std::chrono::duration_cast<std::chrono::nanoseconds>(e.end - e.start).count()});
    }
    last_allocs_ = testing::alloc_count();  // the bookkeeping above is not the next kernel's
  }

  void set_origin(Clock::time_point t) { origin_ = t; }
  Clock::time_point origin() const { return origin_; }
  const std::vector<NodeProfile>& nodes() const { return nodes_; }
  const std::vector<TraceEvent>& events() const { return events_; }
  const std::vector<Clock::time_point>& run_starts() const { return run_starts_; }
  const std::vector<Clock::time_point>& run_ends() const { return run_ends_; }

 private:
  bool keep_events_;
  bool recording_ = false;
  std::unordered_map<const ir::Node*, uint32_t> index_;
  std::vector<NodeProfile> nodes_;
  std::vector<TraceEvent> events_;
  std::vector<Clock::time_point> run_starts_, run_ends_;
  Clock::time_point origin_;
  uint64_t last_allocs_ = 0;
};

struct OpTypeProfile {
  std::string op;
  std::set<std::string> impls;
  int nodes = 0;
  int64_t calls = 0;
  double total_ms = 0, flop = 0;  // flop: summed over all calls
};

std::vector<OpTypeProfile> by_op_type(const std::vector<NodeProfile>& nodes) {
  std::map<std::string, OpTypeProfile> m;
  for (const NodeProfile& n : nodes) {
    if (!n.calls) continue;
    OpTypeProfile& o = m[n.op];
    o.op = n.op;
    o.impls.insert(n.impl);
    ++o.nodes;
    o.calls += n.calls;
    o.total_ms += n.total_ms;
    o.flop += n.flop * static_cast<double>(n.calls);
  }
  std::vector<OpTypeProfile> r;
  for (auto& [k, v] : m) r.push_back(std::move(v));
  std::stable_sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
  return r;
}

double gflops(double flop, double ms) {
  return flop > 0 && ms > 0 ? flop / (ms * 1e6) : 0;
}

std::string fit(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return "..." + s.substr(s.size() - (width - 3));  // the end of a node path says the most
}

void print_profile(const Profiler& prof, double wall_ms_total, int top) {
  std::vector<const NodeProfile*> nodes;
  double sum = 0;
  for (const NodeProfile& n : prof.nodes())
    if (n.calls) {
      nodes.push_back(&n);
      sum += n.total_ms;
    }
  std::stable_sort(nodes.begin(), nodes.end(), [](auto* a, auto* b) { return a->total_ms > b->total_ms; });
  auto share = [&](double ms) { return sum > 0 ? 100.0 * ms / sum : 0.0; };
  std::printf("\nprofile: kernels took %.3f ms of %.3f ms measured (%.1f%%)\n", sum, wall_ms_total,
              wall_ms_total > 0 ? 100.0 * sum / wall_ms_total : 0.0);

  std::printf("\n%-22s %6s %-24s %11s %7s %7s %10s %9s\n", "op type", "nodes", "impl", "total ms", "share", "calls",
              "ms/call", "GFLOP/s");
  for (const OpTypeProfile& o : by_op_type(prof.nodes())) {
    double g = gflops(o.flop, o.total_ms);
    std::string gs = g > 0 ? str_cat(static_cast<int64_t>(g * 100) / 100.0) : "";
    std::printf("%-22s %6d %-24s %11.3f %6.1f%% %7lld %10.4f %9s\n", fit(o.op, 22).c_str(), o.nodes,
                fit(core::join(o.impls, "+"), 24).c_str(), o.total_ms, share(o.total_ms),
                static_cast<long long>(o.calls), o.total_ms / static_cast<double>(o.calls), gs.c_str());
  }

  size_t shown = top > 0 ? std::min(nodes.size(), static_cast<size_t>(top)) : nodes.size();
  std::printf("\n%-40s %-16s %-18s %10s %7s %6s %9s %9s %7s  %s\n", "node", "op", "impl", "total ms", "share", "calls",
              "ms/call", "GFLOP/s", "allocs", "output");
  for (size_t i = 0; i < shown; ++i) {
    const NodeProfile& n = *nodes[i];
    double per_call = n.total_ms / static_cast<double>(n.calls);
    double g = gflops(n.flop, per_call);
    std::string gs = g > 0 ? str_cat(static_cast<int64_t>(g * 100) / 100.0) : "";
    double allocs = static_cast<double>(n.allocs) / static_cast<double>(n.calls);
    std::printf("%-40s %-16s %-18s %10.3f %6.1f%% %6lld %9.4f %9s %7.4g  %s\n", fit(n.name, 40).c_str(),
                fit(n.op, 16).c_str(), fit(n.impl, 18).c_str(), n.total_ms, share(n.total_ms),
                static_cast<long long>(n.calls), per_call, gs.c_str(), allocs, n.outputs.c_str());
  }
  if (shown < nodes.size()) std::printf("(%zu more nodes; --top 0 shows all)\n", nodes.size() - shown);
  std::printf("allocs: heap allocations per call, counted from the end of the previous kernel\n");
}

std::string profile_json(const Profiler& prof) {
  double sum = 0;
  for (const NodeProfile& n : prof.nodes()) sum += n.total_ms;
  auto share = [&](double ms) { return sum > 0 ? ms / sum : 0.0; };
  std::string r = ",\"op_types\":[";
  bool first = true;
  for (const OpTypeProfile& o : by_op_type(prof.nodes())) {
    r += str_cat(first ? "" : ",", "{\"op\":", json_string(o.op), ",\"nodes\":", o.nodes,
                 ",\"impls\":", json_string(core::join(o.impls, "+")), ",\"total_ms\":", json_number(o.total_ms),
                 ",\"share\":", json_number(share(o.total_ms)), ",\"calls\":", o.calls,
                 ",\"flop\":", json_number(o.flop), ",\"gflops\":", json_number(gflops(o.flop, o.total_ms)), "}");
    first = false;
  }
  r += "],\"ops\":[";
  first = true;
  for (const NodeProfile& n : prof.nodes()) {
    if (!n.calls) continue;
    double per_call = n.total_ms / static_cast<double>(n.calls);
    r += str_cat(first ? "" : ",", "{\"node\":", json_string(n.name), ",\"op\":", json_string(n.op),
                 ",\"impl\":", json_string(n.impl), ",\"total_ms\":", json_number(n.total_ms),
                 ",\"share\":", json_number(share(n.total_ms)), ",\"calls\":", n.calls,
                 ",\"flop\":", json_number(n.flop), ",\"gflops\":", json_number(gflops(n.flop, per_call)),
                 ",\"allocs_per_call\":", json_number(static_cast<double>(n.allocs) / static_cast<double>(n.calls)),
                 ",\"inputs\":", json_string(n.inputs), ",\"outputs\":", json_string(n.outputs), "}");
    first = false;
  }
  r += "]";
  return r;
}

void write_trace(std::ofstream& f, const std::string& path, const Profiler& prof, const std::string& model) {
  auto us = [](int64_t ns) { return str_cat(ns / 1000, ".", (ns % 1000) / 100, (ns % 100) / 10, ns % 10); };
  auto rel_ns = [&](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - prof.origin()).count();
  };
  f << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  f << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":"
    << json_string("kestrel bench " + model) << "}},\n";
  f << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"run\"}}";
  for (size_t i = 0; i < prof.run_starts().size() && i < prof.run_ends().size(); ++i) {
    int64_t a = rel_ns(prof.run_starts()[i]), b = rel_ns(prof.run_ends()[i]);
    f << ",\n{\"name\":\"run\",\"cat\":\"run\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":" << us(a)
      << ",\"dur\":" << us(b - a) << ",\"args\":{\"iteration\":" << i << "}}";
  }
  const auto& nodes = prof.nodes();
  for (const TraceEvent& e : prof.events()) {
    const NodeProfile& n = nodes[e.node];
    f << ",\n{\"name\":" << json_string(n.name) << ",\"cat\":" << json_string(n.op)
      << ",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":" << us(e.start_ns) << ",\"dur\":" << us(e.dur_ns)
      << ",\"args\":{\"op\":" << json_string(n.op) << ",\"impl\":" << json_string(n.impl)
      << ",\"inputs\":" << json_string(n.inputs) << ",\"outputs\":" << json_string(n.outputs) << "}}";
  }
  f << "\n]}\n";
  f.flush();
  if (!f) fail(ErrorCode::kIoError, str_cat("cannot write trace file '", path, "'"));
}

// A model opened for timing: its session, inputs (random unless given) and bound outputs, after the plan, the first
// run and the warm-up runs.
struct TimedModel {
  std::unique_ptr<runtime::Session> session;
  std::vector<TensorInfo> infos;
  ModelInputs feeds;
  std::vector<core::Tensor> inputs, outputs;
  std::vector<const core::Tensor*> input_ptrs;
  std::string path;
  double open_ms = 0, plan_ms = 0, first_run_ms = 0;

  std::span<const core::Tensor* const> in() const { return input_ptrs; }
  void check(const core::Status& st) const {
    if (!st.is_ok()) api::throw_if_error(st.with_context(str_cat(path, ": run failed")));
  }
  // One run; its milliseconds.
  double timed_run() {
    auto t0 = Clock::now();
    core::Status st = session->run(in(), outputs);
    auto t1 = Clock::now();
    check(st);
    return ms_between(t0, t1);
  }
};

std::unique_ptr<TimedModel> open_timed(const std::string& path, const BenchOptions& o,
                                       const runtime::SessionOptions& so) {
  auto m = std::make_unique<TimedModel>();
  m->path = path;
  auto t_open = Clock::now();
  auto opened = runtime::Session::open(path, so);
  api::throw_if_error(opened.status());
  m->session = std::move(opened).value();
  m->open_ms = ms_between(t_open, Clock::now());
  for (const runtime::IoInfo& io : m->session->inputs()) m->infos.push_back(api::to_public(io.name, io.type));
  m->feeds = make_inputs(m->infos, o.inputs, o.shapes, o.seed);
  for (const Tensor& t : m->feeds.tensors) m->inputs.push_back(api::to_core(t));
  for (const core::Tensor& t : m->inputs) m->input_ptrs.push_back(&t);
  auto t_plan = Clock::now();
  m->check(m->session->prepare(m->in()));
  m->plan_ms = ms_between(t_plan, Clock::now());
  // Outputs stay bound between runs: after the first run, kernels write into them in place.
  m->first_run_ms = m->timed_run();
  for (int i = 1; i < o.warmup; ++i) m->timed_run();
  return m;
}

void bench(const BenchOptions& o) {
  // Open the trace file first: a bad path should fail before minutes of running.
  std::ofstream trace_file;
  if (!o.trace.empty()) {
    trace_file.open(o.trace, std::ios::binary | std::ios::trunc);
    if (!trace_file) fail(ErrorCode::kIoError, str_cat("cannot write trace file '", o.trace, "'"));
  }

  runtime::SessionOptions so;
  so.num_threads = o.threads;
  so.opt_level = o.opt_level;
  so.reference_only = o.reference;
  so.isa = o.isa;
  so.float_math = o.float_math;
  if (!o.against.empty() && (o.profile || !o.trace.empty()))
    fail(ErrorCode::kInvalidArgument, "--against does not combine with --profile or --trace");
  std::unique_ptr<TimedModel> model = open_timed(o.model, o, so);
  std::unique_ptr<TimedModel> other = o.against.empty() ? nullptr : open_timed(o.against, o, so);
  runtime::Session* session = model->session.get();
  const std::vector<TensorInfo>& infos = model->infos;
  const ModelInputs& feeds = model->feeds;
  const std::vector<core::Tensor>& inputs = model->inputs;
  std::span<const core::Tensor* const> in_span = model->in();
  std::vector<core::Tensor>& outputs = model->outputs;
  auto check = [&](const core::Status& st) { model->check(st); };
  const double open_ms = model->open_ms, plan_ms = model->plan_ms, first_run_ms = model->first_run_ms;

  std::unique_ptr<Profiler> prof;
  if (o.profile || !o.trace.empty()) {
    size_t steps = session->graph().nodes().size();
    size_t events = std::min<size_t>(steps * static_cast<size_t>(o.iters), size_t{1} << 22);
    prof = std::make_unique<Profiler>(session->graph(), !o.trace.empty(), events,
                                      std::min<size_t>(static_cast<size_t>(o.iters), size_t{1} << 22));
    Profiler* p = prof.get();
    session->executor().set_profiler([p](const runtime::Executor::ProfileEvent& e) { p->on_event(e); });
    // One untimed run so first-call bookkeeping (shape strings) stays out of the timed runs.
    check(session->run(in_span, outputs));
    prof->set_recording(true);
  }

  std::vector<double> times, other_times;
  std::vector<uint64_t> allocs;
  times.reserve(static_cast<size_t>(o.iters));
  other_times.reserve(other ? static_cast<size_t>(o.iters) : 0);
  allocs.reserve(static_cast<size_t>(o.iters));
  if (prof) prof->set_origin(Clock::now());
  double timed_s = 0;
  for (int i = 0; i < o.iters; ++i) {
    if (o.max_time > 0 && i > 0 && timed_s >= o.max_time) break;
    // --against: the other model's run before this one's every other iteration, after it otherwise.
    if (other && i % 2 == 1) other_times.push_back(other->timed_run());
    uint64_t a0 = testing::alloc_count();
    auto t0 = Clock::now();
    if (prof) prof->start_run(t0);
    core::Status st = session->run(in_span, outputs);
    auto t1 = Clock::now();
    uint64_t a1 = testing::alloc_count();
    check(st);
    if (prof) prof->end_run(t1);
    times.push_back(ms_between(t0, t1));
    timed_s += times.back() / 1000;
    allocs.push_back(a1 - a0);
    if (other && i % 2 == 0) other_times.push_back(other->timed_run());
  }
  session->executor().set_profiler(nullptr);

  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  std::vector<uint64_t> sorted_allocs = allocs;
  std::sort(sorted_allocs.begin(), sorted_allocs.end());
  double median = percentile(sorted, 0.5), p10 = percentile(sorted, 0.1), p90 = percentile(sorted, 0.9);
  double min = sorted.empty() ? 0 : sorted.front(), max = sorted.empty() ? 0 : sorted.back();
  double mean = 0;
  for (double t : times) mean += t;
  if (!times.empty()) mean /= static_cast<double>(times.size());
  uint64_t allocs_per_run = sorted_allocs.empty() ? 0 : sorted_allocs[sorted_allocs.size() / 2];
  int runs = static_cast<int>(times.size());
  double wall_total = 0;
  for (double t : times) wall_total += t;

  // --against: the other model's order statistics, and the median of the per-iteration ratios (other / this; the
  // two runs of an iteration are back to back, so a burst of load on the machine is in both).
  std::string against_json, against_text;
  if (other) {
    std::vector<double> os = other_times, ratios;
    std::sort(os.begin(), os.end());
    for (size_t i = 0; i < times.size() && i < other_times.size(); ++i)
      if (times[i] > 0) ratios.push_back(other_times[i] / times[i]);
    std::sort(ratios.begin(), ratios.end());
    const double om = percentile(os, 0.5), ratio = percentile(ratios, 0.5);
    const double of_medians = median > 0 ? om / median : 0;
    against_json =
        str_cat(",\"against\":{\"model\":", json_string(std::filesystem::path(o.against).stem().string()),
                ",\"model_path\":", json_string(o.against), ",\"median_ms\":", json_number(om),
                ",\"p10_ms\":", json_number(percentile(os, 0.1)), ",\"p90_ms\":", json_number(percentile(os, 0.9)),
                ",\"min_ms\":", json_number(os.empty() ? 0 : os.front()),
                ",\"session_ms\":", json_number(other->open_ms + other->plan_ms), ",\"ratio\":", json_number(ratio),
                ",\"ratio_of_medians\":", json_number(of_medians), "}");
    char stats[256];
    std::snprintf(stats, sizeof stats,
                  ": median %.3f ms, p10 %.3f, p90 %.3f, min %.3f\n"
                  "ratio      %.3f of this model (median of the per-run ratios, runs alternated); of medians %.3f\n",
                  om, percentile(os, 0.1), percentile(os, 0.9), os.empty() ? 0 : os.front(), ratio, of_medians);
    against_text = str_cat("against    ", o.against, stats);
  }

  const runtime::PlanStats& ps = session->plan_stats();
  uint64_t rss = peak_rss_bytes();
  const char* isa = core::isa_name(session->isa());
  std::string name = std::filesystem::path(o.model).stem().string();
  double session_ms = open_ms + plan_ms;

  if (prof && !o.trace.empty()) write_trace(trace_file, o.trace, *prof, name);

  if (o.json) {
    std::string in_json;
    for (size_t i = 0; i < infos.size(); ++i)
      in_json += str_cat(i ? "," : "", "{\"name\":", json_string(infos[i].name),
                         ",\"type\":", json_string(inputs[i].type_string()),
                         ",\"source\":", json_string(feeds.sources[i]), "}");
    std::string line = str_cat(
        "{\"engine\":\"kestrel\",\"version\":", json_string(kestrel::version()), ",\"model\":", json_string(name),
        ",\"model_path\":", json_string(o.model), ",\"threads\":", o.threads, ",\"isa\":", json_string(isa),
        ",\"opt_level\":", o.opt_level, ",\"reference\":", o.reference ? "true" : "false", ",\"warmup\":", o.warmup,
        ",\"iters\":", runs, ",\"median_ms\":", json_number(median), ",\"p10_ms\":", json_number(p10),
        ",\"p90_ms\":", json_number(p90), ",\"min_ms\":", json_number(min), ",\"max_ms\":", json_number(max),
        ",\"mean_ms\":", json_number(mean), ",\"session_ms\":", json_number(session_ms),
        ",\"open_ms\":", json_number(open_ms), ",\"plan_ms\":", json_number(plan_ms),
        ",\"first_run_ms\":", json_number(first_run_ms), ",\"arena_bytes\":", ps.arena_bytes,
        ",\"sum_activation_bytes\":", ps.sum_activation_bytes, ",\"peak_rss_bytes\":", rss,
        ",\"allocs_per_run\":", allocs_per_run, ",\"static_steps\":", ps.static_steps,
        ",\"dynamic_steps\":", ps.dynamic_steps, ",\"folded_steps\":", ps.folded_steps,
        ",\"view_steps\":", ps.view_steps, ",\"inputs\":[", in_json, "]",
        o.profile && prof ? profile_json(*prof) : std::string(), against_json,
        o.trace.empty() ? "" : ",\"trace\":", o.trace.empty() ? std::string() : json_string(o.trace), "}");
    std::printf("%s\n", line.c_str());
    return;
  }

  std::printf("model      %s\n", o.model.c_str());
  for (size_t i = 0; i < infos.size(); ++i)
    std::printf("input      %s %s (%s)\n", infos[i].name.c_str(), inputs[i].type_string().c_str(),
                feeds.sources[i].c_str());
  std::printf("config     threads %d, isa %s, -O%d%s\n", o.threads, isa, o.opt_level,
              o.reference ? ", reference kernels" : "");
  std::printf("session    %.3f ms (open %.3f ms: load, optimize, kernels; plan %.3f ms); first run %.3f ms\n",
              session_ms, open_ms, plan_ms, first_run_ms);
  std::printf("latency    median %.3f ms, p10 %.3f, p90 %.3f, min %.3f, max %.3f (%d runs after %d warm-up)\n", median,
              p10, p90, min, max, runs, o.warmup);
  std::printf("%s", against_text.c_str());
  std::printf("memory     arena %s (%s without reuse); peak RSS %s\n", format_bytes(ps.arena_bytes).c_str(),
              format_bytes(ps.sum_activation_bytes).c_str(), format_bytes(rss).c_str());
  std::printf("steps      %d per run (%d with run-time shapes), %d computed at plan time, %d views of their input\n",
              ps.static_steps + ps.dynamic_steps - ps.view_steps, ps.dynamic_steps, ps.folded_steps, ps.view_steps);
  std::printf("allocs     %llu heap allocations per run (median)\n", static_cast<unsigned long long>(allocs_per_run));
  if (o.profile && prof) print_profile(*prof, wall_total, o.top);
  if (!o.trace.empty()) std::printf("\ntrace      %s (chrome://tracing or https://ui.perfetto.dev)\n", o.trace.c_str());
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand("bench", "Measure a model's latency, memory and per-op profile");
  sub->footer(
      "Times Session::run with a steady clock, one reading per run, after the warm-up runs. Outputs stay\n"
      "bound between runs (written in place). Inputs not given with --input get random data of their\n"
      "declared shape (symbolic dims are 1 unless --shape gives the shape).\n"
      "session: open (load, optimize, create kernels) + plan for the input shapes. --profile and --trace\n"
      "time every kernel during the measured runs (two clock reads per node).\n"
      "Example: kestrel bench model.onnx --threads 2 --iters 50 --profile");
  sub->add_option("model", o->model, "Model file (.onnx, .kst)")->required();
  sub->add_option("-t,--threads", o->threads, "Number of threads")->check(CLI::Range(1, 256))->capture_default_str();
  sub->add_option("-w,--warmup", o->warmup, "Untimed runs first (the first run, which plans, always happens)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  sub->add_option("-n,--iters", o->iters, "Timed runs")->check(CLI::Range(1, 1000000))->capture_default_str();
  sub->add_option("-i,--input", o->inputs, "Input data from a .npy file (repeatable)")
      ->type_name("NAME=FILE.npy")
      ->allow_extra_args(false);
  sub->add_option("-s,--shape", o->shapes, "Shape of a random input (repeatable)")
      ->type_name("NAME=1x3x224x224")
      ->allow_extra_args(false);
  sub->add_option("--max-time", o->max_time, "Stop the timed runs after this many seconds (at least one run)")
      ->check(CLI::NonNegativeNumber)
      ->type_name("SECONDS");
  sub->add_flag("--profile", o->profile, "Print a per-op profile (time, share, GFLOP/s, allocations)");
  sub->add_option("--top", o->top, "Nodes listed by --profile (0: all)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  sub->add_option("--trace", o->trace, "Write a Chrome trace-event JSON file (Perfetto)")->type_name("FILE.json");
  sub->add_flag("--json", o->json, "Print one JSON object on one line");
  sub->add_option("-O,--opt-level", o->opt_level, "Optimization level at load (-O0, -O1, -O2)")
      ->check(CLI::Range(0, 2))
      ->capture_default_str();
  sub->add_option("--isa", o->isa, "Cap the instruction set (default: the best this CPU has)")
      ->check(CLI::IsMember({"scalar", "avx2", "avx512"}));
  add_float_math_option(sub, &o->float_math);
  sub->add_option("--seed", o->seed, "Seed for random inputs")->capture_default_str();
  sub->add_flag("--reference", o->reference, "Use the plain reference kernels only");
  sub->add_option("--against", o->against,
                  "Also time this model, alternating runs with the first (same options and inputs), and print the "
                  "ratio of its latency to the first's")
      ->type_name("MODEL");
  sub->callback([o] { bench(*o); });
}

}  // namespace kestrel::cli
