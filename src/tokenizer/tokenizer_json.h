#pragma once

#include <array>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "src/tokenizer/special_tokens.h"
#include "src/tokenizer/tokenizer.h"
#include "src/tokenizer/tokenizer_files.h"

namespace attn {

// The tokenizer that a folder's tokenizer.json describes, run component by component as Hugging
// Face's tokenizers library runs it (src/tokenizer/pipeline/): added tokens, normalizer,
// pre-tokenizer, model, post-processor, decoder. What Python transformers changes on top of the
// library is read from tokenizer_config.json: the named special tokens (eos, mask, ...), the
// BOS/EOS template of the Llama and Gemma classes (add_bos_token, add_eos_token), and
// clean_up_tokenization_spaces on decode.
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::filesystem::path& model_dir);

// The named tokens' texts (NamedToken's order) as transformers' class sets them from
// tokenizer_config.json, special_tokens_map.json and the class's defaults; unset: none.
using NamedTokenTexts = std::array<std::optional<std::string>, kNamedTokenCount>;

// A slow folder's files converted into a tokenizer.json description, as transformers'
// convert_slow_tokenizer.py builds the fast tokenizer from them: given the named tokens, the
// pipeline object ("normalizer", "pre_tokenizer", "model", ...).
using SlowFilesConverter = std::function<nlohmann::json(const NamedTokenTexts& named)>;

// The tokenizer a slow folder's files make once converted, run by the same pipeline as
// tokenizer.json with the same settings from the folder's `files` (read once by the caller).
// `main_file` names the slow file in errors; `default_class` is the class whose defaults apply
// when the folder names none (e.g. "BertTokenizer" for vocab.txt).
std::unique_ptr<Tokenizer> load_converted_tokenizer(const TokenizerFiles& files,
                                                    const std::filesystem::path& main_file,
                                                    std::string_view default_class,
                                                    const SlowFilesConverter& convert);

}  // namespace attn
