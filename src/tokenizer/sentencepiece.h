#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/tokenizer/sentencepiece_model.h"
#include "src/tokenizer/tokenizer.h"
#include "src/tokenizer/tokenizer_files.h"

namespace attn {

// The folder's SentencePiece model, the first found of tokenizer.model (LlamaTokenizer),
// spiece.model (AlbertTokenizer or T5Tokenizer) and sentencepiece.bpe.model
// (XLMRobertaTokenizer).
std::optional<std::filesystem::path> sentencepiece_model_file(
    const std::filesystem::path& model_dir);

// Loads a SentencePiece tokenizer from model_dir: the model file's ModelProto converted into the
// tokenizer.json pipeline as transformers' converter of the class builds the fast tokenizer
// (load_converted_tokenizer), configured by tokenizer_config.json, special_tokens_map.json and
// added_tokens.json when present:
//  - LlamaTokenizer (tokenizer.model; LlamaConverter): BPE or Unigram with byte fallback; legacy
//    (default true) prepends "▁" to every piece of text between added tokens and writes spaces as
//    "▁", legacy: false prepends it only at the start (Metaspace, prepend_scheme "first"); BOS
//    (add_bos_token) and EOS (add_eos_token) added;
//  - GemmaTokenizer (tokenizer.model; GemmaConverter): spaces as "▁", byte fallback;
//  - AlbertTokenizer (spiece.model; AlbertConverter): `` and '' as ", NFKD and accents stripped
//    (keep_accents: false), lower-cased (do_lower_case), the model's character map, spaces
//    collapsed; "9," pieces scored 100 lower; [CLS] A [SEP] (B [SEP]), type ids 0 then 1;
//  - XLMRobertaTokenizer (sentencepiece.bpe.model; XLMRobertaConverter): fairseq's ids (<s> 0,
//    <pad> 1, </s> 2, <unk> 3, piece i at i + 1, <mask> last); <s> A </s> (</s> B </s>);
//  - T5Tokenizer (spiece.model, when the folder declares it; T5Converter): A </s> (B </s>);
//    extra_ids (100) sentinels <extra_id_N>, special, with the ids after the pieces,
//    <extra_id_0> the last.
// Where the slow class, which made the goldens, differs from the converted fast one, attn
// follows it (see the README). The folder may not declare another class (declared_tokenizer_
// class). Errors name the file and the problem: "<dir>/spiece.model: not a SentencePiece model
// (...)".
std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const std::filesystem::path& model_dir);

// The tokenizer class that reads `model_file` of the folder: the folder's declared class
// (files.class_name) when it is one of `classes`, classes[0] when the folder declares none and
// first_is_default. Otherwise an Error naming model_file: "<file>: the folder's tokenizer class
// is X; attn reads spiece.model with AlbertTokenizer or T5Tokenizer only".
std::string sentencepiece_class(const TokenizerFiles& files,
                                const std::filesystem::path& model_file,
                                std::span<const std::string_view> classes, bool first_is_default);

// The folder's tokenizer_config.json, refused when it passes options to the library
// (sp_model_kwargs), which would make the encoding differ from attn's.
const nlohmann::json& sentencepiece_tokenizer_config(const TokenizerFiles& files);

// The parts of the converted pipeline that the Marian converter shares:
//  - the model: Unigram over `vocab_scores` (model_type 1), else BPE with the merges
//    SentencePieceExtractor derives from the scores (2);
//  - SpmConverter.normalizer: the model's character map, a space at the end dropped, runs of
//    spaces made one "▁";
//  - the Metaspace pre-tokenizer (and decoder) with "▁";
//  - the decoder of the classes whose convert_tokens_to_string strips the text: Metaspace, Fuse,
//    then every space off both ends.
nlohmann::json sentencepiece_model_json(
    const SentencePieceProto& proto,
    const std::vector<std::pair<std::string, double>>& vocab_scores, int unk_id,
    bool byte_fallback);
nlohmann::json sentencepiece_normalizer(const SentencePieceProto& proto);
nlohmann::json sentencepiece_metaspace(std::string_view prepend_scheme, bool split);
nlohmann::json sentencepiece_stripping_decoder(std::string_view prepend_scheme);

// U+2581, SentencePiece's stand-in for a space inside pieces.
inline constexpr std::string_view kSentencePieceSpace = "\xE2\x96\x81";

// Appends `text` to `out` with each of SentencePiece's space symbols written as a space.
void append_with_spaces(std::string& out, std::string_view text);

}  // namespace attn
