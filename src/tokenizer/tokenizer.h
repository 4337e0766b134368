#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// [start, end) of a token in the text it came from, in Unicode code points (the indices of a
// Python str, as Hugging Face's offsets count them).
struct CharSpan {
  int start = 0;
  int end = 0;
  bool operator==(const CharSpan&) const = default;
};

// The output of encoding: token ids and, for encoders that take sentence pairs, the segment
// (token type) of each token. type_ids has the same length as ids (all 0 when not a pair).
struct Encoding {
  std::vector<int> ids;
  std::vector<int> type_ids;
  // Each id's [start, end) in Unicode code points of its text ({0, 0} for a special token the
  // post-processor adds) when offsets were asked for (TokenOffsets), else empty.
  std::vector<CharSpan> offsets = {};
};

// What Hugging Face's token-classification pipeline asks of a fast tokenizer beyond ids: where
// each token comes from and how tokens join into a word. Every tokenizer of attn can tell.
class TokenOffsets {
 public:
  virtual ~TokenOffsets() = default;

  // encode(text) (one text, no pair) with each id's span of `text` in `offsets`, as the fast
  // tokenizer's return_offsets_mapping=True gives it: {0, 0} for the special tokens encode() adds
  // around the text; a word that became the unknown token spans the whole word; characters the
  // tokenizer changed (lower-cased, accents stripped) map back to the characters they came from.
  virtual Encoding encode_with_offsets(std::string_view text) const = 0;
  std::vector<CharSpan> token_offsets(std::string_view text) const {
    return encode_with_offsets(text).offsets;
  }

  // The fast tokenizer's convert_tokens_to_string (its decoder): the text the pipeline shows
  // for tokens grouped into a word or an entity (WordPiece: "le", "##an" -> "lean").
  virtual std::string tokens_to_string(std::span<const std::string> tokens) const = 0;

  // The unknown token, whose word the pipeline shows as the text it covers.
  virtual int unk_id() const = 0;

  // Whether the model marks the pieces inside a word (a continuing-subword prefix, WordPiece's
  // "##"): the pipeline then tells a subword by its spelling, else by the spaces around it.
  virtual bool word_aware() const = 0;
};

// One interface for every tokenizer family (byte-level BPE: GPT-2, RoBERTa; WordPiece: BERT,
// DistilBERT; SentencePiece: Llama, ALBERT, XLM-RoBERTa, T5, Marian). Implementations must be
// token-for-token identical to Hugging Face's: the fast tokenizer for tokenizer.json, the slow
// class for the other files.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text -> ids with the model's default special tokens, as Hugging Face's tokenizer.encode():
  // GPT-2 adds nothing, BERT and ALBERT add [CLS] A [SEP] (B [SEP]), RoBERTa and XLM-R
  // <s> A </s> (</s> B </s>), Llama BOS A (BOS B), T5 A </s> (B </s>), Marian A (B) </s>.
  // Special tokens written literally in the text (e.g. "<|endoftext|>", "[MASK]") are single
  // tokens. Throws Error when a pair is given to a tokenizer that has no notion of pairs.
  virtual Encoding encode(std::string_view text,
                          std::optional<std::string_view> pair = std::nullopt) const = 0;

  // The encoding of decoder-side text (a translation, a sequence-to-sequence model's output), as
  // Hugging Face's tokenizer(text_target=text) encodes labels. The same as encode(text) except
  // for a tokenizer with a model of its own for the target side: Marian encodes with target.spm
  // (and source.spm in encode()).
  virtual Encoding encode_target(std::string_view text) const { return encode(text); }

  // The ids of one text without the special tokens encode() puts around it, as Hugging Face's
  // encode(text, add_special_tokens=False): special-token strings written in the text are still
  // single tokens.
  virtual std::vector<int> encode_plain(std::string_view text) const = 0;

  // Ids -> text, as Hugging Face's tokenizer.decode(ids, skip_special_tokens) with the
  // tokenizer's own clean_up_tokenization_spaces setting, e.g. decode([id]) is fill-mask's
  // token_str (" ads" for RoBERTa's "Ġads", "rusk" for ALBERT's "▁rusk"). For GPT-2 the result
  // is raw bytes (one token may end in the middle of a UTF-8 character) and never cleaned up.
  virtual std::string decode(std::span<const int> ids, bool skip_special_tokens) const = 0;

  // What `id` adds to the text when it follows previous_ids: decode(previous_ids + id, true)
  // minus decode(previous_ids, true), for printing generated text token by token (a
  // SentencePiece "▁" is a space or not depending on what came before). Characters spelled by
  // several tokens (GPT-2 bytes, SentencePiece <0xNN> pieces) come out as their raw bytes, one
  // token at a time; the caller holds back incomplete UTF-8.
  virtual std::string decode_continuation(std::span<const int> previous_ids, int id) const = 0;

  // What decode_continuation still holds back after the last of `ids` (the start of a character
  // whose other bytes have not come), shown when generation ends as a decode of the whole text
  // shows it. Empty for tokenizers whose continuations are raw bytes.
  virtual std::string decode_held_back(std::span<const int> ids) const {
    (void)ids;
    return {};
  }

  // The vocabulary entry of an id as Hugging Face's convert_ids_to_tokens shows it
  // ("Ġthe", "##ing", "[MASK]").
  virtual std::string token_string(int id) const = 0;

  virtual int vocab_size() const = 0;

  // Well-known special tokens, when the tokenizer has them.
  virtual std::optional<int> eos_id() const = 0;
  virtual std::optional<int> mask_id() const = 0;
  virtual bool is_special(int id) const = 0;

  // Where the tokens of a text come from.
  virtual const TokenOffsets& offsets() const = 0;
};

// Loads the tokenizer whose files a Hugging Face model folder ships, the first found of:
// tokenizer.json (the fast tokenizer, as AutoTokenizer prefers it); source.spm (Marian: with
// target.spm and vocab.json); tokenizer.model (Llama), spiece.model (ALBERT or T5, as the
// folder's tokenizer class says) or sentencepiece.bpe.model (XLM-RoBERTa), all SentencePiece;
// vocab.json + merges.txt (byte-level BPE: GPT-2, or RoBERTa when the folder says so); vocab.txt
// (WordPiece: BERT, DistilBERT). Errors name the file and what is wrong, or the files looked for
// when there is none.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir);

// The slow tokenizer class a model folder asks for, as transformers' AutoTokenizer finds it:
// tokenizer_config.json's tokenizer_class (without a "Fast" suffix), else the class of
// config.json's model_type for the families attn knows ("roberta" -> "RobertaTokenizer");
// nullopt when neither tells.
std::optional<std::string> declared_tokenizer_class(const std::filesystem::path& model_dir);

// A true/false setting of tokenizer_config.json (`file`): `fallback` when absent or null.
bool config_flag(const nlohmann::json& config, const char* key, bool fallback,
                 const std::string& file);

// The content of a bos/eos/unk/pad entry of tokenizer_config.json or special_tokens_map.json:
// a string, an AddedToken object ({"content": ...}), or null for none. `where` names the file
// and key in the error for anything else.
std::optional<std::string> named_token_content(const nlohmann::json& value,
                                               const std::string& where);

// decode(previous_ids + id, true) after what it shares with decode(previous_ids, true): a
// decode_continuation for tokenizers whose decoded text can change before the new token (one
// that strips its text: a space at the end comes and goes with what follows). Decodes twice.
std::string decode_difference(const Tokenizer& tokenizer, std::span<const int> previous_ids,
                              int id);

// transformers' PreTrainedTokenizerBase.clean_up_tokenization (clean_up_tokenization_spaces):
// " ." -> ".", " n't" -> "n't", and so on, in its order.
std::string clean_up_tokenization(std::string text);

}  // namespace attn
