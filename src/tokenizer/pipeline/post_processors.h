#pragma once

// tokenizer.json's "post_processor": TemplateProcessing, BertProcessing, RobertaProcessing,
// ByteLevel, Sequence — the special tokens around one sequence or a pair, and their type ids.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/tokenizer/pipeline/config_node.h"
#include "src/tokenizer/tokenizer.h"

namespace attn::pipeline {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // The final encoding of `first` (and `second`, for a pair), whose type_ids are all 0 on
  // entry, as the library's PostProcessor::process does with add_special_tokens.
  // When the encodings carry offsets (one per id), the tokens it adds span {0, 0}.
  virtual Encoding process(Encoding first, std::optional<Encoding> second,
                           bool add_special_tokens) const = 0;

  // Whether a step trims the offsets of byte-level tokens to leave out their spaces
  // (ByteLevel's and RobertaProcessing's trim_offsets), and the add_prefix_space that step
  // reads. The library trims inside process(); attn's caller trims the sequence's offsets
  // before it (trim_byte_level_offsets), which is the same, since the tokens a post-processor
  // adds span {0, 0}.
  struct OffsetTrim {
    bool add_prefix_space = false;
  };
  virtual std::optional<OffsetTrim> offset_trim() const = 0;
};

// The library's byte_level::process_offsets: each token's span loses the characters its text
// (`tokens[i]`) begins and ends with that are a space, written as a space or as byte-level
// 'Ġ'; the first token keeps a single leading space that add_prefix_space put there.
void trim_byte_level_offsets(std::span<const std::string_view> tokens,
                             std::vector<CharSpan>& offsets, bool add_prefix_space);

std::unique_ptr<PostProcessor> make_post_processor(const ConfigNode& node);

// What the library does without a post-processor: the pair's ids appended, type ids 0 and 1.
Encoding default_post_process(Encoding first, std::optional<Encoding> second);

}  // namespace attn::pipeline
