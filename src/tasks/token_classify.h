#pragma once

// Named entities as Hugging Face's TokenClassificationPipeline (transformers 4.45) finds them in
// a token classifier's logits: per-token labels and scores, or entity groups by one of its
// aggregation strategies, with character offsets into the text.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/tokenizer/tokenizer.h"

namespace attn {

// The pipeline's aggregation_strategy.
enum class Aggregation {
  kNone,     // every token with its best label
  kSimple,   // consecutive tokens grouped by their B-/I- labels
  kFirst,    // words take the label of their first token, then grouped
  kAverage,  // words take the best label of their tokens' mean scores, then grouped
  kMax,      // words take the label of their most confident token, then grouped
};

// A token (kNone) or a group of tokens (the others), with the pipeline's fields.
struct Entity {
  std::string label;  // the pipeline's "entity" (kNone) or "entity_group" (without "B-"/"I-")
  float score = 0;
  int index = 0;  // the position of the (first) token among the input's ids ([CLS] is 0);
                  // the pipeline reports it for kNone only
  std::string word;
  CharSpan span;  // start, end in code points
};

// One input of a token classifier.
struct TokenLogits {
  std::string_view text;              // the text that was tokenized (UTF-8)
  std::span<const int> ids;           // its ids, special tokens included
  std::span<const float> logits;      // (ids, labels) row-major
  std::span<const CharSpan> offsets;  // one per id
};

// The pipeline's postprocess: softmax per token (in float32, as its numpy code), special tokens
// skipped, tokens aggregated as `aggregation` says, and entities whose label is in ignore_labels
// left out.
std::vector<Entity> find_entities(const TokenLogits& input, const Tokenizer& tokenizer,
                                  const TokenOffsets& offsets,
                                  const std::vector<std::string>& labels, Aggregation aggregation,
                                  const std::vector<std::string>& ignore_labels);

// The part of a UTF-8 text that code points [span.start, span.end) cover, as Python's
// text[start:end].
std::string_view text_slice(std::string_view text, CharSpan span);

}  // namespace attn
