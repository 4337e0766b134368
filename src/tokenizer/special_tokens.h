#pragma once

// Added and special tokens as transformers (4.40) reads them from a model folder's files, for the
// converters, the tokenizer.json loader and the chat templates: tokenizer_config.json's
// added_tokens_decoder, added_tokens.json, the named tokens and the classes' defaults.

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
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

}  // namespace attn
