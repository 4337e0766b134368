#include "src/commands.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/error.h"
#include "tokenizer/unicode.h"

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

std::string read_prompt(const GenerateCommand& command) {
  if (command.prompt && command.prompt_file) {
    throw UsageError("--prompt and --file: give the prompt one way, not both");
  }
  std::string prompt = command.prompt        ? *command.prompt
                       : command.prompt_file ? read_text_file(*command.prompt_file, "--file")
                                             : read_text_file("-", "standard input");
  if (!is_valid_utf8(prompt)) {
    decode_utf8(prompt, "prompt");  // throws, naming the first invalid byte
  }
  if (prompt.empty()) throw UsageError("prompt: is empty");
  return prompt;
}

}  // namespace

int run_generate(const GenerateCommand& command) {
  const std::string prompt = read_prompt(command);
  auto model = load_model(command.common.model_dir);
  if (!model->spec().causal) {
    throw UsageError(model->dir.string() + ": generate needs a decoder model; '" +
                     model->model_type + "' is an encoder (try fill-mask)");
  }
  std::vector<int> prompt_ids = model->tokenizer->encode(prompt).ids;
  if (prompt_ids.empty()) throw UsageError("prompt: gives no tokens");
  const int context = model->spec().max_positions;
  if (int(prompt_ids.size()) > context && command.truncate) {
    const int keep = std::max(1, context - command.options.max_new_tokens);
    spdlog::warn("prompt: {} tokens, truncated to the last {}", prompt_ids.size(), keep);
    prompt_ids.erase(prompt_ids.begin(), prompt_ids.end() - keep);
  }

  GenerateCallbacks callbacks;
  if (!command.json) {
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
    callbacks.on_text = [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    };
  }
  const GenerateResult result = generate(*model, prompt_ids, command.options, callbacks);
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
