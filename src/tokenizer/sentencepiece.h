#pragma once

#include <filesystem>
#include <memory>

#include "src/tokenizer/tokenizer.h"

namespace attn {

// Loads a Llama-style SentencePiece tokenizer from model_dir: tokenizer.model (run by Debian's
// libsentencepiece) with Hugging Face's LlamaTokenizer behaviour on top, configured by
// tokenizer_config.json and special_tokens_map.json when present: BOS (add_bos_token) and EOS
// (add_eos_token) added, added and special tokens written in the text split out first, each
// piece of text between them encoded on its own (legacy: true, the default, gives each its own
// dummy-prefix space; legacy: false only the start of the text), and decoding as
// LlamaTokenizer.decode does. Errors name the file and the problem:
// "<dir>/tokenizer.model: not a SentencePiece model (...)".
std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const std::filesystem::path& model_dir);

}  // namespace attn
