#include "src/tokenizer/pipeline/added_vocabulary.h"

#include <utf8proc.h>

#include <algorithm>
#include <string>

#include "src/base/unicode.h"
#include "src/tokenizer/special_tokens.h"

namespace attn::pipeline {
namespace {

// The code point that ends `text` (valid UTF-8, not empty).
char32_t last_char(std::string_view text) {
  std::size_t start = text.size() - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  utf8proc_int32_t code_point = 0;
  utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + start),
                   static_cast<utf8proc_ssize_t>(text.size() - start), &code_point);
  return static_cast<char32_t>(code_point);
}

// The code point that starts `text` and its length in bytes.
std::pair<char32_t, std::size_t> first_char(std::string_view text) {
  utf8proc_int32_t code_point = 0;
  const utf8proc_ssize_t length =
      utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                       static_cast<utf8proc_ssize_t>(text.size()), &code_point);
  return {static_cast<char32_t>(code_point), static_cast<std::size_t>(std::max<long>(length, 1))};
}

// Where the whitespace that ends `text` begins.
std::size_t trailing_space_start(std::string_view text) {
  std::size_t start = text.size();
  while (start > 0) {
    const std::string_view before = text.substr(0, start);
    const char32_t c = last_char(before);
    if (!is_rust_whitespace(c)) break;
    start -= utf8_length(c);
  }
  return start;
}

// The length of the whitespace that starts `text`.
std::size_t leading_space_length(std::string_view text) {
  std::size_t length = 0;
  while (length < text.size()) {
    const auto [c, size] = first_char(text.substr(length));
    if (!is_rust_whitespace(c)) break;
    length += size;
  }
  return length;
}

}  // namespace

void AddedVocabulary::Trie::insert(std::string_view text, int token_index) {
  if (nodes.empty()) nodes.emplace_back();
  int node = 0;
  for (const char byte : text) {
    const auto key = static_cast<unsigned char>(byte);
    auto& children = nodes[static_cast<std::size_t>(node)].children;
    const auto found =
        std::lower_bound(children.begin(), children.end(), key,
                         [](const auto& child, unsigned char k) { return child.first < k; });
    if (found != children.end() && found->first == key) {
      node = found->second;
      continue;
    }
    const int child = static_cast<int>(nodes.size());
    children.insert(found, {key, child});
    nodes.emplace_back();
    node = child;
  }
  nodes[static_cast<std::size_t>(node)].token_index = token_index;
}

std::optional<std::pair<std::size_t, int>> AddedVocabulary::Trie::longest_at(
    std::string_view text, std::size_t start) const {
  std::optional<std::pair<std::size_t, int>> longest;
  int node = 0;
  for (std::size_t i = start; i < text.size(); ++i) {
    const auto key = static_cast<unsigned char>(text[i]);
    const auto& children = nodes[static_cast<std::size_t>(node)].children;
    const auto found =
        std::lower_bound(children.begin(), children.end(), key,
                         [](const auto& child, unsigned char k) { return child.first < k; });
    if (found == children.end() || found->first != key) break;
    node = found->second;
    const int token_index = nodes[static_cast<std::size_t>(node)].token_index;
    if (token_index >= 0) longest = std::pair{i + 1 - start, token_index};
  }
  return longest;
}

AddedVocabulary::AddedVocabulary(const ConfigNode& node, const Model& model,
                                 const Normalizer* normalizer) {
  const std::size_t count = node.size();
  tokens_.reserve(count);
  // Ids for tokens the model does not have continue after the model's vocabulary, as the
  // library numbers them; the file's own ids are only checked by the library (a warning).
  int next_id = model.vocab_size();
  for (std::size_t i = 0; i < count; ++i) {
    const ConfigNode entry = node.at(i);
    AddedTokenEntry token;
    token.content = entry.string("content");
    entry.integer("id", 0, kMaxTokenId);
    token.special = entry.boolean_or("special", false);
    token.normalized = entry.boolean_or("normalized", !token.special);
    token.lstrip = entry.boolean_or("lstrip", false);
    token.rstrip = entry.boolean_or("rstrip", false);
    token.single_word = entry.boolean_or("single_word", false);
    if (token.content.empty()) continue;  // the library ignores empty tokens
    if (const auto existing = index_of_content_.find(token.content);
        existing != index_of_content_.end()) {
      // A second entry with the same text replaces the first one's flags.
      token.id = tokens_[static_cast<std::size_t>(existing->second)].id;
      tokens_[static_cast<std::size_t>(existing->second)] = token;
      continue;
    }
    const std::optional<int> model_id = model.token_to_id(token.content);
    if (model_id) {
      token.id = *model_id;
    } else {
      if (next_id > kMaxTokenId) entry.fail("too many added tokens");
      token.id = next_id++;
    }
    index_of_content_.emplace(token.content, static_cast<int>(tokens_.size()));
    tokens_.push_back(std::move(token));
  }
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    const AddedTokenEntry& token = tokens_[i];
    index_of_id_[token.id] = static_cast<int>(i);
    id_limit_ = std::max(id_limit_, token.id + 1);
    if (!token.normalized) {
      raw_.insert(token.content, static_cast<int>(i));
      continue;
    }
    std::string form = token.content;
    if (normalizer) normalizer->normalize(form);
    if (!form.empty()) normalized_.insert(form, static_cast<int>(i));
  }
}

std::vector<TextSplit> AddedVocabulary::split(std::string_view text, const Trie& trie) const {
  std::vector<TextSplit> splits;
  if (trie.nodes.empty()) {
    splits.push_back({text});
    return splits;
  }
  std::size_t text_start = 0;  // the end of the last split
  std::size_t position = 0;
  while (position < text.size()) {
    const auto match = trie.longest_at(text, position);
    if (!match) {
      ++position;
      continue;
    }
    std::size_t start = position;
    std::size_t stop = position + match->first;
    position = stop;  // a match that is then discarded still consumes its text
    const AddedTokenEntry& token = tokens_[static_cast<std::size_t>(match->second)];
    if (token.single_word) {
      const bool word_before = start > 0 && is_rust_word_char(last_char(text.substr(0, start)));
      const bool word_after =
          stop < text.size() && is_rust_word_char(first_char(text.substr(stop)).first);
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      // Spaces already taken by the previous token stay with it.
      start = std::max(trailing_space_start(text.substr(0, start)), text_start);
    }
    if (token.rstrip) stop += leading_space_length(text.substr(stop));
    position = stop;
    if (text_start < start) splits.push_back({text.substr(text_start, start - text_start)});
    splits.push_back({text.substr(start, stop - start), token.id});
    text_start = stop;
  }
  if (text_start < text.size()) splits.push_back({text.substr(text_start)});
  return splits;
}

std::optional<int> AddedVocabulary::id_of(std::string_view content) const {
  const auto found = index_of_content_.find(std::string(content));
  if (found == index_of_content_.end()) return std::nullopt;
  return tokens_[static_cast<std::size_t>(found->second)].id;
}

const AddedTokenEntry* AddedVocabulary::token(int id) const {
  const auto found = index_of_id_.find(id);
  return found == index_of_id_.end() ? nullptr : &tokens_[static_cast<std::size_t>(found->second)];
}

bool AddedVocabulary::is_special(int id) const {
  const AddedTokenEntry* entry = token(id);
  return entry && entry->special;
}

}  // namespace attn::pipeline
