#include "src/tokenizer/pipeline/vocabulary.h"

#include <algorithm>
#include <cstdint>

#include "src/io/json_util.h"
#include "src/tokenizer/special_tokens.h"

namespace attn::pipeline {

using nlohmann::json;

int vocabulary_id(const ConfigNode& vocab, const std::string& token, const json& id) {
  constexpr std::int64_t kIdLimit = kMaxTokenId + 1;
  const bool in_range = id.is_number_unsigned()
                            ? id.get<std::uint64_t>() < static_cast<std::uint64_t>(kIdLimit)
                            : id.is_number_integer() && id.get<std::int64_t>() >= 0 &&
                                  id.get<std::int64_t>() < kIdLimit;
  if (!in_range) {
    vocab.fail("token \"" + brief_text(token) + "\" has id " + brief_json(id) +
               ", expected an integer from 0 to " + std::to_string(kIdLimit - 1));
  }
  return id.get<int>();
}

Vocabulary::Vocabulary(const ConfigNode& vocab) {
  if (!vocab.value().is_object()) {
    vocab.fail("expected an object of token: id, found " + brief_json(vocab.value()));
  }
  ids_.reserve(vocab.value().size());
  int max_id = -1;
  for (auto entry = vocab.value().begin(); entry != vocab.value().end(); ++entry) {
    const int id = vocabulary_id(vocab, entry.key(), entry.value());
    ids_.emplace(entry.key(), id);
    max_id = std::max(max_id, id);
    longest_token_ = std::max(longest_token_, entry.key().size());
  }
  tokens_.assign(static_cast<std::size_t>(max_id + 1), nullptr);
  for (auto entry = vocab.value().begin(); entry != vocab.value().end(); ++entry) {
    const auto stored = ids_.find(entry.key());
    auto& slot = tokens_[static_cast<std::size_t>(stored->second)];
    if (slot == nullptr) slot = &stored->first;
  }
}

}  // namespace attn::pipeline
