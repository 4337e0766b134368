#pragma once

#include <filesystem>
#include <memory>

#include "src/tokenizer/tokenizer.h"

namespace attn {

// Byte-level BPE from model_dir's vocab.json + merges.txt + tokenizer_config.json (the slow
// tokenizer's files; load_tokenizer reads a folder's tokenizer.json instead whenever it has one),
// converted into the tokenizer.json pipeline as transformers converts them for GPT2TokenizerFast,
// or RobertaTokenizerFast (<s> A </s>, <s> A </s></s> B </s>) and Qwen2TokenizerFast (NFC and its
// own pre-tokenizer pattern) when the folder declares that class (declared_tokenizer_class).
// Errors name the file and the problem.
std::unique_ptr<Tokenizer> load_bpe_tokenizer(const std::filesystem::path& model_dir);

}  // namespace attn
