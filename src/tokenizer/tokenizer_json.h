#pragma once

#include <filesystem>
#include <memory>

#include "src/tokenizer/tokenizer.h"

namespace attn {

// The tokenizer that a folder's tokenizer.json describes, run component by component as Hugging
// Face's tokenizers library runs it (src/tokenizer/pipeline/): added tokens, normalizer,
// pre-tokenizer, model, post-processor, decoder. What Python transformers changes on top of the
// library is read from tokenizer_config.json: the named special tokens (eos, mask, ...), the
// BOS/EOS template of the Llama and Gemma classes (add_bos_token, add_eos_token), and
// clean_up_tokenization_spaces on decode.
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::filesystem::path& model_dir);

}  // namespace attn
