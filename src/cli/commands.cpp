#include "src/cli/commands.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/base/error.h"
#include "src/tokenizer/unicode.h"

namespace attn {

std::string read_text_file(const std::filesystem::path& path, const std::string& what) {
  std::stringstream contents;
  if (path == "-") {
    contents << std::cin.rdbuf();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(what + " " + path.string() + ": cannot open file");
    contents << in.rdbuf();
  }
  return contents.str();
}

namespace {

// The prompt and where it came from, which every error about it names. A bad --prompt value is
// a usage error (exit status 2); a bad file or standard input is bad input (exit status 1).
struct Prompt {
  std::string text;
  std::string source;  // "--prompt", "--file PATH" or "standard input"
  bool from_option = false;

  [[noreturn]] void fail(const std::string& problem) const {
    if (from_option) throw UsageError(source + ": " + problem);
    throw Error(source + ": " + problem);
  }
};

Prompt read_prompt(const GenerateCommand& command) {
  if (command.prompt && command.prompt_file) {
    throw UsageError("--prompt and --file: give the prompt one way, not both");
  }
  Prompt prompt;
  if (command.prompt) {
    prompt = {*command.prompt, "--prompt", true};
  } else if (command.prompt_file) {
    prompt = {read_text_file(*command.prompt_file, "--file"),
              "--file " + command.prompt_file->string(), false};
  } else {
    prompt = {read_text_file("-", "standard input"), "standard input", false};
  }
  if (!is_valid_utf8(prompt.text)) {
    try {
      decode_utf8(prompt.text, prompt.source);  // throws, naming the first invalid byte
    } catch (const Error& e) {
      if (prompt.from_option) throw UsageError(e.what());
      throw;
    }
  }
  if (prompt.text.empty()) prompt.fail("the prompt is empty");
  return prompt;
}

}  // namespace

int run_generate(const GenerateCommand& command) {
  const Prompt prompt = read_prompt(command);
  if (command.attention_out && *command.attention_out == "-") {
    throw UsageError("--attention-out: give a file; standard output carries the generated text");
  }
  // Opened before the work, so that an unwritable path fails at once.
  std::optional<OutputFile> attention_out;
  if (command.attention_out) attention_out.emplace(command.attention_out, "--attention-out");
  auto model = load_model(command.common.model_dir);
  if (!model->spec().causal) {
    throw UsageError(model->dir.string() + ": generate needs a decoder model; '" +
                     model->model_type + "' is an encoder (try fill-mask)");
  }
  std::vector<int> prompt_ids = model->tokenizer->encode(prompt.text).ids;
  if (prompt_ids.empty()) prompt.fail("the prompt gives no tokens");
  const int context = model->spec().max_positions;
  // Checked here, not only in generate(), so that nothing is printed before the error.
  if (int(prompt_ids.size()) > context && !command.truncate) {
    prompt.fail("the prompt is " + std::to_string(prompt_ids.size()) +
                " tokens, longer than the model's context of " + std::to_string(context) +
                " (use --truncate to keep the last tokens)");
  }
  if (int(prompt_ids.size()) > context) {
    const int keep = std::max(1, context - command.options.max_new_tokens);
    spdlog::warn("{}: the prompt is {} tokens, truncated to the last {}", prompt.source,
                 prompt_ids.size(), keep);
    prompt_ids.erase(prompt_ids.begin(), prompt_ids.end() - keep);
  }

  GenerateCallbacks callbacks;
  std::optional<GenerationAttentionRecorder> attention_recorder;
  if (attention_out) {
    attention_recorder.emplace(select_attention(model->spec(), command.attention));
    callbacks.observer = attention_recorder->observer();
  }
  if (!command.json) {
    std::fwrite(prompt.text.data(), 1, prompt.text.size(), stdout);
    std::fflush(stdout);
    callbacks.on_text = [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    };
  }
  const GenerateResult result = generate(*model, prompt_ids, command.options, callbacks);
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
                          {"generated_ids", result.generated_ids},
                          {"text", result.text},
                          {"stop_reason", result.stop_reason},
                          {"timings",
                           {{"load_ms", model->load_ms},
                            {"prompt_ms", result.prompt_ms},
                            {"prompt_tokens_per_s", prompt_rate},
                            {"decode_ms", result.decode_ms},
                            {"decode_tokens_per_s", decode_rate}}}};
    std::cout << out.dump() << std::endl;
  } else {
    std::fputc('\n', stdout);
  }
  std::fflush(stdout);
  spdlog::info(
      "load {:.1f} ms | prompt {} tokens, {:.1f} tokens/s | decode {} tokens, {:.1f} tokens/s | "
      "stop: {}",
      model->load_ms, result.prompt_tokens, prompt_rate, result.generated_ids.size(), decode_rate,
      result.stop_reason);
  return 0;
}

int run_tokenize(const TokenizeCommand& command) {
  auto model = load_model(command.common.model_dir);
  const Tokenizer& tokenizer = *model->tokenizer;
  const Encoding encoding = tokenizer.encode(command.text, command.pair);
  std::vector<std::string> tokens;
  for (int id : encoding.ids) tokens.push_back(replace_invalid_utf8(tokenizer.token_string(id)));
  if (command.json) {
    nlohmann::json out = {{"ids", encoding.ids}, {"tokens", tokens}};
    if (command.pair) out["type_ids"] = encoding.type_ids;
    std::cout << out.dump() << "\n";
    return 0;
  }
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::cout << encoding.ids[i] << "\t" << tokens[i] << "\n";
  }
  return 0;
}

int run_info(const CommonOptions& common, bool json) {
  auto model = load_model(common.model_dir);
  const ArchSpec& spec = model->spec();
  std::map<std::string, int> dtypes;
  for (const auto& [name, tensor] : model->weights_file->tensors()) ++dtypes[tensor.dtype];
  nlohmann::ordered_json out = {
      {"model", model->name()},
      {"model_type", model->model_type},
      {"architecture", model->architecture},
      {"kind", spec.causal ? "decoder" : "encoder"},
      {"n_layers", spec.n_layer},
      {"d_model", spec.d_model},
      {"n_heads", spec.n_head},
      {"d_ff", spec.d_ff},
      {"vocab_size", spec.vocab_size},
      {"context", spec.max_positions},
      {"parameters", model->parameter_count},
      {"tensor_dtypes", dtypes},
      {"output_head", model->transformer->has_head()},
  };
  if (json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const auto& [key, value] : out.items()) {
    std::cout << key << ": " << (value.is_string() ? value.get<std::string>() : value.dump())
              << "\n";
  }
  return 0;
}

}  // namespace attn
