#pragma once

#include <filesystem>
#include <memory>

#include "src/tokenizer/tokenizer.h"

namespace attn {

// BERT's WordPiece from model_dir's vocab.txt + tokenizer_config.json + special_tokens_map.json
// (the slow tokenizer's files; load_tokenizer reads a folder's tokenizer.json instead whenever it
// has one), converted into the tokenizer.json pipeline as transformers converts it for
// BertTokenizerFast (DistilBERT's, MPNet's).
std::unique_ptr<Tokenizer> load_wordpiece_tokenizer(const std::filesystem::path& model_dir);

}  // namespace attn
