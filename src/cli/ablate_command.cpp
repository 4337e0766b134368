// attn ablate: how much a model's loss on the given texts grows when one head at a time is
// removed (zero-ablation) or replaced by its mean output (mean-ablation); a ranked table and
// grids, JSON in the field names of ../shared/golden/interp/ablation_*.json, or an HTML grid.
// An encoder-decoder's heads are of three kinds (encoder, decoder, cross-attention), each with
// its table, fields and grids, scored on translations of the texts.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <iomanip>
#include <iterator>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/io/output_file.h"
#include "src/tasks/head_ablation.h"
#include "src/tasks/head_grid_view_html.h"  // generated from src/tasks/head_grid_view.html
#include "src/tasks/translate.h"

namespace attn {
namespace {

// attn ablate: the loss over the texts with each head ablated.
struct AblateCommand final : Command {
  AblateCommand()
      : Command("ablate",
                "head ablation: the loss with each head removed or "
                "replaced by its mean (Michel et al. 2019)") {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  ReportFormat format = ReportFormat::kText;
  std::string layers;  // the heads to ablate, as for attention ("0,5-7"; empty = all)
  std::string heads;
  // Encoders: a line per text, the original word behind each of its masks.
  std::optional<std::filesystem::path> targets;
  int batch_tokens = 1024;  // tokens per packed batch
};

// A mask whose original word is not one token: it cannot be scored by one mask.
struct ExcludedMask {
  int input = 0;  // 0-based among the texts
  int mask = 0;   // 0-based among its masks
  std::string word;
  int tokens = 0;
};

// The masked-LM inputs of an encoder: each text's masks scored against the words of its line of
// the targets file.
std::vector<AblationInput> masked_inputs(const Model& model, const std::vector<InputText>& texts,
                                         const std::filesystem::path& targets_path,
                                         std::vector<ExcludedMask>& excluded) {
  const Tokenizer& tokenizer = *model.tokenizer;
  const std::optional<int> mask_id = tokenizer.mask_id();
  if (!mask_id) throw UsageError("ablate: the model's tokenizer has no mask token");
  const std::string mask_token = tokenizer.token_string(*mask_id);
  const std::vector<std::string> lines =
      split_lines(read_input_text(targets_path, "--targets", kMaxInputTextBytes));
  std::vector<AblationInput> inputs;
  for (const InputText& text : texts) {
    const int index = int(inputs.size());
    const std::string where =
        "--targets " + targets_path.string() + ": line " + std::to_string(index + 1);
    if (index >= int(lines.size())) {
      throw Error(where + " is missing: one line of target words per text (" + text.source + ")");
    }
    std::istringstream line(lines[index]);
    const std::vector<std::string> words{std::istream_iterator<std::string>(line), {}};
    Encoding encoding = tokenizer.encode(text.text);
    std::vector<int> masks;
    for (std::size_t t = 0; t < encoding.ids.size(); ++t) {
      if (encoding.ids[t] == *mask_id) masks.push_back(int(t));
    }
    if (masks.empty()) text.fail("has no " + mask_token + " to score");
    if (words.size() != masks.size()) {
      throw Error(where + ": " + plural(long(words.size()), "word") + " for the " +
                  plural(long(masks.size()), "mask") + " of " + text.source);
    }
    AblationInput input{
        .ids = encoding.ids, .type_ids = encoding.type_ids, .scored_positions = {}, .targets = {}};
    // The word as the text would spell it in place of the mask: after a space when the mask is.
    std::size_t at = 0;
    for (std::size_t k = 0; k < masks.size(); ++k) {
      at = text.text.find(mask_token, at);
      const bool after_space = at != std::string::npos && at > 0 && text.text[at - 1] == ' ';
      if (at != std::string::npos) at += mask_token.size();
      const std::vector<int> ids = tokenizer.encode_plain((after_space ? " " : "") + words[k]);
      if (ids.size() != 1) {
        excluded.push_back({index, int(k), words[k], int(ids.size())});
        continue;
      }
      input.scored_positions.push_back(masks[k]);
      input.targets.push_back(ids[0]);
    }
    inputs.push_back(std::move(input));
  }
  return inputs;
}

std::string signed_text(double value) {
  std::ostringstream out;
  out << std::showpos << std::setprecision(4) << value;
  return out.str();
}

// [layer][head] of `values` (n_layers * n_heads), null where NaN, as float32 numbers.
nlohmann::ordered_json grid_json(const std::vector<double>& values, int n_heads) {
  nlohmann::ordered_json grid = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < values.size(); i += n_heads) {
    nlohmann::ordered_json row = nlohmann::ordered_json::array();
    for (int h = 0; h < n_heads; ++h) {
      const double value = values[i + h];
      row.push_back(std::isnan(value) ? nlohmann::ordered_json(nullptr)
                                      : nlohmann::ordered_json(shortest(float(value))));
    }
    grid.push_back(std::move(row));
  }
  return grid;
}

// One kind of ablation: its mean NLL and its change from the baseline per head, and the heads
// ranked by that change, largest first (ties by layer, then head).
struct AblationTable {
  std::vector<double> mean_nll;  // (n_layers * n_heads), NaN where not ablated
  std::vector<double> delta;
  std::vector<int> ranking;  // indexes into the above, ablated heads only
};

AblationTable ablation_table(const AblationResult& result, const std::vector<double>& nll_sums) {
  AblationTable table;
  for (std::size_t i = 0; i < nll_sums.size(); ++i) {
    table.mean_nll.push_back(nll_sums[i] / double(result.n_scored));
    table.delta.push_back(table.mean_nll.back() - result.baseline_mean_nll());
    if (!std::isnan(nll_sums[i])) table.ranking.push_back(int(i));
  }
  std::stable_sort(table.ranking.begin(), table.ranking.end(),
                   [&](int a, int b) { return table.delta[a] > table.delta[b]; });
  return table;
}

nlohmann::ordered_json table_json(const AblationTable& table, int n_heads) {
  nlohmann::ordered_json ranking = nlohmann::ordered_json::array();
  for (int i : table.ranking) {
    ranking.push_back({{"layer", i / n_heads},
                       {"head", i % n_heads},
                       {"delta", shortest(float(table.delta[i]))}});
  }
  return {{"mean_nll", grid_json(table.mean_nll, n_heads)},
          {"delta", grid_json(table.delta, n_heads)},
          {"ranking", std::move(ranking)}};
}

// What the run cost, in token-blocks (a block over 100 positions counts 100).
struct AblationCost {
  long blocks_run = 0;
  long blocks_whole_passes = 0;  // a whole pass for mu, the baseline and each ablation
  double seconds = 0;
};

std::string cost_text(const AblationCost& cost) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << "cost: " << cost.blocks_run
      << " token-blocks run, where a whole pass for mu, the baseline and each ablation would run "
      << cost.blocks_whole_passes << " ("
      << 100.0 * double(cost.blocks_run) / double(cost.blocks_whole_passes) << "%); "
      << cost.seconds << " s";
  return out.str();
}

nlohmann::ordered_json cost_json(const AblationCost& cost) {
  return {{"token_blocks_run", cost.blocks_run},
          {"token_blocks_whole_passes", cost.blocks_whole_passes},
          {"seconds", cost.seconds}};
}

// One stack's (or kind of attention's) heads ablated: the result and its two tables.
struct AblatedHeads {
  const AblationResult& result;
  AblationTable zero;
  AblationTable mean;

  explicit AblatedHeads(const AblationResult& ablation)
      : result(ablation),
        zero(ablation_table(ablation, ablation.zero_nll_sum)),
        mean(ablation_table(ablation, ablation.mean_nll_sum)) {}
};

// An encoder-decoder's three kinds of heads: the JSON key and the title of each.
struct HeadKind {
  const char* key;
  const char* title;
};
constexpr HeadKind kEncoderDecoderKinds[] = {{"encoder", "encoder self-attention"},
                                             {"decoder", "decoder self-attention"},
                                             {"cross", "cross-attention"}};

// The first lines of the text output: what was scored, and the baseline.
std::string summary_text(const Model& model, const AblationResult& result,
                         const std::string& scored_on) {
  std::ostringstream out;
  out << model.name() << ": " << plural(result.n_inputs, "text") << ", "
      << plural(result.n_scored, "token") << " scored" << scored_on << "; baseline mean NLL "
      << std::fixed << std::setprecision(6) << result.baseline_mean_nll() << "\n";
  out << "change in mean NLL with one head removed (zero) or replaced by its mean output (mean); "
         "positive: the model needs the head\n";
  return out.str();
}

// The heads ranked, then the zero- and mean-ablation grids.
std::string heads_text(const AblatedHeads& ablated) {
  const AblationResult& result = ablated.result;
  const AblationTable &zero = ablated.zero, &mean = ablated.mean;
  std::ostringstream out;
  out << "rank  layer  head  zero        mean\n";
  for (std::size_t r = 0; r < zero.ranking.size(); ++r) {
    const int i = zero.ranking[r];
    out << std::left << std::setw(4) << r + 1 << "  " << std::setw(5) << i / result.n_heads << "  "
        << std::setw(4) << i % result.n_heads << "  " << std::setw(10) << signed_text(zero.delta[i])
        << "  " << signed_text(mean.delta[i]) << "\n";
  }
  for (const auto& [name, table] : {std::pair{"zero", &zero}, std::pair{"mean", &mean}}) {
    out << name << "-ablation, layers down, heads across:\n";
    for (int layer = 0; layer < result.n_layers; ++layer) {
      std::ostringstream line;
      line << "layer " << std::left << std::setw(3) << layer;
      for (int head = 0; head < result.n_heads; ++head) {
        const double delta = table->delta[std::size_t(layer) * result.n_heads + head];
        line << "  " << std::setw(10)
             << (std::isnan(delta) ? std::string("-") : signed_text(delta));
      }
      std::string text = line.str();
      text.erase(text.find_last_not_of(' ') + 1);
      out << text << "\n";
    }
  }
  return out.str();
}

// The fields of one stack's (or kind of attention's) heads.
nlohmann::ordered_json heads_json(const AblatedHeads& ablated) {
  const AblationResult& result = ablated.result;
  nlohmann::ordered_json mu = nlohmann::ordered_json::array();
  for (int layer = 0; layer < result.n_layers; ++layer) {
    nlohmann::ordered_json heads = nlohmann::ordered_json::array();
    for (int head = 0; head < result.n_heads; ++head) {
      const float* values =
          result.mu.data() + (std::size_t(layer) * result.n_heads + head) * result.head_dim;
      nlohmann::ordered_json vector = nlohmann::ordered_json::array();
      for (int k = 0; k < result.head_dim; ++k) vector.push_back(shortest(values[k]));
      heads.push_back(std::move(vector));
    }
    mu.push_back(std::move(heads));
  }
  return {{"layers", result.n_layers},
          {"heads", result.n_heads},
          {"head_dim", result.head_dim},
          {"n_positions_in_mean", result.n_positions},
          {"zero_ablation", table_json(ablated.zero, result.n_heads)},
          {"mean_ablation", table_json(ablated.mean, result.n_heads)},
          {"mu", std::move(mu)}};
}

// The fields every model's JSON starts with.
nlohmann::ordered_json summary_json(const Model& model, const AblationResult& result,
                                    const char* kind) {
  return {{"model", model.name()},
          {"model_type", model.model_type},
          {"kind", kind},
          {"n_items", result.n_inputs},
          {"n_scored", result.n_scored},
          {"baseline_mean_nll", shortest(float(result.baseline_mean_nll()))}};
}

nlohmann::ordered_json ablation_json(const Model& model, const AblatedHeads& ablated,
                                     const std::vector<ExcludedMask>& excluded,
                                     const AblationCost& cost) {
  nlohmann::ordered_json out =
      summary_json(model, ablated.result, model.spec().causal ? "decoder" : "encoder");
  out.update(heads_json(ablated));
  out["cost"] = cost_json(cost);
  if (!model.spec().causal) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const ExcludedMask& mask : excluded) {
      list.push_back({{"input", mask.input},
                      {"mask", mask.mask},
                      {"word", mask.word},
                      {"tokens", mask.tokens}});
    }
    out["excluded_masks"] = std::move(list);
  }
  return out;
}

// The page: the zero- and mean-ablation grids of each kind of heads, titled `titles` (one
// empty title for a single stack).
std::string ablation_page(const Model& model, const std::vector<AblatedHeads>& kinds,
                          const std::vector<std::string>& titles, const std::string& scored_on) {
  const AblationResult& result = kinds.front().result;
  std::ostringstream summary;
  summary << model.name() << " (" << model.model_type << "): " << plural(result.n_inputs, "text")
          << ", " << plural(result.n_scored, "token") << " scored" << scored_on
          << ", baseline mean NLL " << std::setprecision(6) << result.baseline_mean_nll()
          << ". Each cell: the change in mean NLL with that head ablated; red, the model needs "
             "the head; blue, it does better without it.";
  nlohmann::ordered_json grids = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    const std::string prefix = titles[k].empty() ? "" : titles[k] + ", ";
    grids.push_back({{"title", prefix + "zero-ablation"},
                     {"note", "the head's output removed"},
                     {"diverging", true},
                     {"values", grid_json(kinds[k].zero.delta, kinds[k].result.n_heads)}});
    grids.push_back(
        {{"title", prefix + "mean-ablation"},
         {"note", "the head's output replaced by its mean over every position of the texts"},
         {"diverging", true},
         {"values", grid_json(kinds[k].mean.delta, kinds[k].result.n_heads)}});
  }
  const nlohmann::ordered_json data = {
      {"title", "Head ablation"}, {"summary", summary.str()}, {"grids", std::move(grids)}};
  return page_with_data(kHeadGridViewHtml, "{{GRID_DATA}}", data);
}

// The heads --layers and --heads choose in a stack shaped by `spec`.
AblationHeads chosen_heads(const AblateCommand& command, const ArchSpec& spec) {
  return {.layers = parse_index_list(command.layers, spec.n_layer, "--layers", "layer"),
          .heads = parse_index_list(command.heads, spec.n_head, "--heads", "head")};
}

// The inputs of an encoder-decoder: each text a source, scored on its line of the targets file
// (a reference translation) or, without one, on the model's own greedy translation.
std::vector<TranslationAblationInput> translation_inputs(
    const Model& model, const std::vector<InputText>& texts,
    const std::optional<std::filesystem::path>& targets_path) {
  const int start = decoder_prompt(model).front();
  const int source_context = model.encoder->spec().max_positions;
  const int target_context = model.spec().max_positions;
  std::vector<std::string> lines;
  if (targets_path) {
    lines = split_lines(read_input_text(*targets_path, "--targets", kMaxInputTextBytes));
  }
  std::vector<TranslationAblationInput> inputs;
  for (const InputText& text : texts) {
    const std::size_t index = inputs.size();
    std::vector<int> source = model.tokenizer->encode(text.text).ids;
    if (source.empty()) text.fail(kNoTokens);
    if (int(source.size()) > source_context) {
      text.fail(std::to_string(source.size()) + " tokens, more than the encoder's context of " +
                std::to_string(source_context));
    }
    // The labels, as Hugging Face's tokenizer(text_target=...) gives them: ending with EOS.
    std::vector<int> labels;
    std::string where = text.source;
    if (targets_path) {
      where = "--targets " + targets_path->string() + ": line " + std::to_string(index + 1);
      if (index >= lines.size()) {
        throw Error(where + " is missing: one translation per text (" + text.source + ")");
      }
      require_utf8(lines[index], where);
      labels = model.tokenizer->encode_target(lines[index]).ids;
    } else {
      const GenerateResult own =
          greedy_translation(model, encode_source(model, source), kMaxOwnTranslationTokens);
      labels = own.generated_ids;
      if (own.stop_reason == "eos") labels.push_back(model.generation.eos_token_ids.front());
    }
    if (labels.empty()) throw Error(where + ": the translation gives no tokens");
    if (int(labels.size()) > target_context) {
      throw Error(where + ": " + std::to_string(labels.size()) +
                  " target tokens, more than the decoder's context of " +
                  std::to_string(target_context));
    }
    inputs.push_back(
        {.source_ids = std::move(source), .decoder = teacher_forced_input(start, labels)});
  }
  return inputs;
}

int run_encoder_decoder_ablation(const AblateCommand& command, const Model& model,
                                 const std::vector<InputText>& texts) {
  check_translation_model(model, "ablate");
  // --layers and --heads choose in both stacks: each index must exist in both.
  const AblationHeads encoder_heads = chosen_heads(command, model.encoder->spec());
  const AblationHeads decoder_heads = chosen_heads(command, model.spec());
  const std::vector<TranslationAblationInput> inputs =
      translation_inputs(model, texts, command.targets);
  if (inputs.empty()) throw Error("ablate: the texts have no token to score");
  const std::string scored_on =
      command.targets ? " in the reference translations" : " in the model's own translations";

  OutputFile out(std::nullopt, "-o");  // standard output, or main's -o file
  Progress progress("ablate", "texts (2 passes)", command.common.quiet);
  const auto start = std::chrono::steady_clock::now();
  const EncoderDecoderAblation result = ablate_encoder_decoder_heads(
      model, inputs, encoder_heads, decoder_heads, [&](int pass, long done) {
        progress.update((pass - 1) * long(inputs.size()) + done, 2 * long(inputs.size()), 0);
      });
  const AblationCost cost{
      .blocks_run = result.blocks_run,
      .blocks_whole_passes = result.blocks_whole_passes,
      .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  const std::vector<AblatedHeads> kinds = {
      AblatedHeads(result.encoder), AblatedHeads(result.decoder), AblatedHeads(result.cross)};
  switch (command.format) {
    case ReportFormat::kText: {
      std::string text = summary_text(model, result.encoder, scored_on);
      for (std::size_t k = 0; k < kinds.size(); ++k) {
        text.append("\n").append(kEncoderDecoderKinds[k].title).append(":\n");
        text += heads_text(kinds[k]);
      }
      out.write(text + "\n" + cost_text(cost) + "\n");
      break;
    }
    case ReportFormat::kJson: {
      nlohmann::ordered_json json = summary_json(model, result.encoder, "encoder-decoder");
      json["targets"] = command.targets ? "reference" : "own translation";
      for (std::size_t k = 0; k < kinds.size(); ++k) {
        json[kEncoderDecoderKinds[k].key] = heads_json(kinds[k]);
      }
      json["cost"] = cost_json(cost);
      out.write(json_text(json) + "\n");
      break;
    }
    case ReportFormat::kHtml: {
      std::vector<std::string> titles;
      for (const HeadKind& kind : kEncoderDecoderKinds) titles.push_back(kind.title);
      out.write(ablation_page(model, kinds, titles, scored_on));
      spdlog::info("{}", cost_text(cost));
      break;
    }
  }
  out.commit();
  return 0;
}

}  // namespace

void AblateCommand::add_options(CLI::App& app) {
  add_common_options(app, common, "tiny-gpt2-brown");
  add_output_options(app, common, "the same as --format json");
  add_text_options(app, input,
                   "texts whose loss is measured (a decoder's next tokens, an encoder's masks, "
                   "an encoder-decoder's translation of each)");
  add_report_format_option(
      app, format,
      "text (the default: the heads ranked, and grids), json (every number) or html "
      "(the grids as a page)");
  app.add_option("--layers", layers, "layers whose heads to ablate, e.g. 0,5-7 (default: all)");
  app.add_option("--heads", heads, "heads to ablate in those layers (default: all)");
  app.add_option("--targets", targets,
                 "a file with a line per text: for an encoder, the original word behind "
                 "each of its masks, separated by spaces; for an encoder-decoder, the "
                 "reference translation (default: the model's own greedy translation)")
      ->type_name("FILE");
  add_batch_tokens_option(app, batch_tokens);
  add_examples(app, {"attn ablate -f texts.txt",
                     "attn ablate -m gpt2 --layers 0-3 -f texts.txt --json -o ablation.json",
                     "attn ablate -m bert-base-uncased --targets words.txt -f masked.txt --format "
                     "html -o grid.html"});
}

int AblateCommand::run([[maybe_unused]] const CLI::App& app) {
  const AblateCommand& command = *this;
  std::vector<InputText> texts;
  for (InputText& text : read_texts(command.input)) {
    if (is_blank_line(text)) continue;
    require_utf8(text.text, text.source);
    texts.push_back(std::move(text));
  }
  auto model = load_model(command.common.model_dir, command.common.dtype, Passes::kManyRows);
  const ArchSpec& spec = model->spec();
  if (model->kind() == ModelKind::kEncoderDecoder) {
    return run_encoder_decoder_ablation(command, *model, texts);
  }
  if (!model->transformer->has_head()) {
    throw UsageError("ablate: the model in " + model->name() +
                     " has no language-model head (a bare encoder or a classifier): there is no "
                     "loss to measure");
  }
  if (spec.causal && command.targets) {
    throw UsageError(
        "--targets: only for encoders (masked-LM targets) and encoder-decoders (reference "
        "translations); a decoder's loss is its next-token NLL");
  }
  if (!spec.causal && !command.targets) {
    throw UsageError(
        "ablate: an encoder needs --targets FILE: a line per text with the original "
        "word behind each of its masks");
  }
  const AblationHeads heads = chosen_heads(command, spec);

  std::vector<ExcludedMask> excluded;
  std::vector<AblationInput> inputs;
  if (spec.causal) {
    for (const InputText& text : texts) {
      Encoding encoding = model->tokenizer->encode(text.text);
      if (int(encoding.ids.size()) > spec.max_positions) {
        text.fail(std::to_string(encoding.ids.size()) +
                  " tokens, more than the model's context of " +
                  std::to_string(spec.max_positions));
      }
      inputs.push_back(next_token_input(std::move(encoding)));
    }
  } else {
    inputs = masked_inputs(*model, texts, *command.targets, excluded);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (int(inputs[i].ids.size()) > spec.max_positions) {
        texts[i].fail(std::to_string(inputs[i].ids.size()) +
                      " tokens, more than the model's context of " +
                      std::to_string(spec.max_positions));
      }
    }
    for (const ExcludedMask& mask : excluded) {
      spdlog::warn("{}: mask {}: '{}' is {} tokens, not one: left out", texts[mask.input].source,
                   mask.mask + 1, mask.word, mask.tokens);
    }
  }
  const long scored =
      std::accumulate(inputs.begin(), inputs.end(), 0L, [](long sum, const AblationInput& input) {
        return sum + long(input.scored_positions.size());
      });
  if (scored == 0) throw Error("ablate: the texts have no token to score");

  OutputFile out(std::nullopt, "-o");  // standard output, or main's -o file
  Progress progress("ablate", "texts (2 passes)", command.common.quiet);
  const auto start = std::chrono::steady_clock::now();
  const AblationResult result =
      ablate_heads(*model, inputs, heads, command.batch_tokens, [&](int pass, long done) {
        progress.update((pass - 1) * long(inputs.size()) + done, 2 * long(inputs.size()), 0);
      });
  const AblationCost cost{
      .blocks_run = result.blocks_run,
      .blocks_whole_passes = result.blocks_whole_passes(),
      .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  const AblatedHeads ablated(result);
  switch (command.format) {
    case ReportFormat::kText:
      out.write(summary_text(*model, result, "") + heads_text(ablated) + cost_text(cost) + "\n");
      break;
    case ReportFormat::kJson:
      out.write(json_text(ablation_json(*model, ablated, excluded, cost)) + "\n");
      break;
    case ReportFormat::kHtml:
      out.write(ablation_page(*model, {ablated}, {""}, ""));
      spdlog::info("{}", cost_text(cost));
      break;
  }
  out.commit();
  return 0;
}

std::unique_ptr<Command> make_ablate_command() { return std::make_unique<AblateCommand>(); }

}  // namespace attn
