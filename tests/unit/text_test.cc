// Tests of the text ops: UTF-8 case mapping, StringNormalizer (stop words, case, empty results,
// [1, C] inputs), TfIdfVectorizer against a naive n-gram enumeration written here (skips, modes,
// weights, int and string pools, batches) and bad pools; and string values between ops in a
// Session (they cannot live in the arena).
#include "kernels/reference/text.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "common/onnx_builder.h"
#include "core/tensor.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
namespace ref = kernels::ref;
using testing::OnnxBuilder;

Tensor strings(const std::vector<std::string>& v, Dims dims = {}) {
  if (dims.empty()) dims = {static_cast<int64_t>(v.size())};
  Tensor t = Tensor::allocate(DType::kString, dims).value();
  for (size_t i = 0; i < v.size(); ++i) t.data<std::string>()[i] = v[i];
  return t;
}

std::vector<std::string> contents(const Tensor& t) {
  return {t.data<std::string>(), t.data<std::string>() + t.num_elements()};
}

TEST(TextKernel, Utf8CaseMapping) {
  EXPECT_EQ(ref::utf8_to_lower("Hello, WORLD 123"), "hello, world 123");
  EXPECT_EQ(ref::utf8_to_upper("Hello, world"), "HELLO, WORLD");
  EXPECT_EQ(ref::utf8_to_lower("ÄÖÜ ÉÈ Ÿ"), "äöü éè ÿ");
  EXPECT_EQ(ref::utf8_to_upper("straße ÿ ×÷"), "STRAßE Ÿ ×÷");  // ß has no one-letter upper case
  EXPECT_EQ(ref::utf8_to_upper("σίσυφος"), "ΣΊΣΥΦΟΣ");
  EXPECT_EQ(ref::utf8_to_lower("ΣΊΣΥΦΟΣ"), "σίσυφοσ");
  EXPECT_EQ(ref::utf8_to_upper("привет ёж"), "ПРИВЕТ ЁЖ");
  EXPECT_EQ(ref::utf8_to_lower("ŁÓDŹ"), "łódź");
  EXPECT_EQ(ref::utf8_to_upper("łódź"), "ŁÓDŹ");
  EXPECT_EQ(ref::utf8_to_upper("日本語 🙂"), "日本語 🙂");
  // Invalid UTF-8 passes through byte for byte.
  const std::string bad = std::string("a\xff") + "b\xc3" + "\xe2\x82";
  EXPECT_EQ(ref::utf8_to_upper(bad), std::string("A\xff") + "B\xc3" + "\xe2\x82");
  EXPECT_EQ(ref::utf8_to_lower("\xc0\x80"), "\xc0\x80");  // overlong NUL stays as it is
}

TEST(TextKernel, StringNormalizer) {
  const std::vector<std::string> week = {"monday", "tuesday", "wednesday", "thursday"};
  ref::StringNormalizerParams p;
  p.stopwords = {"MONDAY"};
  // Case-insensitive stop words (the default), no case change.
  auto y = ref::string_normalizer(p, strings(week));
  ASSERT_TRUE(y.is_ok());
  EXPECT_EQ(contents(*y), (std::vector<std::string>{"tuesday", "wednesday", "thursday"}));
  // Case-sensitive: "MONDAY" does not match "monday"; upper-case the rest.
  p.case_sensitive = true;
  p.case_change = ref::CaseChange::kUpper;
  y = ref::string_normalizer(p, strings(week, {1, 4}));
  ASSERT_TRUE(y.is_ok());
  EXPECT_EQ(y->dims(), (Dims{1, 4}));
  EXPECT_EQ(contents(*y)[0], "MONDAY");
  // Everything removed: one empty string, keeping the [1, C] layout.
  p.stopwords = {"a", "B"};
  p.case_sensitive = false;
  y = ref::string_normalizer(p, strings({"A", "b", "a"}, {1, 3}));
  ASSERT_TRUE(y.is_ok());
  EXPECT_EQ(y->dims(), (Dims{1, 1}));
  EXPECT_EQ(contents(*y), (std::vector<std::string>{""}));
  y = ref::string_normalizer(p, strings({}, {0}));
  ASSERT_TRUE(y.is_ok());
  EXPECT_EQ(y->dims(), (Dims{1}));
  // Only [C] and [1, C].
  EXPECT_FALSE(ref::string_normalizer(p, strings({"a", "b"}, {2, 1})).is_ok());
  EXPECT_FALSE(ref::string_normalizer(p, Tensor::from_vector<float>({1.f})).is_ok());
}

// Naive n-gram counting: every start and every equal gap 1..S+1 (1 only for unigrams).
std::map<std::vector<int64_t>, int64_t> naive_ngrams(const std::vector<int64_t>& row, int64_t min_n, int64_t max_n,
                                                     int64_t skip) {
  std::map<std::vector<int64_t>, int64_t> m;
  const auto c = static_cast<int64_t>(row.size());
  for (int64_t n = min_n; n <= max_n; ++n)
    for (int64_t gap = 1; gap <= (n == 1 ? 1 : skip + 1); ++gap)
      for (int64_t i = 0; i < c; ++i) {
        std::vector<int64_t> g;
        for (int64_t j = 0; j < n && i + j * gap < c; ++j) g.push_back(row[static_cast<size_t>(i + j * gap)]);
        if (static_cast<int64_t>(g.size()) == n) ++m[g];
      }
  return m;
}

TEST(TextKernel, TfIdfSpecExampleAndModes) {
  // The ONNX doc's example: skip 2 turns [94, 17, 36, 12, 28] into bigrams [94, 12] and [17, 28].
  ref::TfIdfModel::Attributes a;
  a.min_gram_length = a.max_gram_length = 2;
  a.max_skip_count = 2;
  a.ngram_counts = {0, 0};
  a.pool_int64s = {94, 12, 17, 28, 94, 17, 36, 12};
  a.ngram_indexes = {0, 1, 2, 3};
  auto m = ref::TfIdfModel::create(a);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  Tensor x = Tensor::from_vector<int64_t>({94, 17, 36, 12, 28}, {5});
  Tensor y = Tensor::allocate(DType::kF32, {4}).value();
  ASSERT_TRUE(m->run(x, y).is_ok());
  EXPECT_EQ(core::tensor_to_doubles(y), (std::vector<double>{1, 1, 1, 1}));  // skip 0 finds [94,17], [36,12]
  // Repeated n-grams: TF counts, IDF caps at the weight, TFIDF multiplies.
  a.min_gram_length = 1;
  a.max_gram_length = 2;
  a.max_skip_count = 0;
  a.ngram_counts = {0, 2};
  a.pool_int64s = {5, 7, 5, 7};  // unigrams 5, 7; bigram [5, 7]
  a.ngram_indexes = {2, 0, 1};
  a.weights = {0.5f, 2.f, 3.f};
  Tensor x2 = Tensor::from_vector<int32_t>({5, 7, 5, 7, 5}, {1, 5});
  Tensor y2 = Tensor::allocate(DType::kF32, {1, 3}).value();
  const std::pair<ref::TfIdfMode, std::vector<double>> modes[] = {
      {ref::TfIdfMode::kTF, {2, 2, 3}}, {ref::TfIdfMode::kIDF, {2, 3, 0.5}}, {ref::TfIdfMode::kTFIDF, {4, 6, 1.5}}};
  for (const auto& [mode, want] : modes) {
    a.mode = mode;
    auto mm = ref::TfIdfModel::create(a);
    ASSERT_TRUE(mm.is_ok());
    ASSERT_TRUE(mm->run(x2, y2).is_ok());
    EXPECT_EQ(core::tensor_to_doubles(y2), want);
  }
}

TEST(TextKernel, TfIdfMatchesNaiveOnRandomRows) {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 20; ++trial) {
    ref::TfIdfModel::Attributes a;
    a.max_gram_length = 1 + static_cast<int64_t>(rng() % 3);
    a.min_gram_length = 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(a.max_gram_length));
    a.max_skip_count = static_cast<int64_t>(rng() % 4);
    // Pool: every unigram 0..3, some bigrams and trigrams over the alphabet 0..3.
    std::vector<std::vector<int64_t>> grams;
    int64_t pool = 0;
    a.ngram_counts = {0};
    for (int64_t v = 0; v < 4; ++v, ++pool) grams.push_back({v});
    for (int64_t n = 2; n <= 3; ++n) {
      a.ngram_counts.push_back(pool);
      for (int k = 0; k < 5; ++k, pool += n) {
        std::vector<int64_t> g;
        for (int64_t j = 0; j < n; ++j) g.push_back(rng() % 4);
        grams.push_back(g);
      }
    }
    for (const auto& g : grams) a.pool_int64s.insert(a.pool_int64s.end(), g.begin(), g.end());
    for (size_t i = 0; i < grams.size(); ++i) a.ngram_indexes.push_back(static_cast<int64_t>(grams.size() - 1 - i));
    // Duplicate n-grams in the pool each get the count.
    auto m = ref::TfIdfModel::create(a);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    const int64_t rows = 3, cols = 1 + static_cast<int64_t>(rng() % 12);
    std::vector<int64_t> xv(static_cast<size_t>(rows * cols));
    for (auto& v : xv) v = rng() % 5;  // 4 never occurs in the pool
    Tensor x = Tensor::from_vector<int64_t>(xv, {rows, cols});
    Tensor y = Tensor::allocate(DType::kF32, {rows, m->output_size()}).value();
    ASSERT_TRUE(m->run(x, y).is_ok());
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> row(xv.begin() + r * cols, xv.begin() + (r + 1) * cols);
      auto counts = naive_ngrams(row, a.min_gram_length, a.max_gram_length, a.max_skip_count);
      for (size_t i = 0; i < grams.size(); ++i) {
        double want = counts.count(grams[i]) ? static_cast<double>(counts[grams[i]]) : 0.0;
        EXPECT_EQ(y.data<float>()[r * m->output_size() + a.ngram_indexes[i]], want)
            << "trial " << trial << " gram " << i;
      }
    }
  }
}

TEST(TextKernel, TfIdfStringPoolAndBadPools) {
  ref::TfIdfModel::Attributes a;
  a.min_gram_length = 1;
  a.max_gram_length = 2;
  a.max_skip_count = 1;
  a.ngram_counts = {0, 2};
  a.pool_strings = {"the", "cat", "the", "cat"};
  a.ngram_indexes = {0, 1, 2};
  auto m = ref::TfIdfModel::create(a);
  ASSERT_TRUE(m.is_ok());
  Tensor y = Tensor::allocate(DType::kF32, {3}).value();
  ASSERT_TRUE(m->run(strings({"the", "big", "cat", "the", "cat"}), y).is_ok());
  EXPECT_EQ(core::tensor_to_doubles(y), (std::vector<double>{2, 2, 2}));  // [the _ cat] and [the cat]
  EXPECT_FALSE(m->run(Tensor::from_vector<int64_t>({1, 2}), y).is_ok());  // ints against a string pool

  ref::TfIdfModel::Attributes bad = a;
  bad.pool_strings = {"the", "cat", "the"};  // the bigram section has 1 item
  EXPECT_FALSE(ref::TfIdfModel::create(bad).is_ok());
  bad = a;
  bad.ngram_indexes = {0, 1};
  EXPECT_FALSE(ref::TfIdfModel::create(bad).is_ok());
  bad = a;
  bad.pool_int64s = {1};
  EXPECT_FALSE(ref::TfIdfModel::create(bad).is_ok());  // both pools
  bad = a;
  bad.weights = {1.f};
  EXPECT_FALSE(ref::TfIdfModel::create(bad).is_ok());
  bad = a;
  bad.ngram_counts = {0, 7};
  EXPECT_FALSE(ref::TfIdfModel::create(bad).is_ok());
  bad = a;
  bad.min_gram_length = 3;
  EXPECT_FALSE(ref::TfIdfModel::create(bad).is_ok());
  // Huge attribute values do not overflow or loop forever.
  ref::TfIdfModel::Attributes huge = a;
  huge.max_gram_length = int64_t{1} << 62;
  huge.max_skip_count = int64_t{1} << 62;
  auto mh = ref::TfIdfModel::create(huge);
  ASSERT_TRUE(mh.is_ok());
  ASSERT_TRUE(mh->run(strings({"the", "cat"}), y).is_ok());
  EXPECT_EQ(core::tensor_to_doubles(y), (std::vector<double>{1, 1, 1}));
}

// --- Through Session: string values between ops

TEST(TextSession, StringIntermediatesDoNotNeedTheArena) {
  // Cast produces a static-shape string tensor that feeds StringNormalizer.
  OnnxBuilder b(13);
  b.input("x", 1, {3});
  auto& c = b.node("Cast", {"x"}, {"s"});
  OnnxBuilder::attr(c, "to", int64_t{8});
  auto& n = b.node("StringNormalizer", {"s"}, {"y"});
  auto* stop = n.add_attribute();
  stop->set_name("stopwords");
  stop->set_type(onnx::AttributeProto::STRINGS);
  stop->add_strings("2.5");
  b.output("y", 8);
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<Tensor> out;
  ASSERT_TRUE((*s)->run({{"x", Tensor::from_vector<float>({1.5f, 2.5f, -3.f}, {3})}}, out).is_ok());
  EXPECT_EQ(contents(out[0]), (std::vector<std::string>{"1.5", "-3.0"}));
  // Same shapes again: the string buffer is reused and fully rewritten.
  ASSERT_TRUE((*s)->run({{"x", Tensor::from_vector<float>({2.5f, 7.f, 8.f}, {3})}}, out).is_ok());
  EXPECT_EQ(contents(out[0]), (std::vector<std::string>{"7.0", "8.0"}));
}

// String values own heap memory, so they never live in another slot's arena bytes: a Concat of strings copies its
// inputs, a Reshape of strings copies too (the executor's in-place Concat and views are for arena tensors only).
TEST(TextSession, StringConcatAndReshapeCopy) {
  OnnxBuilder b(13);
  b.input("x", 8, {2, 3});
  b.initializer_i64("shape", {2}, {3, 4});
  b.node("Identity", {"x"}, {"t"});
  b.node("Identity", {"x"}, {"u"});
  OnnxBuilder::attr(b.node("Concat", {"t", "u"}, {"c"}), "axis", int64_t{1});
  b.node("Reshape", {"c", "shape"}, {"r"});
  b.node("Identity", {"r"}, {"y"});
  b.output("y", 8);
  std::string bytes = b.bytes();
  runtime::SessionOptions o;
  o.opt_level = 0;
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size(), o);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  for (int rep = 0; rep < 2; ++rep) {
    std::vector<Tensor> out;
    ASSERT_TRUE((*s)->run({{"x", strings({"a", "bb", "c", "dd", "e", "ff"}, {2, 3})}}, out).is_ok());
    EXPECT_EQ(out[0].dims(), (Dims{3, 4}));
    EXPECT_EQ(contents(out[0]),
              (std::vector<std::string>{"a", "bb", "c", "a", "bb", "c", "dd", "e", "ff", "dd", "e", "ff"}));
  }
  EXPECT_EQ((*s)->plan_stats().view_steps, 0);
}

TEST(TextSession, TfIdfAfterIdentityOnStrings) {
  OnnxBuilder b(13);
  b.input("x", 8, {2, 3});
  b.node("Identity", {"x"}, {"t"});
  auto& n = b.node("TfIdfVectorizer", {"t"}, {"y"});
  OnnxBuilder::attr(n, "mode", std::string("TF"));
  OnnxBuilder::attr(n, "min_gram_length", int64_t{1});
  OnnxBuilder::attr(n, "max_gram_length", int64_t{1});
  OnnxBuilder::attr(n, "max_skip_count", int64_t{0});
  OnnxBuilder::attr(n, "ngram_counts", std::vector<int64_t>{0});
  OnnxBuilder::attr(n, "ngram_indexes", std::vector<int64_t>{1, 0});
  auto* pool = n.add_attribute();
  pool->set_name("pool_strings");
  pool->set_type(onnx::AttributeProto::STRINGS);
  pool->add_strings("a");
  pool->add_strings("b");
  b.output("y");
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<Tensor> out;
  ASSERT_TRUE((*s)->run({{"x", strings({"a", "a", "b", "c", "b", "b"}, {2, 3})}}, out).is_ok());
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(core::tensor_to_doubles(out[0]), (std::vector<double>{1, 2, 2, 0}));
}

}  // namespace
}  // namespace kestrel
