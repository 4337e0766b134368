// attn heads: what every attention head does. Runs the texts (packed into batches), and for a
// decoder an induction probe, through the model, and prints each head's statistics and role
// (src/tasks/head_stats.h) as a table or as JSON.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/cli/commands.h"
#include "src/io/output_file.h"
#include "src/tasks/attention_capture.h"
#include "src/tasks/attention_view_html.h"  // generated from src/tasks/attention_view.html
#include "src/tasks/head_stats.h"
#include "src/tasks/heads_view_html.h"  // generated from src/tasks/heads_view.html

namespace attn {
namespace {

// The texts of the command line or of --file (blank lines skipped), each with the name its
// errors give.
std::vector<std::pair<std::string, std::string>> read_texts(const HeadsCommand& command) {
  std::vector<std::pair<std::string, std::string>> texts;
  if (!command.file) {
    for (std::size_t i = 0; i < command.texts.size(); ++i) {
      texts.emplace_back(command.texts[i], "text " + std::to_string(i + 1));
    }
    return texts;
  }
  const std::string file_name = "--file " + command.file->string();
  const std::string contents = read_input_text(*command.file, "--file", kMaxInputTextBytes);
  if (contents.empty()) throw Error(file_name + ": is empty");
  int line_number = 0;
  for (std::string& line : split_lines(contents)) {
    ++line_number;
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    texts.emplace_back(std::move(line), file_name + ": line " + std::to_string(line_number));
  }
  if (texts.empty()) throw Error(file_name + ": has only blank lines");
  return texts;
}

// Tokenizes every text; an empty or too long one is bad input.
std::vector<HeadStatsInput> encode_texts(
    const Model& model, const std::vector<std::pair<std::string, std::string>>& texts) {
  std::vector<HeadStatsInput> inputs;
  const int context = model.spec().max_positions;
  for (const auto& [text, where] : texts) {
    require_utf8(text, where);
    std::vector<int> ids = model.tokenizer->encode(text).ids;
    if (ids.empty()) throw Error(where + ": gives no tokens");
    if (int(ids.size()) > context) {
      throw Error(where + ": " + std::to_string(ids.size()) +
                  " tokens, more than the model's context of " + std::to_string(context));
    }
    inputs.push_back(describe_input(*model.tokenizer, std::move(ids)));
  }
  return inputs;
}

// "3.1": layer 3, head 1.
std::string head_name(const HeadScores& scores) {
  return std::to_string(scores.layer) + "." + std::to_string(scores.head);
}

// "previous", or for a mixed head what it leans to: "mixed:first".
std::string role_label(const HeadScores& scores) {
  if (scores.role != HeadRole::kMixed) return role_name(scores.role);
  return std::string("mixed:") + role_name(scores.strongest);
}

std::string scores_table(const std::vector<HeadScores>& heads, bool probe) {
  std::string out =
      fmt::format("{:>5} {:>4}  {:<17} {:>5}  {:>5} {:>5} {:>5} {:>5} {:>5} {:>5}", "layer", "head",
                  "role", "score", "prev", "next", "self", "first", "sep", "punct");
  if (probe) out += fmt::format(" {:>5}", "induc");
  out += fmt::format(" {:>6} {:>7}\n", "dist", "entropy");
  for (const HeadScores& s : heads) {
    out += fmt::format(
        "{:>5} {:>4}  {:<17} {:>5.2f}  {:>5.2f} {:>5.2f} {:>5.2f} {:>5.2f} {:>5.2f} {:>5.2f}",
        s.layer, s.head, role_label(s), s.role_score, s.previous, s.next, s.self, s.first,
        s.separator, s.punctuation);
    if (probe) out += fmt::format(" {:>5.2f}", s.induction.value_or(0));
    out += fmt::format(" {:>6.2f} {:>7.2f}\n", s.distance, s.entropy);
  }
  return out;
}

// One line per role found, its heads by score, best first: "previous (2): 0.3 (0.91), 1.2
// (0.66)"; a mixed head with its strongest statistic: "2.2 (first 0.23)".
std::string role_summary(const std::vector<HeadScores>& heads) {
  std::map<HeadRole, std::vector<const HeadScores*>> by_role;
  for (const HeadScores& s : heads) by_role[s.role].push_back(&s);
  std::string out;
  for (auto& [role, members] : by_role) {
    std::stable_sort(members.begin(), members.end(),
                     [](const auto* a, const auto* b) { return a->role_score > b->role_score; });
    out += fmt::format("{} ({}):", role_name(role), members.size());
    for (std::size_t i = 0; i < members.size(); ++i) {
      out += fmt::format("{} {}", i > 0 ? "," : "", head_name(*members[i]));
      out +=
          fmt::format(" ({}{:.2f})",
                      role == HeadRole::kMixed ? std::string(role_name(members[i]->strongest)) + " "
                                               : std::string(),
                      members[i]->role_score);
    }
    out += "\n";
  }
  return out;
}

nlohmann::ordered_json scores_json(const std::vector<HeadScores>& heads) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const HeadScores& s : heads) {
    out.push_back({{"layer", s.layer},
                   {"head", s.head},
                   {"role", role_name(s.role)},
                   {"role_score", s.role_score},
                   {"strongest", role_name(s.strongest)},
                   {"previous", s.previous},
                   {"next", s.next},
                   {"self", s.self},
                   {"first", s.first},
                   {"separator", s.separator},
                   {"punctuation", s.punctuation},
                   {"distance", s.distance},
                   {"entropy", s.entropy},
                   {"induction", s.induction ? nlohmann::ordered_json(*s.induction) : nullptr}});
  }
  return out;
}

// The attention document of one input, as `attn attention --format json` writes it (weights
// rounded to 4 decimals), for the model view's thumbnails and single-head pages.
nlohmann::ordered_json attention_document(const Model& model, const std::string& text,
                                          const std::vector<int>& ids) {
  const ArchSpec& spec = model.spec();
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  capture_attention(model, Encoding{.ids = ids, .type_ids = {}}, select_attention(spec, {}),
                    [&](int layer, int head, const float* probabilities, int n) {
                      if (head == 0) layers.push_back({{"layer", layer}, {"heads", {}}});
                      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
                      for (int q = 0; q < n; ++q) {
                        std::vector<double> row;
                        for (int k = 0; k < n; ++k) {
                          row.push_back(std::round(probabilities[q * n + k] * 1e4) / 1e4);
                        }
                        rows.push_back(std::move(row));
                      }
                      layers.back()["heads"].push_back({{"head", head}, {"weights", rows}});
                    });
  return {{"model", model.name()},  {"model_type", model.model_type},
          {"text", text},           {"tokens", token_strings(*model.tokenizer, ids)},
          {"token_ids", ids},       {"n_layers", spec.n_layer},
          {"n_heads", spec.n_head}, {"attention", std::move(layers)}};
}

// The model view: src/tasks/heads_view.html with its data in place of the marker.
std::string heads_page(nlohmann::ordered_json data) {
  data["head_page"] = kAttentionViewHtml;
  // Inside a <script> element "</script>" must not appear: '<' (only ever inside a JSON
  // string) is written \u003c.
  std::string json;
  for (char c : json_text(data)) {
    if (c == '<') {
      json += "\\u003c";
    } else {
      json += c;
    }
  }
  constexpr std::string_view kMarker = "{{HEADS_DATA}}";
  const std::size_t marker = kHeadsViewHtml.find(kMarker);
  return std::string(kHeadsViewHtml.substr(0, marker)) + json +
         std::string(kHeadsViewHtml.substr(marker + kMarker.size()));
}

}  // namespace

int run_heads(const HeadsCommand& command) {
  if (!command.texts.empty() && command.file) {
    throw UsageError("text and --file: give the input one way, not both");
  }
  if (command.texts.empty() && !command.file) throw UsageError("heads: give a text or --file");
  OutputFile out(command.output, "-o");
  auto model = load_model(command.common.model_dir, command.common.dtype);
  model->require_single_stack("heads");
  const ArchSpec& spec = model->spec();
  const bool probe = command.probe.value_or(spec.causal);
  if (!spec.causal && (command.probe == true || command.probe_options_given)) {
    throw UsageError(std::string(command.probe == true ? "--probe induction"
                                                       : "--probe-sequences, "
                                                         "--probe-length, --seed") +
                     ": the induction probe needs a decoder; '" + model->model_type +
                     "' is an encoder");
  }
  std::vector<HeadStatsInput> probes;
  if (probe) probes = induction_probe_inputs(*model, command.probe_options);
  const std::vector<std::pair<std::string, std::string>> texts = read_texts(command);
  const std::vector<HeadStatsInput> inputs = encode_texts(*model, texts);

  HeadStatsAccumulator stats(spec.n_layer, spec.n_head, spec.causal);
  accumulate_head_stats(*model, inputs, command.batch_tokens, stats);
  ProbeLoss loss;
  if (probe) loss = run_induction_probe(*model, probes, command.batch_tokens, stats);
  const std::vector<HeadScores> heads = stats.scores();
  long tokens = 0;
  for (const HeadStatsInput& input : inputs) tokens += long(input.ids.size());

  if (command.format == HeadsFormat::kHtml) {
    out.write(
        heads_page({{"model", model->name()},
                    {"inputs", inputs.size()},
                    {"role_threshold", kRoleThreshold},
                    {"heads", scores_json(heads)},
                    {"document", attention_document(*model, texts[0].first, inputs[0].ids)}}));
  } else if (command.format == HeadsFormat::kJson) {
    nlohmann::ordered_json document = {
        {"model", model->name()},          {"model_type", model->model_type},
        {"n_layers", spec.n_layer},        {"n_heads", spec.n_head},
        {"inputs", inputs.size()},         {"tokens", tokens},
        {"role_threshold", kRoleThreshold}};
    document["probe"] = nullptr;
    if (probe) {
      document["probe"] = {{"sequences", command.probe_options.sequences},
                           {"length", command.probe_options.length},
                           {"seed", command.probe_options.seed},
                           {"first_copy_loss", loss.first_copy},
                           {"second_copy_loss", loss.second_copy},
                           {"loss_drop", loss.first_copy - loss.second_copy}};
    }
    document["heads"] = scores_json(heads);
    out.write(json_text(document) + "\n");
  } else {
    out.write(fmt::format("{}: {} layers x {} heads, {} input(s), {} tokens\n", model->name(),
                          spec.n_layer, spec.n_head, inputs.size(), tokens));
    if (probe) {
      out.write(fmt::format(
          "induction probe: {} random sequences of {} tokens repeated twice (seed {}); loss "
          "{:.3f} nats on the first copy, {:.3f} on the second (drop {:.3f})\n",
          command.probe_options.sequences, command.probe_options.length, command.probe_options.seed,
          loss.first_copy, loss.second_copy, loss.first_copy - loss.second_copy));
    }
    out.write('\n');
    out.write(scores_table(heads, probe));
    out.write(fmt::format("\nroles (the largest mass statistic when >= {:.2f}, else mixed):\n",
                          kRoleThreshold));
    out.write(role_summary(heads));
  }
  out.commit();
  return 0;
}

}  // namespace attn
