#pragma once

#include <filesystem>
#include <memory>

#include "src/tokenizer/tokenizer.h"

namespace attn {

// Loads BERT WordPiece from model_dir's vocab.txt + tokenizer_config.json +
// special_tokens_map.json (the slow tokenizer's files; load_tokenizer reads a folder's
// tokenizer.json instead whenever it has one). The result tokenizes exactly like Hugging Face's
// slow BertTokenizer: every token of a single text has type id 0, even after a literal [SEP].
std::unique_ptr<Tokenizer> load_wordpiece_tokenizer(const std::filesystem::path& model_dir);

}  // namespace attn
