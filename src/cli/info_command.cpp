// attn info: what a model folder holds, as attn reads it: its family, sizes, positions,
// weights, heads and generation defaults.
#include <spdlog/fmt/fmt.h>

#include <map>
#include <nlohmann/json.hpp>

#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/io/output_file.h"
#include "src/model/sentence_transformers.h"
#include "src/tasks/model_info.h"

namespace attn {
namespace {

struct InfoCommand final : Command {
  InfoCommand() : Command("info", "describe a model folder") {}
  void add_options(CLI::App& app) override {
    add_common_options(app, common, "tiny-gpt2-brown");
    add_output_options(app, common, "one JSON object");
    add_examples(app, {"attn info", "attn info -m Qwen/Qwen2.5-0.5B-Instruct --json"});
  }
  int run(const CLI::App& app) override;
};

int InfoCommand::run(const CLI::App&) {
  // A sentence-transformers folder may keep the Hugging Face model in a module folder.
  const std::optional<SentenceTransformersConfig> sentence_transformers =
      read_sentence_transformers_config(common.model_dir);
  auto model =
      load_model(sentence_transformers ? sentence_transformers->transformer_dir : common.model_dir,
                 common.dtype);
  const nlohmann::ordered_json out = model_info(*model, sentence_transformers);
  if (common.json) {
    // One line, as every --json prints one object.
    write_stdout(json_text(out) + "\n");
    return 0;
  }
  std::string lines;
  for (const auto& [key, value] : out.items()) {
    lines += key + ": " + (value.is_string() ? value.get<std::string>() : json_text(value)) + "\n";
  }
  write_stdout(lines);
  return 0;
}

}  // namespace

std::unique_ptr<Command> make_info_command() { return std::make_unique<InfoCommand>(); }

}  // namespace attn
