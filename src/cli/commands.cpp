#include "src/cli/commands.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/cli/interrupt.h"
#include "src/io/output_file.h"
#include "src/model/sentence_transformers.h"
#include "src/tasks/embed.h"
#include "src/tokenizer/unicode.h"

namespace attn {

void require_utf8(std::string_view text, const std::string& what) {
  if (!is_valid_utf8(text)) decode_utf8(text, what);  // throws, naming the first invalid byte
}

std::vector<std::string> split_lines(std::string_view contents) {
  std::vector<std::string> lines;
  for (std::size_t begin = 0; begin < contents.size();) {
    std::size_t end = contents.find('\n', begin);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(begin, end - begin);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.emplace_back(line);
    begin = end + 1;
  }
  return lines;
}

void print_error(std::string_view message) {
  // Far above any real message; a line of megabytes would only bury the terminal.
  constexpr std::size_t kMaxLineBytes = 2000;
  std::string line = "attn: error: ";
  std::size_t shown = 0;
  for (; shown < message.size() && line.size() < kMaxLineBytes; ++shown) {
    const unsigned char c = message[shown];
    if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", c);
      line += escaped;
    } else {
      line += char(c);
    }
  }
  if (shown < message.size()) {
    line.resize(complete_utf8_prefix(line));
    line += "...";
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

Prompt read_prompt(const std::optional<std::string>& text,
                   const std::optional<std::filesystem::path>& file, const char* text_option,
                   const std::string& noun) {
  if (text && file) {
    throw UsageError(std::string(text_option) + " and --file: give the " + noun +
                     " one way, not both");
  }
  Prompt prompt;
  if (text) {
    prompt = {*text, text_option};
  } else if (file) {
    prompt = {read_input_text(*file, "--file", kMaxInputTextBytes), "--file " + file->string()};
  } else {
    prompt = {read_input_text("-", noun, kMaxInputTextBytes), "standard input"};
  }
  require_utf8(prompt.text, prompt.source);
  if (prompt.text.empty()) prompt.fail("the " + noun + " is empty");
  return prompt;
}

namespace {

// A prompt longer than the context, cut to its last tokens. Room is kept for the new tokens,
// but never at the cost of more than half the context: a prompt cut to a handful of tokens
// would lose what it was about. Generation then stops at the context (stop_reason "context").
void truncate_prompt(std::vector<int>& prompt_ids, const Prompt& prompt, int context,
                     int max_new_tokens) {
  const int keep = std::max({1, context / 2, context - max_new_tokens});
  std::string warning = fmt::format("{}: the prompt is {} tokens, truncated to the last {}",
                                    prompt.source, prompt_ids.size(), keep);
  if (keep + max_new_tokens > context) {
    warning += fmt::format(
        "; -n {} does not fit after them, so generation stops at the context of {} tokens",
        max_new_tokens, context);
  }
  spdlog::warn("{}", warning);
  prompt_ids.erase(prompt_ids.begin(), prompt_ids.end() - keep);
}

// The command line's settings, with those it did not give taken from the model's
// generation_config.json as Hugging Face reads it: do_sample false means greedy; do_sample true
// samples with its temperature, top_k, top_p, min_p and typical_p (Hugging Face's defaults 1, 50,
// 1, off and 1 where it names none). A folder that says nothing keeps attn's defaults.
GenerateOptions with_generation_config(const GenerateCommand& command,
                                       const GenerationConfig& config) {
  GenerateOptions options = command.options;
  const GenerationFlagsGiven& given = command.given;
  SamplingOptions& sampling = options.sampling;
  // Without --seed, a fresh one each run, reported so that the run can be repeated.
  if (!given.seed) sampling.seed = uint64_t(std::random_device{}()) << 32 | std::random_device{}();
  spdlog::debug("seed {}", sampling.seed);
  if (!given.max_new_tokens && config.max_new_tokens)
    options.max_new_tokens = *config.max_new_tokens;
  if (config.do_sample == false && !given.temperature) sampling.temperature = 0;
  if (config.do_sample == true) {
    if (!given.temperature) sampling.temperature = config.temperature.value_or(1.0f);
    if (!given.top_k) sampling.top_k = config.top_k.value_or(50);
    if (!given.top_p) sampling.top_p = config.top_p.value_or(1.0f);
    if (!given.min_p) sampling.min_p = config.min_p.value_or(0.0f);
    if (!given.typical_p) sampling.typical_p = config.typical_p.value_or(1.0f);
  }
  if (!given.repetition_penalty && config.repetition_penalty) {
    sampling.repetition_penalty = *config.repetition_penalty;
  }
  return options;
}

// "learned", "learned (from row 2)", "rotary (32 dims per head, theta 10000, linear x2)",
// "alibi".
std::string describe_positions(const PositionScheme& positions) {
  if (positions.relative_bias) {
    return fmt::format("relative buckets ({}, up to distance {})",
                       positions.relative_bias->num_buckets, positions.relative_bias->max_distance);
  }
  if (positions.sinusoidal) return "sinusoidal";
  if (positions.learned_table) {
    return positions.table_offset == 0
               ? "learned"
               : "learned (from row " + std::to_string(positions.table_offset) + ")";
  }
  if (!positions.alibi_slopes.empty()) return "alibi";
  if (positions.rotary.empty()) return "none";
  // "rotary (64 dims per head, theta 10000)", or one such description per table.
  std::string tables;
  for (const RotaryEmbedding& rotary : positions.rotary) {
    std::string text = "rotary (" + std::to_string(rotary.dim) + " dims per head, theta " +
                       fmt::format("{}", rotary.theta);
    switch (rotary.scaling) {
      case RotaryEmbedding::Scaling::kNone:
        break;
      case RotaryEmbedding::Scaling::kLinear:
        text += fmt::format(", linear x{}", rotary.factor);
        break;
      case RotaryEmbedding::Scaling::kDynamic:
        text += fmt::format(", dynamic x{}", rotary.factor);
        break;
      case RotaryEmbedding::Scaling::kLlama3:
        text += fmt::format(", llama3 x{}", rotary.factor);
        break;
      case RotaryEmbedding::Scaling::kLongRope:
        text += fmt::format(", longrope from {}", rotary.original_max_positions);
        break;
    }
    tables += (tables.empty() ? "" : " / ") + text + ")";
  }
  return tables;
}

// The fields of generation_config.json that generate uses, as given.
nlohmann::ordered_json generation_defaults(const GenerationConfig& config) {
  nlohmann::ordered_json out = {{"eos_token_ids", config.eos_token_ids}};
  if (config.do_sample) out["do_sample"] = *config.do_sample;
  if (config.temperature) out["temperature"] = *config.temperature;
  if (config.top_k) out["top_k"] = *config.top_k;
  if (config.top_p) out["top_p"] = *config.top_p;
  if (config.min_p) out["min_p"] = *config.min_p;
  if (config.typical_p) out["typical_p"] = *config.typical_p;
  if (config.repetition_penalty) out["repetition_penalty"] = *config.repetition_penalty;
  if (config.max_new_tokens) out["max_new_tokens"] = *config.max_new_tokens;
  return out;
}

}  // namespace

// generate --beams N: the num_return best continuations, each with its score, best first.
int run_beam_search(const GenerateCommand& command, const Model& model, const Prompt& prompt,
                    const std::vector<int>& prompt_ids, const GenerateOptions& options) {
  if (options.sampling.temperature > 0 && command.given.temperature) {
    throw UsageError("--beams and --temp: beam search is deterministic; give one or the other");
  }
  if (command.attention_out) {
    throw UsageError("--attention-out does not go with --beams");
  }
  if (command.stream) {
    throw UsageError(
        "--stream does not go with --beams: beam search decides its sequences at the end");
  }
  BeamSearchOptions beam = command.beam;
  beam.max_new_tokens = options.max_new_tokens;
  beam.eos_ids = options.ignore_eos ? std::vector<int>{} : model.generation.eos_token_ids;
  catch_interrupts();
  beam.stop = &interrupt_requested();
  const BeamSearchResult result = beam_search(model, prompt_ids, beam);
  nlohmann::json sequences = nlohmann::json::array();
  std::string text;
  for (const BeamHypothesis& hypothesis : result.sequences) {
    const std::string continuation = model.tokenizer->decode(hypothesis.ids, true);
    sequences.push_back({{"generated_ids", hypothesis.ids},
                         {"text", continuation},
                         {"score", hypothesis.score},
                         {"finished", hypothesis.finished}});
    text += fmt::format("[{:.4f}] {}{}\n", hypothesis.score, prompt.text, continuation);
  }
  if (command.json) {
    write_stdout(json_text(nlohmann::json{{"prompt_ids", prompt_ids},
                                          {"beams", beam.beams},
                                          {"steps", result.steps},
                                          {"stop_reason", result.stop_reason},
                                          {"sequences", sequences}}) +
                 "\n");
  } else {
    write_stdout(text);
  }
  if (result.stop_reason != "interrupted") return 0;
  flush_stdout();
  spdlog::info("interrupted after {} steps: the best sequences so far, unfinished ones included",
               result.steps);
  return kInterruptedStatus;
}

int run_generate(const GenerateCommand& command) {
  if (command.beam.num_return > command.beam.beams) {
    throw UsageError("--num-return: must be at most --beams (" +
                     std::to_string(command.beam.beams) + "), got " +
                     std::to_string(command.beam.num_return));
  }
  const Prompt prompt = read_prompt(command.prompt, command.prompt_file, "--prompt", "prompt");
  if (command.attention_out && *command.attention_out == "-") {
    throw UsageError("--attention-out: give a file; standard output carries the generated text");
  }
  // Opened before the work, so that an unwritable path fails at once.
  std::optional<OutputFile> attention_out;
  if (command.attention_out) attention_out.emplace(command.attention_out, "--attention-out");
  auto model = load_model(command.common.model_dir, command.common.dtype);
  model->require_single_stack("generate");
  if (!model->spec().causal) {
    throw UsageError(model->dir.string() + ": generate needs a decoder model; '" +
                     model->model_type + "' is an encoder (try fill-mask)");
  }
  const GenerateOptions options = with_generation_config(command, model->generation);
  std::vector<int> prompt_ids = model->tokenizer->encode(prompt.text).ids;
  if (prompt_ids.empty()) prompt.fail("the prompt gives no tokens");
  const int context = model->spec().max_positions;
  // Checked here, not only in generate(), so that nothing is printed before the error.
  if (int(prompt_ids.size()) > context) {
    if (!command.truncate) {
      prompt.fail("the prompt is " + std::to_string(prompt_ids.size()) +
                  " tokens, longer than the model's context of " + std::to_string(context) +
                  " (use --truncate to keep the last tokens)");
    }
    truncate_prompt(prompt_ids, prompt, context, options.max_new_tokens);
  }

  if (command.beam.beams > 1) return run_beam_search(command, *model, prompt, prompt_ids, options);

  // Before the prompt is printed: once anything is on standard output, Ctrl-C ends it cleanly.
  catch_interrupts();
  GenerateCallbacks callbacks;
  callbacks.stop = &interrupt_requested();
  std::optional<GenerationAttentionRecorder> attention_recorder;
  if (attention_out) {
    attention_recorder.emplace(select_attention(model->spec(), command.attention));
    callbacks.observer = attention_recorder->observer();
  }
  if (command.json && command.stream) {
    callbacks.on_token = [](int token_id, std::string_view text) {
      write_stdout(
          json_text(nlohmann::ordered_json{{"token_id", token_id}, {"text", std::string(text)}}) +
          "\n");
      flush_stdout();
    };
  }
  if (!command.json) {
    write_stdout(prompt.text);
    flush_stdout();
    callbacks.on_text = [](std::string_view text) {
      write_stdout(text);
      flush_stdout();
    };
  }
  const GenerateResult result = generate(*model, prompt_ids, options, callbacks);
  if (attention_recorder) {
    attention_recorder->write_jsonl(*attention_out, *model->tokenizer, result.generated_ids,
                                    command.attention.precision);
    attention_out->commit();
  }
  const double prompt_rate = result.prompt_tokens / (result.prompt_ms / 1000);
  const double decode_rate =
      result.decode_steps > 0 ? result.decode_steps / (result.decode_ms / 1000) : 0.0;
  if (command.json) {
    nlohmann::json out = {{"prompt_ids", prompt_ids},
                          {"seed", options.sampling.seed},
                          {"generated_ids", result.generated_ids},
                          {"text", result.text},
                          {"stop_reason", result.stop_reason},
                          {"timings",
                           {{"load_ms", model->load_ms},
                            {"prompt_ms", result.prompt_ms},
                            {"prompt_tokens_per_s", prompt_rate},
                            {"decode_ms", result.decode_ms},
                            {"decode_tokens_per_s", decode_rate}}}};
    write_stdout(json_text(out) + "\n");
  } else {
    write_stdout("\n");
  }
  flush_stdout();
  spdlog::info(
      "load {:.1f} ms | prompt {} tokens, {:.1f} tokens/s | decode {} passes, {:.1f} tokens/s | "
      "{} new tokens, stop: {}",
      model->load_ms, result.prompt_tokens, prompt_rate, result.decode_steps, decode_rate,
      result.generated_ids.size(), result.stop_reason);
  return result.stop_reason == "interrupted" ? kInterruptedStatus : 0;
}

int run_info(const CommonOptions& common, bool json) {
  // A sentence-transformers folder may keep the Hugging Face model in a module folder.
  const std::optional<SentenceTransformersConfig> sentence_transformers =
      read_sentence_transformers_config(common.model_dir);
  auto model =
      load_model(sentence_transformers ? sentence_transformers->transformer_dir : common.model_dir,
                 common.dtype);
  const ArchSpec& spec = model->spec();
  std::map<std::string, int> dtypes;
  nlohmann::ordered_json weight_files = nlohmann::ordered_json::array();
  for (const auto& file : model->weights->files()) {
    for (const auto& [name, tensor] : file->tensors()) ++dtypes[tensor.dtype];
    weight_files.push_back(file->path().filename().string() + " (" + file->format() + ", " +
                           std::to_string(file->tensors().size()) + " tensors)");
  }
  nlohmann::ordered_json out = {
      {"model", model->name()},
      {"model_type", model->model_type},
      {"architecture", model->architecture},
      {"kind", model->kind() == ModelKind::kEncoderDecoder ? "encoder-decoder"
               : spec.causal                               ? "decoder"
                                                           : "encoder"},
      {"n_layers", spec.n_layer},
      {"d_model", spec.d_model},
      {"n_heads", spec.n_head},
      {"n_kv_heads", spec.n_kv_head},
      {"head_dim", spec.head_dim},
      {"positions", describe_positions(model->transformer->positions())},
      {"d_ff", spec.d_ff},
      {"vocab_size", spec.vocab_size},
      {"context", spec.max_positions},
      {"parameters", model->parameter_count},
      {"weights", model->weights->source().filename().string()},
      {"weight_files", weight_files},
      {"tensor_dtypes", dtypes},
      {"compute_dtype", model->compute_dtype()},
      {"output_head", model->transformer->has_head()},
  };
  if (spec.embedding_dim > 0) out["embedding_dim"] = spec.embedding_dim;
  if (model->encoder) {
    // The sizes above are the decoder's; the encoder's layer count may differ.
    out["encoder_layers"] = model->encoder->spec().n_layer;
    if (model->generation.decoder_start_token_id) {
      out["decoder_start_token_id"] = *model->generation.decoder_start_token_id;
    }
  }
  if (spec.causal) out["generation_defaults"] = generation_defaults(model->generation);
  if (sentence_transformers) {
    const EmbeddingOptions embedding = embedding_options(*model, sentence_transformers);
    out["pooling"] = pooling_name(embedding.pooling);
    out["normalize"] = embedding.normalize;
    out["max_seq_length"] = embedding.max_seq_length;
    out["embedding_dimension"] = spec.d_model;
  }
  if (json) {
    write_stdout(json_text(out, 2) + "\n");
    return 0;
  }
  std::string lines;
  for (const auto& [key, value] : out.items()) {
    lines += key + ": " + (value.is_string() ? value.get<std::string>() : json_text(value)) + "\n";
  }
  write_stdout(lines);
  return 0;
}

}  // namespace attn
