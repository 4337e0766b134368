// attn ablate: how much a model's loss on the given texts grows when one head at a time is
// removed (zero-ablation) or replaced by its mean output (mean-ablation); a ranked table and
// grids, JSON in the field names of ../shared/golden/interp/ablation_*.json, or an HTML grid.
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
#include "src/cli/progress.h"
#include "src/io/output_file.h"
#include "src/tasks/head_ablation.h"
#include "src/tasks/head_grid_view_html.h"  // generated from src/tasks/head_grid_view.html

namespace attn {
namespace {

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

std::string cost_text(const AblationResult& result, double seconds) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << "cost: " << result.blocks_run
      << " token-blocks run, where a whole pass for mu, the baseline and each ablation would run "
      << result.blocks_whole_passes() << " ("
      << 100.0 * double(result.blocks_run) / double(result.blocks_whole_passes()) << "%); "
      << seconds << " s";
  return out.str();
}

std::string ablation_text(const Model& model, const AblationResult& result,
                          const AblationTable& zero, const AblationTable& mean, double seconds) {
  std::ostringstream out;
  out << model.name() << ": " << plural(result.n_inputs, "text") << ", "
      << plural(result.n_scored, "token") << " scored; baseline mean NLL " << std::fixed
      << std::setprecision(6) << result.baseline_mean_nll() << "\n";
  out << "change in mean NLL with one head removed (zero) or replaced by its mean output (mean); "
         "positive: the model needs the head\n";
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
  out << cost_text(result, seconds) << "\n";
  return out.str();
}

nlohmann::ordered_json ablation_json(const Model& model, const AblationResult& result,
                                     const AblationTable& zero, const AblationTable& mean,
                                     const std::vector<ExcludedMask>& excluded, double seconds) {
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
  nlohmann::ordered_json out = {{"model", model.name()},
                                {"model_type", model.model_type},
                                {"kind", model.spec().causal ? "decoder" : "encoder"},
                                {"layers", result.n_layers},
                                {"heads", result.n_heads},
                                {"head_dim", result.head_dim},
                                {"n_items", result.n_inputs},
                                {"n_scored", result.n_scored},
                                {"n_positions_in_mean", result.n_positions},
                                {"baseline_mean_nll", shortest(float(result.baseline_mean_nll()))},
                                {"zero_ablation", table_json(zero, result.n_heads)},
                                {"mean_ablation", table_json(mean, result.n_heads)},
                                {"mu", std::move(mu)},
                                {"cost",
                                 {{"token_blocks_run", result.blocks_run},
                                  {"token_blocks_whole_passes", result.blocks_whole_passes()},
                                  {"seconds", seconds}}}};
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

std::string ablation_page(const Model& model, const AblationResult& result,
                          const AblationTable& zero, const AblationTable& mean) {
  std::ostringstream summary;
  summary << model.name() << " (" << model.model_type << "): " << plural(result.n_inputs, "text")
          << ", " << plural(result.n_scored, "token") << " scored, baseline mean NLL "
          << std::setprecision(6) << result.baseline_mean_nll()
          << ". Each cell: the change in mean NLL with that head ablated; red, the model needs "
             "the head; blue, it does better without it.";
  const nlohmann::ordered_json data = {
      {"title", "Head ablation"},
      {"summary", summary.str()},
      {"grids",
       {{{"title", "zero-ablation"},
         {"note", "the head's output removed"},
         {"diverging", true},
         {"values", grid_json(zero.delta, result.n_heads)}},
        {{"title", "mean-ablation"},
         {"note", "the head's output replaced by its mean over every position of the texts"},
         {"diverging", true},
         {"values", grid_json(mean.delta, result.n_heads)}}}}};
  return page_with_data(kHeadGridViewHtml, "{{GRID_DATA}}", data);
}

}  // namespace

int run_ablate(const AblateCommand& command) {
  std::vector<InputText> texts;
  for (InputText& text : read_texts(command.input)) {
    if (is_blank(text.text)) continue;
    require_utf8(text.text, text.source);
    texts.push_back(std::move(text));
  }
  auto model = load_model(command.common.model_dir, command.common.dtype);
  const ArchSpec& spec = model->spec();
  if (model->kind() == ModelKind::kEncoderDecoder) {
    throw UsageError("ablate: not implemented for encoder-decoders ('" + model->model_type + "')");
  }
  if (!model->transformer->has_head()) {
    throw UsageError("ablate: the model in " + model->name() +
                     " has no language-model head (a bare encoder or a classifier): there is no "
                     "loss to measure");
  }
  if (spec.causal && command.targets) {
    throw UsageError(
        "--targets: only for encoders (masked-LM targets); a decoder's loss is its "
        "next-token NLL");
  }
  if (!spec.causal && !command.targets) {
    throw UsageError(
        "ablate: an encoder needs --targets FILE: a line per text with the original "
        "word behind each of its masks");
  }
  const AblationHeads heads{
      .layers = parse_index_list(command.layers, spec.n_layer, "--layers", "layer"),
      .heads = parse_index_list(command.heads, spec.n_head, "--heads", "head")};

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
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const AblationTable zero = ablation_table(result, result.zero_nll_sum);
  const AblationTable mean = ablation_table(result, result.mean_nll_sum);
  switch (command.format) {
    case AblateFormat::kText:
      out.write(ablation_text(*model, result, zero, mean, seconds));
      break;
    case AblateFormat::kJson:
      out.write(json_text(ablation_json(*model, result, zero, mean, excluded, seconds)) + "\n");
      break;
    case AblateFormat::kHtml:
      out.write(ablation_page(*model, result, zero, mean));
      spdlog::info("{}", cost_text(result, seconds));
      break;
  }
  out.commit();
  return 0;
}

}  // namespace attn
