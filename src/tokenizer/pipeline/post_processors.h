#pragma once

// tokenizer.json's "post_processor": TemplateProcessing, BertProcessing, RobertaProcessing,
// ByteLevel, Sequence — the special tokens around one sequence or a pair, and their type ids.

#include <memory>
#include <optional>

#include "src/tokenizer/pipeline/config_node.h"
#include "src/tokenizer/tokenizer.h"

namespace attn::pipeline {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // The final encoding of `first` (and `second`, for a pair), whose type_ids are all 0 on
  // entry, as the library's PostProcessor::process does with add_special_tokens.
  virtual Encoding process(Encoding first, std::optional<Encoding> second,
                           bool add_special_tokens) const = 0;
};

std::unique_ptr<PostProcessor> make_post_processor(const ConfigNode& node);

// What the library does without a post-processor: the pair's ids appended, type ids 0 and 1.
Encoding default_post_process(Encoding first, std::optional<Encoding> second);

}  // namespace attn::pipeline
