// Steady-state Session::run on shared models ($KESTREL_DATA/models): heap allocations per run,
// charged to the kernel that made them, and the arena against the sum of all activation sizes.
// Asserts that the executor allocates nothing outside kernels once planned, that the count is
// steady, and that no kernel allocates (issue 5: run() allocates nothing for static shapes).
// Every kernel's count is printed per op. Skips visibly without the data.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/test_data.h"
#include "core/npy.h"
#include "core/tensor.h"
#include "runtime/session.h"
#include "testing/alloc_counter.h"

namespace kestrel {
namespace {

using core::Tensor;
using kestrel::testing::alloc_count;

struct Case {
  std::string model;
  int threads;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.model << "/" << c.threads << "t";
}

// KESTREL_ALLOC_MODELS: comma-separated model names, or "all"; default: four quick ones that
// cover the transformer, depthwise-CNN and data-movement (Slice/Concat/Transpose) op mixes.
std::vector<Case> cases() {
  std::vector<std::string> names = {"bert_tiny", "mobilenet_v3_small", "shufflenet_v2_x1_0", "mlp_mixer_tiny"};
  if (const char* env = std::getenv("KESTREL_ALLOC_MODELS"); env && *env) {
    names.clear();
    if (std::strcmp(env, "all") == 0) {
      std::ifstream f(kestrel::testing::data_dir() + "/models/manifest.json");
      nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
      if (!j.is_discarded() && j.contains("models"))
        for (auto& [name, e] : j["models"].items()) names.push_back(name);
    } else {
      std::stringstream ss(env);
      for (std::string n; std::getline(ss, n, ',');)
        if (!n.empty()) names.push_back(n);
    }
  }
  std::vector<Case> r;
  for (const auto& n : names) r.push_back({n, 1});
  if (!names.empty()) r.push_back({names.front(), 2});
  return r;
}

// Charges the allocations made since the previous kernel ended to the kernel that just ran (so
// anything the executor did between two kernels shows up on the later one); what comes after
// the last kernel is the executor's. The hook itself allocates nothing.
struct Attribution {
  std::unordered_map<const ir::Node*, size_t> index;
  std::vector<const ir::Node*> nodes;
  std::vector<const char*> impl;
  std::vector<uint64_t> allocs;
  uint64_t last = 0;
  bool recording = false;

  explicit Attribution(const ir::Graph& g) {
    for (const ir::Node* n : g.nodes()) {
      index[n] = nodes.size();
      nodes.push_back(n);
    }
    impl.assign(nodes.size(), nullptr);
    allocs.assign(nodes.size(), 0);
  }
  void on_event(const runtime::Executor::ProfileEvent& e) {
    uint64_t now = alloc_count();
    auto it = index.find(&e.node);
    if (it != index.end()) {
      impl[it->second] = e.impl;
      if (recording) allocs[it->second] += now - last;
    }
    last = alloc_count();
  }
};

class SharedModelAllocs : public ::testing::TestWithParam<Case> {};

TEST_P(SharedModelAllocs, SteadyStateRunAllocatesNothing) {
  const Case& c = GetParam();
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "whole models under the sanitizers are slow; the Release build runs this";
#endif
  const std::string dir = kestrel::testing::data_dir() + "/models/";
  std::ifstream mf(dir + "manifest.json");
  if (!mf) GTEST_SKIP() << "no " << dir << "manifest.json (set KESTREL_DATA)";
  nlohmann::json manifest = nlohmann::json::parse(mf, nullptr, false);
  ASSERT_FALSE(manifest.is_discarded());
  if (!manifest["models"].contains(c.model)) GTEST_SKIP() << c.model << " is not in the manifest";
  const nlohmann::json& entry = manifest["models"][c.model];

  runtime::SessionOptions so;
  so.num_threads = c.threads;
  auto opened = runtime::Session::open(dir + entry["file"].get<std::string>(), so);
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  std::unique_ptr<runtime::Session> s = std::move(opened).value();

  // The reference inputs, in the order of the session's inputs.
  std::vector<Tensor> inputs(s->inputs().size());
  for (const auto& in : entry["inputs"]) {
    auto t = core::read_npy(dir + in["file"].get<std::string>());
    ASSERT_TRUE(t.is_ok()) << t.status().to_string();
    for (size_t i = 0; i < inputs.size(); ++i)
      if (s->inputs()[i].name == in["name"].get<std::string>()) inputs[i] = *t;
  }
  std::vector<const Tensor*> ins;
  for (const Tensor& t : inputs) {
    ASSERT_TRUE(t.defined());
    ins.push_back(&t);
  }

  Attribution attr(s->graph());
  s->executor().set_profiler([&attr](const runtime::Executor::ProfileEvent& e) { attr.on_event(e); });
  std::vector<Tensor> out;
  ASSERT_TRUE(s->run(ins, out).is_ok());  // plans, allocates the outputs
  ASSERT_TRUE(s->run(ins, out).is_ok());  // warm-up: the outputs are bound from here on
  std::vector<const void*> out_data;
  for (const Tensor& t : out) out_data.push_back(t.raw_data());

  constexpr int kRuns = 2;
  // With several threads, per-thread scratch (sgemm packing, attention scores, pool rows) grows
  // the first time a pool worker takes a task of a given size, and tasks are taken dynamically:
  // on a loaded machine a worker may first get such a task many runs late. That growth stops
  // (the buffers only grow), so a multi-threaded case measures again, up to 10 times, while the
  // measured runs are not steady or a kernel allocates. One thread: one attempt.
  const int attempts = c.threads > 1 ? 10 : 1;
  std::vector<uint64_t> per_run;
  uint64_t tail = 0;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    std::fill(attr.allocs.begin(), attr.allocs.end(), 0);
    per_run.clear();
    tail = 0;
    attr.recording = true;
    for (int r = 0; r < kRuns; ++r) {
      uint64_t a0 = alloc_count();
      attr.last = a0;
      core::Status st = s->run(ins, out);
      uint64_t a1 = alloc_count();
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      per_run.push_back(a1 - a0);
      tail += a1 - attr.last;
    }
    attr.recording = false;
    bool clean = per_run[0] == per_run[1] && tail == 0;
    for (size_t i = 0; i < attr.nodes.size(); ++i)
      if (attr.allocs[i]) clean = false;
    if (clean) break;
  }
  s->executor().set_profiler(nullptr);

  for (size_t k = 0; k < out.size(); ++k) EXPECT_EQ(out[k].raw_data(), out_data[k]) << "output " << k << " moved";
  EXPECT_EQ(per_run[0], per_run[1]) << "allocations per run are not steady";
  EXPECT_EQ(tail, 0u) << "the executor allocated after the last kernel";

  uint64_t charged = 0;
  std::map<std::string, uint64_t> ops;  // op type/impl -> allocations per run
  for (size_t i = 0; i < attr.nodes.size(); ++i) {
    uint64_t a = attr.allocs[i];
    charged += a;
    if (!a) continue;
    const char* impl = attr.impl[i] ? attr.impl[i] : "?";
    const std::string op(attr.nodes[i]->op_type());
    ops[op + "/" + impl] += a / kRuns;
    ADD_FAILURE() << attr.nodes[i]->describe() << " (impl " << impl << ") made " << a << " heap allocations in "
                  << kRuns << " runs";
  }
  EXPECT_EQ(charged + tail, per_run[0] + per_run[1]);

  const runtime::PlanStats& ps = s->plan_stats();
  EXPECT_LT(ps.arena_bytes, ps.sum_activation_bytes);
  std::printf(
      "[ allocs   ] %-20s %dt  allocs/run %llu  arena %zu B, sum of activations %zu B (%.1f%%)\n",
      c.model.c_str(), c.threads, static_cast<unsigned long long>(per_run[1]), ps.arena_bytes,
      ps.sum_activation_bytes,
      ps.sum_activation_bytes
          ? 100.0 * static_cast<double>(ps.arena_bytes) / static_cast<double>(ps.sum_activation_bytes)
          : 0.0);
  for (const auto& [op, n] : ops)
    std::printf("[ allocs   ] %-20s %dt  %s allocates %llu times per run\n", c.model.c_str(), c.threads, op.c_str(),
                static_cast<unsigned long long>(n));
  ::testing::Test::RecordProperty("allocs_per_run", static_cast<int>(per_run[1]));
  ::testing::Test::RecordProperty("arena_bytes", static_cast<int>(ps.arena_bytes));
  ::testing::Test::RecordProperty("sum_activation_bytes", static_cast<int>(ps.sum_activation_bytes));
}

INSTANTIATE_TEST_SUITE_P(Models, SharedModelAllocs, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return i.param.model + "_" + std::to_string(i.param.threads) + "t";
                         });

}  // namespace
}  // namespace kestrel
