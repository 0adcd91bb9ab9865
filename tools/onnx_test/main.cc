// kestrel-onnx-test: runs ONNX backend node tests (DIR/<test>/model.onnx + test_data_set_*/) and
// prints one line per failing test and a final "conformance: P passed, F failed, U unsupported of N".
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tools/onnx_test/conformance.h"

namespace {

using kestrel::conformance::Outcome;
using kestrel::conformance::TestResult;

// Exit codes.
constexpr int kOk = 0;
constexpr int kExpectedFailed = 1;  // an expected-pass test failed, was unsupported or is missing
constexpr int kUsage = 2;           // bad arguments, unreadable list, no tests found

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// One test name per line; blank lines and '#' comments are ignored.
bool read_list(const std::string& path, std::vector<std::string>* names) {
  std::ifstream f(path);
  if (!f) return false;
  std::string line;
  while (std::getline(f, line)) {
    line = trim(line.substr(0, line.find('#')));
    if (!line.empty()) names->push_back(line);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs ONNX backend node tests through Kestrel and compares outputs with the ONNX tolerances "
               "(rtol 1e-3, atol 1e-7 unless the op's entry in the tolerance table says otherwise)."};
  std::vector<std::string> dirs;
  std::string filter, expected_path, write_passing_path;
  bool verbose = false;
  app.add_option("dirs", dirs, "A folder of node tests, or one test folder (holding model.onnx)")->required();
  app.add_option("--filter", filter, "Run only tests whose name matches this regular expression (ECMAScript, search)");
  app.add_flag("-v,--verbose", verbose, "Also print unsupported tests with the reason, and each test as it starts");
  app.add_option("--expected", expected_path,
                 "File listing tests expected to pass; exit 1 if one of them fails, is unsupported or is missing");
  app.add_option("--write-passing", write_passing_path, "Write the names of the passing tests to this file");
  CLI11_PARSE(app, argc, argv);

  std::regex re;
  if (!filter.empty()) {
    try {
      re = std::regex(filter, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      std::fprintf(stderr, "kestrel-onnx-test: bad --filter regex '%s': %s\n", filter.c_str(), e.what());
      return kUsage;
    }
  }
  std::vector<std::string> expected;
  if (!expected_path.empty() && !read_list(expected_path, &expected)) {
    std::fprintf(stderr, "kestrel-onnx-test: cannot read expected-pass list %s\n", expected_path.c_str());
    return kUsage;
  }
  auto matches = [&](const std::string& name) { return filter.empty() || std::regex_search(name, re); };

  std::vector<std::string> errors;
  std::vector<std::string> tests = kestrel::conformance::find_tests(dirs, &errors);
  for (const auto& e : errors) std::fprintf(stderr, "kestrel-onnx-test: %s\n", e.c_str());
  if (!errors.empty()) return kUsage;

  std::vector<TestResult> results;
  for (const auto& dir : tests) {
    std::string name = kestrel::conformance::test_name(dir);
    if (!matches(name)) continue;
    if (verbose) {
      std::printf("RUN %s\n", name.c_str());
      std::fflush(stdout);  // a crash then names the test that caused it
    }
    TestResult r = kestrel::conformance::run_test(dir);
    if (r.outcome == Outcome::kFail || (verbose && r.outcome == Outcome::kUnsupported))
      std::printf("%s %s: %s\n", kestrel::conformance::outcome_name(r.outcome), r.name.c_str(), r.reason.c_str());
    std::fflush(stdout);
    results.push_back(std::move(r));
  }

  int passed = 0, failed = 0, unsupported = 0;
  std::set<std::string> passing, seen;
  for (const auto& r : results) {
    seen.insert(r.name);
    if (r.outcome == Outcome::kPass) {
      ++passed;
      passing.insert(r.name);
    } else if (r.outcome == Outcome::kFail) {
      ++failed;
    } else {
      ++unsupported;
    }
  }

  int rc = kOk;
  if (!expected_path.empty()) {
    int checked = 0, bad = 0;
    for (const auto& name : expected) {
      if (!matches(name)) continue;
      ++checked;
      if (!seen.count(name)) {
        std::printf("EXPECTED-PASS MISSING %s: listed in %s but not found\n", name.c_str(), expected_path.c_str());
        ++bad;
      } else if (!passing.count(name)) {
        std::printf("EXPECTED-PASS BROKEN %s: listed in %s but did not pass\n", name.c_str(), expected_path.c_str());
        ++bad;
      }
    }
    std::printf("expected-pass: %d of %d listed tests passed\n", checked - bad, checked);
    if (bad) rc = kExpectedFailed;
  }
  if (!write_passing_path.empty()) {
    std::ofstream f(write_passing_path);
    f << "# ONNX node tests Kestrel passes (one name a line); written by kestrel-onnx-test --write-passing.\n";
    for (const auto& name : passing) f << name << "\n";
    if (!f) {
      std::fprintf(stderr, "kestrel-onnx-test: cannot write %s\n", write_passing_path.c_str());
      rc = kUsage;
    }
  }
  if (results.empty()) {
    std::fprintf(stderr, "kestrel-onnx-test: no tests to run%s\n", filter.empty() ? "" : " (check --filter)");
    if (rc == kOk) rc = kUsage;
  }
  std::printf("conformance: %d passed, %d failed, %d unsupported of %zu\n", passed, failed, unsupported,
              results.size());
  return rc;
}
