#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include "src/io/json_util.h"

namespace attn {

// The generation defaults a model folder ships, as Hugging Face reads them: generation_config.json
// when there is one, else the same fields of config.json. Command-line flags override them.
struct GenerationConfig {
  std::vector<int> eos_token_ids;  // stop on any of them (eos_token_id may be a list)
  std::optional<bool> do_sample;   // false: greedy, whatever the temperature
  std::optional<float> temperature;
  std::optional<int> top_k;
  std::optional<float> top_p;
  std::optional<float> min_p;
  std::optional<float> typical_p;
  std::optional<float> repetition_penalty;
  std::optional<int> max_new_tokens;
  // Encoder-decoders: the first decoder input (decoder_start_token_id, else bos_token_id).
  std::optional<int> decoder_start_token_id = std::nullopt;
  std::optional<int> num_beams = std::nullopt;  // the default beam count (OPUS-MT ships 4)
};

// Reads generation_config.json from `dir` if present, else `config`; every id is checked to be
// below vocab_size. decoder_start_token_id only for an encoder-decoder.
GenerationConfig read_generation_config(const std::filesystem::path& dir, const JsonFile& config,
                                        int vocab_size, bool encoder_decoder = false);

}  // namespace attn
