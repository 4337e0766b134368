#pragma once

#include <filesystem>
#include <memory>

#include "src/tokenizer/tokenizer.h"

namespace attn {

// Loads GPT-2 byte-level BPE from model_dir's vocab.json + merges.txt (the slow tokenizer's
// files; load_tokenizer reads a folder's tokenizer.json instead whenever it has one).
// tokenizer_config.json, when present, supplies the added tokens (added_tokens_decoder), the
// named special tokens and add_prefix_space. The result encodes token-for-token like Hugging
// Face's slow GPT2Tokenizer, or RobertaTokenizer when the folder declares that class
// (declared_tokenizer_class): <s> A </s> around the text, <s> A </s></s> B </s> for pairs, a mask
// token, and transformers' decode(). Errors name the file and the problem.
std::unique_ptr<Tokenizer> load_bpe_tokenizer(const std::filesystem::path& model_dir);

}  // namespace attn
