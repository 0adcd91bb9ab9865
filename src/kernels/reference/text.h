// Reference text kernels: StringNormalizer (stop words, case folding with en_US rules) and
// TfIdfVectorizer (n-gram counts with skips over int or string tokens, TF / IDF / TFIDF).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

// UTF-8 case mapping (ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic; other code points and
// invalid bytes are kept as they are).
std::string utf8_to_lower(const std::string& s);
std::string utf8_to_upper(const std::string& s);

enum class CaseChange { kNone, kLower, kUpper };

struct StringNormalizerParams {
  CaseChange case_change = CaseChange::kNone;
  bool case_sensitive = false;
  std::vector<std::string> stopwords;
};

// x: string [C] or [1, C]. Drops the stop words (compared case-insensitively by lowercasing unless
// case_sensitive), then changes the case of what is left. The result is [C'] or [1, C']; if
// nothing is left it is [1] or [1, 1] holding an empty string.
core::Result<Tensor> string_normalizer(const StringNormalizerParams& p, const Tensor& x);

enum class TfIdfMode { kTF, kIDF, kTFIDF };

// A TfIdfVectorizer's n-gram pool, checked and indexed once at session creation.
class TfIdfModel {
 public:
  struct Attributes {
    int64_t min_gram_length = 1, max_gram_length = 1, max_skip_count = 0;
    TfIdfMode mode = TfIdfMode::kTF;
    std::vector<int64_t> ngram_counts, ngram_indexes, pool_int64s;
    std::vector<std::string> pool_strings;
    std::vector<float> weights;
  };
  // Errors name what is inconsistent (pool sizes, counts, indexes, weights).
  static core::Result<TfIdfModel> create(const Attributes& a);

  int64_t output_size() const { return output_size_; }
  bool uses_strings() const { return strings_; }

  // x: [C] or [N, C] int32/int64 (int pool) or string (string pool); y: f32 [out] or [N, out].
  // Counts every n-gram of the pool with min <= n <= max found at positions i, i+d, ..., i+(n-1)d
  // for skip distances d = 1 .. max_skip_count + 1 (only d = 1 for 1-grams) within each row.
  // TF: counts; IDF: weight if found at all; TFIDF: count * weight.
  Status run(const Tensor& x, Tensor& y) const;

 private:
  TfIdfModel() = default;
  Attributes a_;
  bool strings_ = false;
  std::map<std::string, int64_t> string_ids_;                   // pool string -> token id
  std::map<std::vector<int64_t>, std::vector<size_t>> ngrams_;  // token ids -> pool n-gram numbers
  int64_t output_size_ = 0;
};

}  // namespace kestrel::kernels::ref
