#pragma once

// Added and special tokens as transformers' slow tokenizers (4.40) handle them, shared by the
// byte-level BPE and SentencePiece tokenizers: what a model folder's files say about them, how
// they are cut out of the text, and the special tokens a tokenizer class wraps its sequences in.

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "src/tokenizer/tokenizer.h"
#include "src/tokenizer/tokenizer_files.h"

namespace attn {

// A token cut out of the text before the model sees it (an added token or a special token), with
// the flags of transformers' AddedToken that attn honours.
struct AddedToken {
  std::string content;
  int id = -1;           // -1 until the vocabulary is known (a named token's id is looked up)
  bool special = false;  // in all_special_ids: dropped by decode(skip_special_tokens=True)
  bool lstrip = false;   // eats the whitespace before it: "the <mask>" -> "the", "<mask>"
  bool rstrip = false;   // eats the whitespace after it
  // The fast tokenizer's flags, which the slow ones do not read: matched in the normalized text
  // (unset: when not special), and only where no word character touches it.
  std::optional<bool> normalized = std::nullopt;
  bool single_word = false;
};

// Token ids past this are refused as soon as they are read, so that they fit an int and cannot
// make a table sized by them huge; the real bound is the size of the vocabulary.
constexpr std::int64_t kMaxTokenId = (std::int64_t{1} << 24) - 1;

// The special-token attributes of transformers' tokenizers that attn reads.
enum class NamedToken { kBos, kEos, kUnk, kSep, kPad, kCls, kMask };
constexpr std::size_t kNamedTokenCount = 7;
// Their keys in tokenizer_config.json and special_tokens_map.json, in NamedToken's order.
constexpr const char* kNamedTokenKeys[kNamedTokenCount] = {
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"};

// A named token as a class's constructor makes it from a string: special, lstrip as given.
AddedToken special_token(std::string content, bool lstrip = false);

// A tokenizer class's named tokens as its constructor sets them (text and flags; absent: none),
// e.g. RobertaTokenizer's mask_token "<mask>" with lstrip.
using NamedTokenDefaults = std::map<NamedToken, AddedToken>;

// What a model folder says about its added and special tokens, read as transformers 4.40's
// from_pretrained reads it: the added tokens of tokenizer_config.json (added_tokens_decoder) and
// its named tokens, each a string (which keeps the class default's flags), an AddedToken object
// (with its own flags) or null (none); when tokenizer_config.json has no added_tokens_decoder
// (the older format), special_tokens_map.json overrides the named tokens and added_tokens.json
// ({content: id}) gives the added tokens, neither lstrip nor rstrip, special when named so.
struct SpecialTokenConfig {
  std::vector<AddedToken> added_tokens;  // ids known
  std::array<std::optional<AddedToken>, kNamedTokenCount> named;
  // Where each named token comes from, for errors: "<file>" or "<dir> (RobertaTokenizer's
  // default)".
  std::array<std::string, kNamedTokenCount> named_where;
  std::vector<std::string> additional_special_tokens;
};

// The named tokens of a transformers tokenizer class when the folder's files do not name them:
// its __init__'s defaults, the same in the slow and the fast class (e.g. BertTokenizer's
// mask_token "[MASK]", RobertaTokenizer's "<mask>" with lstrip). `class_name` without "Fast";
// empty for a class attn does not know.
NamedTokenDefaults class_named_token_defaults(std::string_view class_name);

// tokenizer_config.json's added_tokens_decoder ({"50261": {"content": "<mask>", "lstrip": true,
// ...}, ...}) in the order of its ids, every entry checked as transformers checks it: the key a
// token id, the value an object with a non-empty string "content" and boolean flags. Empty when
// the config has none. `file` names the config in errors.
std::vector<AddedToken> read_added_tokens_decoder(const nlohmann::json& config,
                                                  const std::string& file);

// added_tokens.json ({"<extra_id_0>": 32099, ...}), the older record of the added tokens, which
// transformers reads for folders without added_tokens_decoder: each neither lstrip nor rstrip,
// special (and then not normalized) when `is_special` says so; in the order of their ids.
std::vector<AddedToken> read_added_tokens_json(
    const std::filesystem::path& path, const std::function<bool(const std::string&)>& is_special);

// `class_name` names the class whose defaults apply, in errors.
SpecialTokenConfig read_special_token_config(const TokenizerFiles& files,
                                             const NamedTokenDefaults& defaults,
                                             std::string_view class_name);

// The model's own id of a token text, without the added tokens (nullopt: not in the vocabulary).
using VocabularyLookup = std::function<std::optional<int>(const std::string&)>;

// The added and special tokens of a tokenizer, with their ids: what transformers' tokenizer
// holds after its __init__ has added the special tokens to its added tokens.
class SpecialTokens {
 public:
  // Named and additional special tokens are the added token with the same text (flags and all),
  // else get the id vocabulary(text). One found in neither is dropped (transformers would append it
  // to the vocabulary, where the model has no embedding for it), except the mask token, which is
  // refused with an Error naming the file and the token.
  SpecialTokens(const SpecialTokenConfig& config, const VocabularyLookup& vocabulary);

  std::optional<int> id(NamedToken token) const { return ids_[index(token)]; }
  // The id of a named token the tokenizer cannot do without (e.g. the [CLS] of its template);
  // an Error naming where the token was named when it is not in the vocabulary.
  int required_id(NamedToken token) const;

  // Every added and special token, longest first: what split_added_tokens cuts out of the text.
  const std::vector<AddedToken>& split_tokens() const { return split_tokens_; }
  // The added token with this text, if any (convert_tokens_to_ids looks there first).
  std::optional<int> added_token_id(const std::string& content) const;
  // all_special_ids / all_special_tokens: named, additional and added tokens marked special.
  bool is_special(int id) const { return special_ids_.contains(id); }
  bool is_special_text(const std::string& content) const {
    return special_texts_.contains(content);
  }

 private:
  static std::size_t index(NamedToken token) { return static_cast<std::size_t>(token); }

  std::array<std::optional<int>, kNamedTokenCount> ids_;
  std::array<std::string, kNamedTokenCount> missing_;  // the errors of required_id
  std::vector<AddedToken> split_tokens_;
  std::unordered_map<std::string, int> added_ids_;
  std::unordered_set<int> special_ids_;
  std::unordered_set<std::string> special_texts_;
};

// A piece of the text between added tokens, or an added token.
struct TextSegment {
  std::string_view text;
  const AddedToken* token = nullptr;  // null for text
};

// PreTrainedTokenizer.tokenize's first step: cuts the added tokens out of `text` (the earliest
// occurrence of any; of those starting there, the longest, as `tokens` are longest first), then
// lets each eat the whitespace beside it when it is lstrip / rstrip (Python's str.rstrip() of the
// text before it, str.lstrip() of the text after it). Text segments may be empty. `text` must be
// valid UTF-8.
std::vector<TextSegment> split_added_tokens(std::string_view text,
                                            std::span<const AddedToken> tokens);

// PreTrainedTokenizer._decode (transformers 4.40): the tokenizer's token strings of the ids
// (convert_ids_to_tokens; the special ones dropped when skip_special_tokens), of which those in
// `own_texts` (its "legacy added tokens": added tokens that are not special, and additional
// special tokens past the class's vocab_size) are written as they are, and the runs of other
// tokens between them go through the class's convert_tokens_to_string (`tokens_to_string`); the
// texts are joined with a space when spaces_between_special_tokens, then cleaned up
// (clean_up_tokenization) when clean_up_tokenization_spaces.
struct DecodeJoining {
  bool spaces_between_special_tokens = true;
  bool clean_up_tokenization_spaces = true;
};
std::string decode_token_runs(
    const Tokenizer& tokenizer, std::span<const int> ids, bool skip_special_tokens,
    const std::unordered_set<std::string>& own_texts,
    const std::function<std::string(const std::vector<std::string>&)>& tokens_to_string,
    DecodeJoining joining);

}  // namespace attn
