// Per-op-type time on the shared models (executor profile hook): which non-GEMM ops matter.
// Usage: kestrel_op_profile [--iters N] [--threads T] [--isa scalar|avx2|avx512] [--reference] [model ...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/npy.h"
#include "runtime/session.h"

using namespace kestrel;

int main(int argc, char** argv) {
  int iters = 20, threads = 1;
  runtime::SessionOptions so;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--isa" && i + 1 < argc) so.isa = argv[++i];
    else if (a == "--reference") so.reference_only = true;
    else only.push_back(a);
  }
  so.num_threads = threads;
  const char* data = std::getenv("KESTREL_DATA");
  std::string dir = std::string(data ? data : "/work/shared") + "/models/";
  std::ifstream f(dir + "manifest.json");
  nlohmann::json j = nlohmann::json::parse(f);
  std::map<std::string, double> total_by_op;
  for (auto& [name, e] : j["models"].items()) {
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
    auto s = runtime::Session::open(dir + e["file"].get<std::string>(), so);
    if (!s.is_ok()) {
      std::printf("%s: %s\n", name.c_str(), s.status().message().c_str());
      continue;
    }
    std::vector<std::pair<std::string, core::Tensor>> ins;
    for (const auto& in : e["inputs"]) ins.push_back({in["name"], *core::read_npy(dir + in["file"].get<std::string>())});
    std::vector<core::Tensor> outs;
    auto st = (*s)->run(ins, outs);  // warm up + plan
    if (!st.is_ok()) {
      std::printf("%s: %s\n", name.c_str(), st.message().c_str());
      continue;
    }
    std::map<std::string, double> by_op;
    std::map<std::string, std::string> impl_of;
    bool on = false;
    (*s)->executor().set_profiler([&](const runtime::Executor::ProfileEvent& e) {
      if (!on) return;
      const std::string op(e.node.op_type());
      by_op[op] += std::chrono::duration<double, std::milli>(e.end - e.start).count();
      impl_of[op] = e.impl ? e.impl : "?";
    });
    std::vector<double> lat;
    for (int it = 0; it < iters; ++it) {
      on = true;
      auto t0 = std::chrono::steady_clock::now();
      (void)(*s)->run(ins, outs);
      lat.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(lat.begin(), lat.end());
    std::printf("== %s: median %.3f ms (min %.3f)\n", name.c_str(), lat[lat.size() / 2], lat[0]);
    std::vector<std::pair<double, std::string>> rows;
    for (auto& [op, ms] : by_op) rows.push_back({ms / iters, op});
    std::sort(rows.rbegin(), rows.rend());
    for (auto& [ms, op] : rows) {
      std::printf("   %-22s %8.3f ms  %s\n", op.c_str(), ms, impl_of[op].c_str());
      total_by_op[op] += ms;
    }
  }
  std::printf("== total over models (ms per run, summed)\n");
  std::vector<std::pair<double, std::string>> rows;
  for (auto& [op, ms] : total_by_op) rows.push_back({ms, op});
  std::sort(rows.rbegin(), rows.rend());
  for (auto& [ms, op] : rows) std::printf("   %-22s %8.3f ms\n", op.c_str(), ms);
  return 0;
}
