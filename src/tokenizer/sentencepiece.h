#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include "src/tokenizer/tokenizer.h"

namespace attn {

// The folder's SentencePiece model, the first found of tokenizer.model (LlamaTokenizer),
// spiece.model (AlbertTokenizer) and sentencepiece.bpe.model (XLMRobertaTokenizer).
std::optional<std::filesystem::path> sentencepiece_model_file(
    const std::filesystem::path& model_dir);

// Loads a SentencePiece tokenizer from model_dir: the model file (run by Debian's
// libsentencepiece) with the behaviour of the Hugging Face class that reads it on top,
// configured by tokenizer_config.json and special_tokens_map.json when present. All three cut
// added and special tokens written in the text out first (an lstrip mask token eats the space
// before it) and encode each piece of text between them on its own; then
//  - LlamaTokenizer (tokenizer.model): BOS (add_bos_token) and EOS (add_eos_token) added;
//    legacy: true, the default, gives each piece of text its own dummy-prefix space, legacy:
//    false only the start of the text; byte fallback;
//  - AlbertTokenizer (spiece.model): the text lower-cased (do_lower_case), spaces collapsed
//    (remove_space), accents stripped (keep_accents: false), "9," pieces re-split;
//    [CLS] A [SEP] (B [SEP]), type ids 0 then 1;
//  - XLMRobertaTokenizer (sentencepiece.bpe.model): fairseq's ids (<s> 0, <pad> 1, </s> 2,
//    <unk> 3, piece i at i + 1, <mask> last); <s> A </s> (</s> B </s>), type ids 0;
// and decoding as the class's decode() does. The folder may not declare another class
// (declared_tokenizer_class). Errors name the file and the problem:
// "<dir>/spiece.model: not a SentencePiece model (...)".
std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const std::filesystem::path& model_dir);

}  // namespace attn
