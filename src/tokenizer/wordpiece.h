#pragma once

#include <filesystem>
#include <memory>

#include "src/tokenizer/tokenizer.h"

namespace attn {

// Loads BERT WordPiece from model_dir: vocab.txt + tokenizer_config.json when vocab.txt exists,
// else tokenizer.json (model.vocab, normalizer.lowercase / strip_accents / handle_chinese_chars,
// added_tokens). The result tokenizes exactly like Hugging Face's slow BertTokenizer.
//
// Beyond Hugging Face's encode(): when no pair is given but the text contains a literal [SEP]
// followed by more tokens, everything after that first [SEP] gets token type 1, so "a [SEP] b"
// is encoded like the pair ("a", "b").
std::unique_ptr<Tokenizer> load_wordpiece_tokenizer(const std::filesystem::path& model_dir);

}  // namespace attn
