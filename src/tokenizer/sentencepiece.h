#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "src/tokenizer/tokenizer.h"

namespace attn {

// The folder's SentencePiece model, the first found of tokenizer.model (LlamaTokenizer),
// spiece.model (AlbertTokenizer or T5Tokenizer) and sentencepiece.bpe.model
// (XLMRobertaTokenizer).
std::optional<std::filesystem::path> sentencepiece_model_file(
    const std::filesystem::path& model_dir);

// Loads a SentencePiece tokenizer from model_dir: the model file (run by Debian's
// libsentencepiece) with the behaviour of the Hugging Face class that reads it on top,
// configured by tokenizer_config.json and special_tokens_map.json when present. All four cut
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
//  - T5Tokenizer (spiece.model, when the folder declares it): A </s> (B </s>), no second </s>
//    after a sequence that ends with one, type ids 0; extra_ids (100) sentinels <extra_id_N>,
//    additional special tokens with the ids after the pieces, <extra_id_0> the last; legacy and
//    add_prefix_space as LlamaTokenizer's. (transformers marks the sentinels it makes itself
//    single_word, which attn does not implement: a sentinel written against a word, as in
//    "word<extra_id_0>", is a token of its own in attn, glued to the word by transformers' slow
//    tokenizer. Folders that list their added tokens, as save_pretrained writes them, are not
//    affected.)
// and decoding as the class's decode() does. The folder may not declare another class
// (declared_tokenizer_class). Errors name the file and the problem:
// "<dir>/spiece.model: not a SentencePiece model (...)".
std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const std::filesystem::path& model_dir);

// The tokenizer class that reads `model_file` of model_dir: the folder's declared class
// (declared_tokenizer_class) when it is one of `classes`, classes[0] when the folder declares none
// and first_is_default. Otherwise an Error naming model_file: "<file>: the folder's tokenizer
// class is X; attn reads spiece.model with AlbertTokenizer or T5Tokenizer only".
std::string sentencepiece_class(const std::filesystem::path& model_dir,
                                const std::filesystem::path& model_file,
                                std::span<const std::string_view> classes, bool first_is_default);

// model_dir's tokenizer_config.json (an empty object when there is none), refused when it is not
// an object or passes options to the library (sp_model_kwargs), which would make the encoding
// differ from attn's.
nlohmann::json read_sentencepiece_tokenizer_config(const std::filesystem::path& model_dir);

// U+2581, SentencePiece's stand-in for a space inside pieces.
inline constexpr std::string_view kSentencePieceSpace = "\xE2\x96\x81";

// Appends `text` to `out` with each of SentencePiece's space symbols written as a space.
void append_with_spaces(std::string& out, std::string_view text);

}  // namespace attn
