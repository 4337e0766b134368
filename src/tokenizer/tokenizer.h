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

// The output of encoding: token ids and, for encoders that take sentence pairs, the segment
// (token type) of each token. type_ids has the same length as ids (all 0 when not a pair).
struct Encoding {
  std::vector<int> ids;
  std::vector<int> type_ids;
};

// One interface for every tokenizer family (GPT-2 byte-level BPE, BERT WordPiece, Llama
// SentencePiece). Implementations must be token-for-token identical to Hugging Face's.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text -> ids with the model's default special tokens, as Hugging Face's tokenizer.encode():
  // GPT-2 adds nothing, BERT adds [CLS] ... [SEP] (and [SEP] after the pair when given).
  // Special tokens written literally in the text (e.g. "<|endoftext|>", "[MASK]") are single
  // tokens. Throws Error when a pair is given to a tokenizer that has no notion of pairs.
  virtual Encoding encode(std::string_view text,
                          std::optional<std::string_view> pair = std::nullopt) const = 0;

  // Ids -> text, as Hugging Face's tokenizer.decode(ids, skip_special_tokens) with the
  // tokenizer's own clean_up_tokenization_spaces setting. For GPT-2 the result is raw bytes
  // (one token may end in the middle of a UTF-8 character).
  virtual std::string decode(std::span<const int> ids, bool skip_special_tokens) const = 0;

  // What `id` adds to the text when it follows previous_ids: decode(previous_ids + id, true)
  // minus decode(previous_ids, true), for printing generated text token by token (a
  // SentencePiece "▁" is a space or not depending on what came before). Characters spelled by
  // several tokens (GPT-2 bytes, SentencePiece <0xNN> pieces) come out as their raw bytes, one
  // token at a time; the caller holds back incomplete UTF-8.
  virtual std::string decode_continuation(std::span<const int> previous_ids, int id) const = 0;

  // The vocabulary entry of an id as Hugging Face's convert_ids_to_tokens shows it
  // ("Ġthe", "##ing", "[MASK]").
  virtual std::string token_string(int id) const = 0;

  virtual int vocab_size() const = 0;

  // Well-known special tokens, when the tokenizer has them.
  virtual std::optional<int> eos_id() const = 0;
  virtual std::optional<int> mask_id() const = 0;
  virtual bool is_special(int id) const = 0;
};

// Loads the tokenizer whose files a Hugging Face model folder ships, the first found of:
// tokenizer.model (SentencePiece), vocab.json + merges.txt (byte-level BPE), vocab.txt
// (WordPiece), tokenizer.json (byte-level BPE or WordPiece, as its model.type says). Errors name
// the file and what is wrong, or the files looked for when there is none.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir);

// The content of a bos/eos/unk/pad entry of tokenizer_config.json or special_tokens_map.json:
// a string, an AddedToken object ({"content": ...}), or null for none. `where` names the file
// and key in the error for anything else.
std::optional<std::string> named_token_content(const nlohmann::json& value,
                                               const std::string& where);

// transformers' PreTrainedTokenizerBase.clean_up_tokenization (clean_up_tokenization_spaces):
// " ." -> ".", " n't" -> "n't", and so on, in its order.
std::string clean_up_tokenization(std::string text);

}  // namespace attn
