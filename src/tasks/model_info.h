#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "src/model/model.h"
#include "src/model/sentence_transformers.h"

namespace attn {

// What a model is, as `attn info` and the server's /info show it: family, sizes, positions,
// weight files and types, heads and labels, generation defaults, and for a sentence-transformers
// folder its pooling.
nlohmann::ordered_json model_info(
    const Model& model, const std::optional<SentenceTransformersConfig>& sentence_transformers);

}  // namespace attn
