#pragma once

// tokenizer.json's "pre_tokenizer": Split, ByteLevel, Metaspace, Whitespace, WhitespaceSplit,
// BertPreTokenizer, Punctuation, Digits, Sequence — as the tokenizers library's pre_tokenizers
// module defines them.

#include <memory>
#include <vector>

#include "src/tokenizer/pipeline/config_node.h"
#include "src/tokenizer/pipeline/piece.h"

namespace attn::pipeline {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits (and, for ByteLevel and Metaspace, rewrites) one piece, appending the resulting
  // pieces to `out`; empty pieces are never appended (the library drops them).
  virtual void pre_tokenize(const Piece& piece, std::vector<Piece>& out) const = 0;
};

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const ConfigNode& node);

// ByteLevel's table: byte b -> the character GPT-2 writes it as (printable bytes stand for
// themselves; the others map to U+0100 upward), as UTF-8.
const std::string& byte_level_char(unsigned char byte);

}  // namespace attn::pipeline
