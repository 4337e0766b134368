#pragma once

// Shared by the libFuzzer harnesses: a scratch folder for the files a loader reads, splitting
// one fuzz input into several files, and the invariants every loaded tokenizer must satisfy.
// A harness reports a broken invariant with check(), which aborts: libFuzzer then saves the
// input as a reproducer, as it does for a crash.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/tokenizer/tokenizer.h"

namespace attn::fuzz {

// Where the shipped models are (compiled in by tests/fuzz/CMakeLists.txt).
inline std::filesystem::path shipped_model(const char* name) {
  return std::filesystem::path(ATTN_MODELS_DIR) / name;
}

#define FUZZ_CHECK(condition, message) \
  ::attn::fuzz::check(condition, #condition, message, __FILE__, __LINE__)

inline void check(bool holds, const char* condition, const std::string& message, const char* file,
                  int line) {
  if (holds) return;
  std::fprintf(stderr, "%s:%d: invariant broken: %s (%s)\n", file, line, message.c_str(),
               condition);
  std::abort();
}

// One folder per fuzzing process, in memory (/dev/shm) when possible, removed at exit. Files
// are rewritten for every input.
class ScratchDir {
 public:
  ScratchDir() {
    const std::filesystem::path base = std::filesystem::is_directory("/dev/shm")
                                           ? "/dev/shm"
                                           : std::filesystem::temp_directory_path();
    path_ = base / ("attn-fuzz-" + std::to_string(getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

  void write(const std::string& name, std::string_view bytes) const {
    std::ofstream out(path_ / name, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    FUZZ_CHECK(bool(out), "cannot write the scratch file " + (path_ / name).string());
  }
  void remove(const std::string& name) const { std::filesystem::remove(path_ / name); }
  // A symbolic link to a shipped file, so that large real files are never copied.
  void link(const std::string& name, const std::filesystem::path& target) const {
    std::filesystem::remove(path_ / name);
    std::filesystem::create_symlink(target, path_ / name);
  }

 private:
  std::filesystem::path path_;
};

// Harnesses that need several files take them from one input, separated by this string (also
// in their .dict). It cannot occur in a real text or JSON file: it contains NUL bytes.
constexpr std::string_view kFileSeparator{"\0--next-file--\0", 15};

// The input cut at each separator: {first file, second file, ...}.
inline std::vector<std::string_view> split_files(std::string_view input) {
  std::vector<std::string_view> files;
  for (std::size_t at; (at = input.find(kFileSeparator)) != std::string_view::npos;) {
    files.push_back(input.substr(0, at));
    input.remove_prefix(at + kFileSeparator.size());
  }
  files.push_back(input);
  return files;
}

// Writes `bytes` as `name`, or removes `name` when the input has no such part.
inline void write_optional(const ScratchDir& dir, const std::string& name,
                           const std::vector<std::string_view>& files, std::size_t index) {
  if (index < files.size()) {
    dir.write(name, files[index]);
  } else {
    dir.remove(name);
  }
}

// Text that every tokenizer is asked to encode after loading: ASCII, accents, CJK, an emoji,
// control characters, runs of spaces, and the special tokens of both families.
constexpr std::string_view kSampleText =
    "Hello, world! The jury said \"it's 1,234.5%\" -- naïve café, Ωmega, 東京, 🙂\t\r\n  x  "
    "<|endoftext|> [CLS] a [SEP] b [MASK] [UNK] ##ing";

// Where in `encoding` the ids of encode_plain can sit: the post-processor adds its special
// tokens around them, each spanning {0, 0}.
inline std::vector<std::size_t> plain_positions(const Encoding& encoding,
                                                const std::vector<int>& plain) {
  std::vector<std::size_t> positions;
  for (std::size_t at = 0; at + plain.size() <= encoding.ids.size(); ++at) {
    bool fits = std::equal(plain.begin(), plain.end(), encoding.ids.begin() + std::ptrdiff_t(at));
    for (std::size_t i = 0; fits && i < encoding.ids.size(); ++i) {
      fits = (i >= at && i < at + plain.size()) || encoding.offsets[i] == CharSpan{};
    }
    if (fits) positions.push_back(at);
  }
  return positions;
}

// Why the spans of the text's own tokens, encoding.offsets[first, first + count) (encode_plain's
// tokens, added tokens written in the text included), are out of the order the library keeps, or
// "" when they are not.
// The library's span of a token runs from the origin of its first normalized byte to that of its
// last, and each byte's origin is one character of the text (or the empty span at the start
// of the text for what a normalizer inserts before its first character), never before the
// origin of the byte before it. So before the ByteLevel or RobertaProcessing post-processor trims
// spaces off the spans, starts and ends never decrease, and a token shares at most one character
// with the tokens before it (the character both came from: byte-fallback pieces of a character,
// pieces of a character a normalizer expanded), unless it has the very span of the token before
// it (Unigram's byte fallback gives each <0xNN> token the span of the whole run of unknown
// characters; fuzz_tokenizer_pipeline: "\n\n" as <0x0A> <0x0A>, both [39, 41)). Trimming moves a
// start right or an end left, within the span; a trimmed start can only pass a later start by
// landing on the end it shared with that token, which leaves its span empty (after Digits,
// ByteLevel's prefix space before the "1" of kSampleText's "1,234" has the span of that "1",
// [34, 35), which trimming leaves [35, 35), before the "1"'s [34, 35), as the library does).
// The order that holds for the spans given, of tokens i < j:
// - start(i) <= start(j), or start(i) - 1 <= start(j) if span i is empty;
// - end(i) <= end(j), or end(i) - 1 <= end(j) if span j is empty;
// - end(i) - 1 <= start(j) unless span j is span j - 1.
inline std::string plain_span_error(const Encoding& encoding, std::size_t first,
                                    std::size_t count) {
  int latest_start = 0;        // of the non-empty spans before
  int latest_empty_start = 0;  // of the empty spans before
  int latest_end = 0;
  for (std::size_t j = first; j < first + count; ++j) {
    const CharSpan span = encoding.offsets[j];
    const bool empty = span.start == span.end;
    const std::string where = "token " + std::to_string(j) + " [" + std::to_string(span.start) +
                              ", " + std::to_string(span.end) + ")";
    if (span.start < latest_start || span.start < latest_empty_start - 1) {
      return where + " starts before a token before it";
    }
    if (span.end < latest_end - (empty ? 1 : 0)) return where + " ends before a token before it";
    const bool same_as_before = j > first && span == encoding.offsets[j - 1];
    if (!same_as_before && span.start < latest_end - 1) {
      return where + " shares more than a character with the tokens before it";
    }
    int& latest = empty ? latest_empty_start : latest_start;
    latest = std::max(latest, span.start);
    latest_end = std::max(latest_end, span.end);
  }
  return "";
}

// encode_with_offsets gives encode's ids and one span per id, each inside the text (in code
// points); the special tokens the post-processor adds around encode_plain's ids span {0, 0};
// and the spans of the text's own tokens are in order (plain_span_error). Returns that encoding.
inline Encoding check_offsets(const TokenOffsets& offsets, const Tokenizer& tokenizer,
                              std::string_view text, const Encoding& encoding) {
  const Encoding with_offsets = offsets.encode_with_offsets(text);
  FUZZ_CHECK(with_offsets.ids == encoding.ids, "encode_with_offsets gave other ids");
  FUZZ_CHECK(with_offsets.offsets.size() == encoding.ids.size(),
             std::to_string(encoding.ids.size()) + " ids but " +
                 std::to_string(with_offsets.offsets.size()) + " offsets");
  const int characters = int(decode_utf8(text, "text").size());
  for (const CharSpan& span : with_offsets.offsets) {
    FUZZ_CHECK(0 <= span.start && span.start <= span.end && span.end <= characters,
               "offsets [" + std::to_string(span.start) + ", " + std::to_string(span.end) +
                   ") in a text of " + std::to_string(characters) + " characters");
  }
  const std::vector<int> plain = tokenizer.encode_plain(text);
  const std::vector<std::size_t> positions = plain_positions(with_offsets, plain);
  FUZZ_CHECK(!positions.empty(),
             "encode's ids are not encode_plain's between special tokens spanning {0, 0}");
  // A special token whose id is also one of the text's can make the text's place ambiguous:
  // the spans must be in order for one of the places.
  std::string error;
  for (std::size_t at : positions) {
    error = plain_span_error(with_offsets, at, plain.size());
    if (error.empty()) return with_offsets;
  }
  FUZZ_CHECK(false, error);
  return with_offsets;
}

// What any tokenizer that loaded without an error must do: special ids in range, every id
// has a token string, encodings hold only ids in range with one type id per token, and
// decoding any ids in range works. `extra_text` (a part of the fuzz input) is encoded too.
inline void check_tokenizer(const Tokenizer& tokenizer, std::string_view extra_text) {
  const int vocab_size = tokenizer.vocab_size();
  FUZZ_CHECK(vocab_size >= 0, "negative vocab_size " + std::to_string(vocab_size));
  auto in_range = [&](int id) { return id >= 0 && id < vocab_size; };
  if (auto eos = tokenizer.eos_id()) FUZZ_CHECK(in_range(*eos), "eos id " + std::to_string(*eos));
  if (auto mask = tokenizer.mask_id()) {
    FUZZ_CHECK(in_range(*mask), "mask id " + std::to_string(*mask));
  }
  // The first ids and the last one (a sparse vocabulary can be large and mostly holes).
  std::vector<int> ids;
  for (int id = 0; id < std::min(vocab_size, 1 << 16); ++id) ids.push_back(id);
  if (vocab_size > (1 << 16)) ids.push_back(vocab_size - 1);
  for (int id : ids) {
    (void)tokenizer.token_string(id);
    (void)tokenizer.is_special(id);
  }
  (void)tokenizer.decode(ids, false);
  (void)tokenizer.decode(ids, true);

  for (std::string_view text : {kSampleText, extra_text}) {
    Encoding encoding;
    try {
      encoding = tokenizer.encode(text);
    } catch (const Error&) {
      continue;  // e.g. a character the vocabulary cannot express, and no unknown token
    }
    FUZZ_CHECK(encoding.type_ids.size() == encoding.ids.size(),
               std::to_string(encoding.ids.size()) + " ids but " +
                   std::to_string(encoding.type_ids.size()) + " type ids");
    for (int id : encoding.ids) FUZZ_CHECK(in_range(id), "encode gave id " + std::to_string(id));
    (void)tokenizer.decode(encoding.ids, false);
    (void)tokenizer.decode(encoding.ids, true);
    check_offsets(tokenizer.offsets(), tokenizer, text, encoding);
  }
}

}  // namespace attn::fuzz
