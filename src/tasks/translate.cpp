#include "src/tasks/translate.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "src/base/error.h"

namespace attn {

void check_translation_model(const Model& model, const std::string& command) {
  if (model.kind() != ModelKind::kEncoderDecoder) {
    throw UsageError(command + ": needs an encoder-decoder (Marian, T5); '" + model.model_type +
                     "' is " + (model.kind() == ModelKind::kDecoder ? "a decoder" : "an encoder"));
  }
  if (!model.generation.decoder_start_token_id) {
    throw Error((model.dir / "config.json").string() +
                ": decoder_start_token_id: missing (nor is there a bos_token_id), so the decoder "
                "has no first token");
  }
}

std::vector<int> decoder_prompt(const Model& model) {
  return {*model.generation.decoder_start_token_id};
}

CrossAttentionMemory encode_source(const Model& model, std::span<const int> source_ids,
                                   const ForwardObserver* observer) {
  const Transformer& encoder = *model.encoder;
  const ArchSpec& spec = encoder.spec();
  const int n = static_cast<int>(source_ids.size());
  if (n == 0) throw Error("source: gives no tokens");
  if (n > spec.max_positions) {
    throw Error("source: " + std::to_string(n) + " tokens, more than the model's context of " +
                std::to_string(spec.max_positions) + " (use --truncate to keep the first tokens)");
  }
  KVCache cache(spec, n, spec.n_layer);
  RunState state(spec, n, n);
  Batch batch;
  batch.add_sequence(source_ids);
  encoder.forward(batch, cache, state, observer);
  return model.transformer->cross_attention_memory(state.hidden.data(), n);
}

TranslateResult translate(const Model& model, std::span<const int> source_ids,
                          const GenerateOptions& options, const GenerateCallbacks& callbacks) {
  TranslateResult result;
  result.source_tokens = static_cast<int>(source_ids.size());
  const auto start = std::chrono::steady_clock::now();
  const CrossAttentionMemory memory = encode_source(model, source_ids);
  result.encode_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  result.generation = generate(model, decoder_prompt(model), options, callbacks, &memory);
  return result;
}

std::vector<int> target_ids(const Model& model, std::string_view target) {
  std::vector<int> ids = model.tokenizer->encode_target(target).ids;
  const std::vector<int>& eos = model.generation.eos_token_ids;
  if (!ids.empty() && std::find(eos.begin(), eos.end(), ids.back()) != eos.end()) ids.pop_back();
  return ids;
}

GenerateResult greedy_translation(const Model& model, const CrossAttentionMemory& memory,
                                  int max_new_tokens) {
  GenerateOptions options;
  options.max_new_tokens = std::min(max_new_tokens, model.spec().max_positions - 1);
  options.sampling.temperature = 0;
  return generate(model, decoder_prompt(model), options, {}, &memory);
}

std::vector<int> greedy_decoder_input(const Model& model, const CrossAttentionMemory& memory,
                                      int max_new_tokens) {
  std::vector<int> ids = decoder_prompt(model);
  const std::vector<int> generated =
      greedy_translation(model, memory, max_new_tokens).generated_ids;
  ids.insert(ids.end(), generated.begin(), generated.end());
  return ids;
}

BeamSearchResult translate_beams(const Model& model, std::span<const int> source_ids,
                                 const BeamSearchOptions& options) {
  const CrossAttentionMemory memory = encode_source(model, source_ids);
  return beam_search(model, decoder_prompt(model), options, &memory);
}

}  // namespace attn
