// Reference text kernels.
#include "kernels/reference/text.h"

#include <algorithm>
#include <set>

#include "core/str_util.h"

namespace kestrel::kernels::ref {

using core::DType;
using core::str_cat;

namespace {

// --- UTF-8 and simple (one code point to one code point) case mapping

// Decodes one code point at s[i]; returns false for an invalid sequence (then cp = the byte).
bool decode(const std::string& s, size_t& i, char32_t& cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  int len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + static_cast<size_t>(len) > s.size()) {
    cp = b0;
    ++i;
    return false;
  }
  char32_t v = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
    if ((b & 0xC0) != 0x80) {
      cp = b0;
      ++i;
      return false;
    }
    v = (v << 6) | (b & 0x3F);
  }
  // Reject overlong forms and surrogates so that re-encoding gives back the same bytes.
  const char32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < min[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
    cp = b0;
    ++i;
    return false;
  }
  cp = v;
  i += static_cast<size_t>(len);
  return true;
}

void encode(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Blocks where upper and lower case alternate (upper at even or odd code points).
struct AlternatingBlock {
  char32_t first, last;
  bool upper_even;
};
constexpr AlternatingBlock kAlternating[] = {
    {0x0100, 0x012F, true},  {0x0132, 0x0137, true}, {0x0139, 0x0148, false}, {0x014A, 0x0177, true},
    {0x0179, 0x017E, false}, {0x0460, 0x0481, true}, {0x048A, 0x04BF, true},  {0x04D0, 0x04FF, true},
};

char32_t to_lower(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
  if (c == 0x0130) return 'i';
  if (c == 0x0178) return 0xFF;
  for (const auto& b : kAlternating)
    if (c >= b.first && c <= b.last && ((c % 2 == 0) == b.upper_even)) return c + 1;
  if (c == 0x0386) return 0x03AC;
  if (c >= 0x0388 && c <= 0x038A) return c + 37;
  if (c == 0x038C) return 0x03CC;
  if (c == 0x038E || c == 0x038F) return c + 63;
  if (c >= 0x0391 && c <= 0x03A9 && c != 0x03A2) return c + 32;
  if (c >= 0x0410 && c <= 0x042F) return c + 32;
  if (c >= 0x0400 && c <= 0x040F) return c + 80;
  return c;
}

char32_t to_upper(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x0178;
  if (c == 0x0131) return 'I';
  if (c == 0x017F) return 'S';
  for (const auto& b : kAlternating)
    if (c >= b.first && c <= b.last && ((c % 2 == 0) != b.upper_even)) return c - 1;
  if (c == 0x03AC) return 0x0386;
  if (c >= 0x03AD && c <= 0x03AF) return c - 37;
  if (c == 0x03CC) return 0x038C;
  if (c == 0x03CD || c == 0x03CE) return c - 63;
  if (c == 0x03C2) return 0x03A3;
  if (c >= 0x03B1 && c <= 0x03C9) return c - 32;
  if (c >= 0x0430 && c <= 0x044F) return c - 32;
  if (c >= 0x0450 && c <= 0x045F) return c - 80;
  return c;
}

template <class Map>
std::string map_utf8(const std::string& s, Map&& map) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    char32_t cp;
    if (decode(s, i, cp))
      encode(map(cp), out);
    else
      out += s[start];  // invalid byte: unchanged
  }
  return out;
}

}  // namespace

std::string utf8_to_lower(const std::string& s) {
  return map_utf8(s, to_lower);
}
std::string utf8_to_upper(const std::string& s) {
  return map_utf8(s, to_upper);
}

core::Result<Tensor> string_normalizer(const StringNormalizerParams& p, const Tensor& x) {
  if (x.dtype() != DType::kString)
    return core::invalid_argument(str_cat("input must be strings, is ", x.type_string()));
  const bool two_d = x.rank() == 2;
  if (!(x.rank() == 1 || (two_d && x.dim(0) == 1)))
    return core::invalid_argument(str_cat("input must be [C] or [1, C], is ", x.type_string()));
  std::set<std::string> stop;
  for (const auto& w : p.stopwords) stop.insert(p.case_sensitive ? w : utf8_to_lower(w));
  std::vector<std::string> kept;
  const std::string* px = x.data<std::string>();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (stop.count(p.case_sensitive ? px[i] : utf8_to_lower(px[i]))) continue;
    switch (p.case_change) {
      case CaseChange::kNone:
        kept.push_back(px[i]);
        break;
      case CaseChange::kLower:
        kept.push_back(utf8_to_lower(px[i]));
        break;
      case CaseChange::kUpper:
        kept.push_back(utf8_to_upper(px[i]));
        break;
    }
  }
  if (kept.empty()) kept.emplace_back();
  const auto n = static_cast<int64_t>(kept.size());
  KESTREL_ASSIGN_OR_RETURN(Tensor y, Tensor::allocate(DType::kString, two_d ? core::Dims{1, n} : core::Dims{n}));
  for (int64_t i = 0; i < n; ++i) y.data<std::string>()[i] = std::move(kept[static_cast<size_t>(i)]);
  return y;
}

core::Result<TfIdfModel> TfIdfModel::create(const Attributes& a) {
  auto fail = [](const auto&... args) { return core::invalid_argument(str_cat(args...)); };
  if (a.min_gram_length < 1 || a.max_gram_length < a.min_gram_length)
    return fail("need 1 <= min_gram_length <= max_gram_length, got ", a.min_gram_length, " and ", a.max_gram_length);
  if (a.max_skip_count < 0) return fail("max_skip_count must be >= 0, is ", a.max_skip_count);
  const bool strings = !a.pool_strings.empty();
  if (strings == !a.pool_int64s.empty()) return fail("exactly one of pool_strings and pool_int64s must be set");
  const auto pool_size = static_cast<int64_t>(strings ? a.pool_strings.size() : a.pool_int64s.size());
  TfIdfModel m;
  m.a_ = a;
  m.strings_ = strings;
  if (strings)
    for (const auto& s : a.pool_strings) m.string_ids_.emplace(s, static_cast<int64_t>(m.string_ids_.size()));
  auto token = [&](int64_t i) {
    return strings ? m.string_ids_.at(a.pool_strings[static_cast<size_t>(i)]) : a.pool_int64s[static_cast<size_t>(i)];
  };
  // ngram_counts[k] is where the (k + 1)-grams start in the pool.
  size_t ngram_no = 0;
  for (size_t k = 0; k < a.ngram_counts.size(); ++k) {
    const int64_t begin = a.ngram_counts[k];
    const int64_t end = k + 1 < a.ngram_counts.size() ? a.ngram_counts[k + 1] : pool_size;
    const auto n = static_cast<int64_t>(k + 1);
    if (begin < 0 || end < begin || end > pool_size)
      return fail("ngram_counts [", core::join(a.ngram_counts), "] do not fit a pool of ", pool_size);
    if ((end - begin) % n != 0)
      return fail("the ", n, "-gram section of the pool has ", end - begin, " items, not a multiple of ", n);
    for (int64_t i = begin; i < end; i += n, ++ngram_no) {
      std::vector<int64_t> g;
      for (int64_t j = 0; j < n; ++j) g.push_back(token(i + j));
      m.ngrams_[g].push_back(ngram_no);
    }
  }
  if (a.ngram_counts.empty() && pool_size > 0) return fail("ngram_counts is missing");
  if (a.ngram_indexes.size() != ngram_no)
    return fail("ngram_indexes has ", a.ngram_indexes.size(), " entries but the pool holds ", ngram_no, " n-grams");
  if (!a.weights.empty() && a.weights.size() != ngram_no)
    return fail("weights has ", a.weights.size(), " entries but the pool holds ", ngram_no, " n-grams");
  for (int64_t idx : a.ngram_indexes) {
    if (idx < 0 || idx >= core::kMaxElements) return fail("ngram_indexes entry ", idx, " is out of range");
    m.output_size_ = std::max(m.output_size_, idx + 1);
  }
  return m;
}

Status TfIdfModel::run(const Tensor& x, Tensor& y) const {
  const bool str_in = x.dtype() == DType::kString;
  if (str_in != strings_ || (!str_in && x.dtype() != DType::kI32 && x.dtype() != DType::kI64))
    return core::invalid_argument(
        str_cat("input ", x.type_string(), " does not match the ", strings_ ? "string" : "int64", " pool"));
  if (x.rank() != 1 && x.rank() != 2)
    return core::invalid_argument(str_cat("input must be [C] or [N, C], is ", x.type_string()));
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, cols = x.dim(-1);
  const core::Dims want = x.rank() == 2 ? core::Dims{rows, output_size_} : core::Dims{output_size_};
  if (y.dtype() != DType::kF32 || y.dims() != want)
    return core::invalid_argument(str_cat("output must be f32", core::dims_to_string(want), ", is ", y.type_string()));
  // Tokens as ids; input strings outside the pool get -1 and never match.
  std::vector<int64_t> tok(static_cast<size_t>(x.num_elements()));
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (str_in) {
      auto it = string_ids_.find(x.data<std::string>()[i]);
      tok[static_cast<size_t>(i)] = it == string_ids_.end() ? -1 : it->second;
    } else {
      tok[static_cast<size_t>(i)] = x.element_as_int64(i);
    }
  }
  std::vector<int64_t> counts(a_.ngram_indexes.size());
  float* py = y.data<float>();
  std::fill(py, py + y.num_elements(), 0.f);
  std::vector<int64_t> g;
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(counts.begin(), counts.end(), 0);
    const int64_t* row = tok.data() + r * cols;
    // n-grams longer than the pool's longest cannot match; skips wider than the row cannot fit.
    const int64_t max_n = std::min<int64_t>(a_.max_gram_length, static_cast<int64_t>(a_.ngram_counts.size()));
    for (int64_t n = a_.min_gram_length; n <= max_n && n <= cols; ++n) {
      const int64_t max_d = n == 1 ? 1 : std::min(a_.max_skip_count, (cols - 1) / (n - 1) - 1) + 1;
      for (int64_t d = 1; d <= max_d; ++d) {
        for (int64_t i = 0; i + (n - 1) * d < cols; ++i) {
          g.clear();
          for (int64_t j = 0; j < n; ++j) g.push_back(row[i + j * d]);
          auto it = ngrams_.find(g);
          if (it == ngrams_.end()) continue;
          for (size_t no : it->second) ++counts[no];
        }
      }
    }
    for (size_t no = 0; no < counts.size(); ++no) {
      const double w = a_.weights.empty() ? 1.0 : a_.weights[no];
      double v = static_cast<double>(counts[no]);
      if (a_.mode == TfIdfMode::kIDF) v = counts[no] > 0 ? w : 0.0;
      if (a_.mode == TfIdfMode::kTFIDF) v *= w;
      py[r * output_size_ + a_.ngram_indexes[no]] = static_cast<float>(v);
    }
  }
  return Status::ok();
}

}  // namespace kestrel::kernels::ref
