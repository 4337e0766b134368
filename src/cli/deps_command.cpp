// attn heads --deps FILE.conllu: which heads track syntax, scored against a dependency treebank
// as Clark et al. (2019) do (src/tasks/dependency_heads.h); a table of the best head per
// relation, JSON in the field names of ../shared/golden/interp/deps_*.json, or an HTML grid.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/cli/heads_command.h"
#include "src/cli/progress.h"
#include "src/io/output_file.h"
#include "src/tasks/attention_capture.h"
#include "src/tasks/dependency_heads.h"
#include "src/tasks/head_grid_view_html.h"  // generated from src/tasks/head_grid_view.html

namespace attn {
namespace {

using Json = nlohmann::ordered_json;

struct SkippedSentence {
  int index = 0;
  std::string sent_id;
  std::string reason;
};

// The best (layer, head) of one direction: most correct, ties to the lower layer, then head.
struct BestHead {
  int layer = 0;
  int head = 0;
  long correct = 0;
};

BestHead best_head(const DirectionTally& tally, int n_heads) {
  BestHead best;
  for (std::size_t cell = 0; cell < tally.correct.size(); ++cell) {
    if (tally.correct[cell] > best.correct) {
      best = {int(cell) / n_heads, int(cell) % n_heads, tally.correct[cell]};
    }
  }
  return best;
}

// The best offset: most correct, ties in kBaselineOffsets' order.
std::size_t best_offset(const DirectionTally& tally) {
  std::size_t best = 0;
  for (std::size_t k = 1; k < kBaselineOffsets.size(); ++k) {
    if (tally.baseline_correct[k] > tally.baseline_correct[best]) best = k;
  }
  return best;
}

double accuracy(long correct, long count) { return count > 0 ? double(correct) / count : 0.0; }

Json direction_json(const DirectionTally& tally, int n_layers, int n_heads) {
  Json correct = Json::array();
  for (int layer = 0; layer < n_layers; ++layer) {
    correct.push_back(std::vector<long>(tally.correct.begin() + layer * n_heads,
                                        tally.correct.begin() + (layer + 1) * n_heads));
  }
  const BestHead best = best_head(tally, n_heads);
  const std::size_t offset = best_offset(tally);
  Json by_offset = Json::object();
  for (int k = -5; k <= 5; ++k) {
    if (k == 0) continue;
    const std::size_t index =
        std::find(kBaselineOffsets.begin(), kBaselineOffsets.end(), k) - kBaselineOffsets.begin();
    by_offset[std::to_string(k)] = tally.baseline_correct[index];
  }
  return {{"count", tally.count},
          {"correct", std::move(correct)},
          {"best",
           {{"layer", best.layer},
            {"head", best.head},
            {"correct", best.correct},
            {"accuracy", accuracy(best.correct, tally.count)}}},
          {"baseline",
           {{"offset", kBaselineOffsets[offset]},
            {"correct", tally.baseline_correct[offset]},
            {"accuracy", accuracy(tally.baseline_correct[offset], tally.count)},
            {"correct_by_offset", std::move(by_offset)}}}};
}

// A row of the table: a relation's best head in one direction, with that direction's baseline.
Json table_row(const std::string& relation, const RelationTally& tally, int direction,
               int n_heads) {
  const DirectionTally& d = tally.directions[direction];
  const BestHead best = best_head(d, n_heads);
  const std::size_t offset = best_offset(d);
  return {{"relation", relation},
          {"pairs", tally.pairs},
          {"direction", kDirectionNames[direction]},
          {"layer", best.layer},
          {"head", best.head},
          {"correct", best.correct},
          {"count", d.count},
          {"accuracy", accuracy(best.correct, d.count)},
          {"baseline_offset", kBaselineOffsets[offset]},
          {"baseline_correct", d.baseline_correct[offset]},
          {"baseline_accuracy", accuracy(d.baseline_correct[offset], d.count)}};
}

// An encoder's better direction of a relation (both score the same pairs; ties to dep->head).
int better_direction(const RelationTally& tally, int n_heads) {
  return best_head(tally.directions[kHeadToDependent], n_heads).correct >
                 best_head(tally.directions[kDependentToHead], n_heads).correct
             ? kHeadToDependent
             : kDependentToHead;
}

Json relation_json(const std::string& name, const RelationTally& tally,
                   const DependencyScorer& scorer) {
  Json out = Json::object();
  for (int direction = 0; direction < 2; ++direction) {
    if (tally.directions[direction].count == 0) continue;
    out[kDirectionNames[direction]] =
        direction_json(tally.directions[direction], scorer.n_layers(), scorer.n_heads());
  }
  out["pairs"] = tally.pairs;
  if (!scorer.causal()) {
    Json best = table_row(name, tally, better_direction(tally, scorer.n_heads()), scorer.n_heads());
    best.erase("relation");
    best.erase("pairs");
    out["best"] = std::move(best);
  }
  return out;
}

// The relations most frequent first (ties by name).
std::vector<const std::pair<const std::string, RelationTally>*> by_frequency(
    const std::map<std::string, RelationTally>& relations) {
  std::vector<const std::pair<const std::string, RelationTally>*> sorted;
  for (const auto& entry : relations) sorted.push_back(&entry);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto* a, const auto* b) { return a->second.pairs > b->second.pairs; });
  return sorted;
}

// The paper's Table 1 over the universal relations: an encoder's best direction per relation, a
// decoder's every direction that has pairs.
Json table_json(const DependencyScorer& scorer) {
  Json table = Json::array();
  for (const auto* entry : by_frequency(scorer.universal())) {
    const RelationTally& tally = entry->second;
    if (!scorer.causal()) {
      table.push_back(table_row(entry->first, tally, better_direction(tally, scorer.n_heads()),
                                scorer.n_heads()));
      continue;
    }
    for (int direction = 0; direction < 2; ++direction) {
      if (tally.directions[direction].count > 0) {
        table.push_back(table_row(entry->first, tally, direction, scorer.n_heads()));
      }
    }
  }
  return table;
}

Json deps_json(const Model& model, const std::filesystem::path& file, const Treebank& treebank,
               const std::vector<SkippedSentence>& skipped, const DependencyScorer& scorer) {
  Json skipped_list = Json::array();
  for (const SkippedSentence& s : skipped) {
    skipped_list.push_back({{"sentence", s.index}, {"sent_id", s.sent_id}, {"reason", s.reason}});
  }
  Json relations = {{"deprel", Json::object()}, {"universal", Json::object()}};
  for (const auto& [key, map] :
       {std::pair{"deprel", &scorer.deprel()}, std::pair{"universal", &scorer.universal()}}) {
    for (const auto* entry : by_frequency(*map)) {
      relations[key][entry->first] = relation_json(entry->first, entry->second, scorer);
    }
  }
  Json ties = Json::array();
  for (const NearTie& tie : scorer.near_ties()) {
    ties.push_back({tie.sentence, tie.dependent, kDirectionNames[tie.direction], tie.layer,
                    tie.head, tie.gap, tie.predicted, tie.gold_head});
  }
  const RelationTally& all = scorer.all();
  return {
      {"model", model.name()},
      {"model_type", model.model_type},
      {"kind", scorer.causal() ? "decoder" : "encoder"},
      {"layers", scorer.n_layers()},
      {"heads", scorer.n_heads()},
      {"treebank",
       {{"file", file.string()},
        {"sentences", treebank.sentences.size()},
        {"aligned", long(treebank.sentences.size()) - long(skipped.size())},
        {"skipped", std::move(skipped_list)},
        {"multiword_lines_skipped", treebank.multiword_lines},
        {"empty_nodes_skipped", treebank.empty_nodes}}},
      {"directions", kDirectionNames},
      {"counts",
       {{"words", scorer.words()},
        {"root_words", scorer.root_words()},
        {"pairs", all.pairs},
        {"scored",
         {{kDirectionNames[0], all.directions[0].count},
          {kDirectionNames[1], all.directions[1].count}}}}},
      {"all", relation_json("all", all, scorer)},
      {"table", table_json(scorer)},
      {"relations", std::move(relations)},
      {"ties",
       {{"threshold", kNearTie},
        {"n", scorer.near_ties().size()},
        {"decisions", scorer.decisions()},
        {"columns",
         {"sentence", "dependent", "direction", "layer", "head", "gap", "predicted", "gold_head"}},
        {"list", std::move(ties)}}}};
}

std::string percent(double value) { return fmt::format("{:.1f}%", 100 * value); }

std::string deps_text(const Model& model, const std::filesystem::path& file,
                      const Treebank& treebank, const std::vector<SkippedSentence>& skipped,
                      const DependencyScorer& scorer) {
  std::ostringstream out;
  const RelationTally& all = scorer.all();
  out << fmt::format(
      "{} on {}: {} sentences, {} aligned ({} skipped), {} words, {} dependency pairs\n",
      model.name(), file.filename().string(), treebank.sentences.size(),
      treebank.sentences.size() - skipped.size(), skipped.size(), scorer.words(), all.pairs);
  if (model.kind() == ModelKind::kEncoderDecoder) {
    out << "the encoder's heads, each sentence its source text\n";
  }
  out << "the best head per relation: how often the word it attends to most is the syntactic "
         "head (dep->head), or the word attending most to a dependent is its head (head->dep), "
         "against the best fixed offset"
      << (scorer.causal() ? "; a decoder scores each pair in the direction its heads can see\n"
                          : "\n");
  std::vector<std::vector<std::string>> rows = {
      {"relation", "pairs", "direction", "head", "accuracy", "correct", "baseline", "offset"}};
  const auto add_rows = [&](const std::string& name, const RelationTally& tally) {
    for (int direction = 0; direction < 2; ++direction) {
      if (tally.directions[direction].count == 0) continue;
      if (!scorer.causal() && direction != better_direction(tally, scorer.n_heads())) continue;
      const Json row = table_row(name, tally, direction, scorer.n_heads());
      rows.push_back(
          {name, std::to_string(tally.pairs), kDirectionNames[direction],
           fmt::format("{}.{}", int(row["layer"]), int(row["head"])), percent(row["accuracy"]),
           fmt::format("{}/{}", long(row["correct"]), long(row["count"])),
           percent(row["baseline_accuracy"]), fmt::format("{:+d}", int(row["baseline_offset"]))});
    }
  };
  add_rows("all", all);
  for (const auto* entry : by_frequency(scorer.universal())) add_rows(entry->first, entry->second);
  std::vector<std::size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::size_t pad = widths[c] - row[c].size();
      // Names left-aligned, numbers right-aligned.
      line += c < 3 ? row[c] + std::string(pad, ' ') : std::string(pad, ' ') + row[c];
      if (c + 1 < row.size()) line += "  ";
    }
    out << line << "\n";
  }
  if (!skipped.empty()) {
    out << "skipped (" << skipped.size() << "): sentence " << skipped[0].index << ": "
        << skipped[0].reason << (skipped.size() > 1 ? "; ... (--json lists them all)" : "") << "\n";
  }
  return out.str();
}

// A grid of accuracies per head for "all" and the most frequent relations, each direction.
std::string deps_page(const Model& model, const DependencyScorer& scorer) {
  constexpr std::size_t kRelationsShown = 8;
  Json grids = Json::array();
  const auto add = [&](const std::string& name, const RelationTally& tally) {
    for (int direction = 0; direction < 2; ++direction) {
      const DirectionTally& d = tally.directions[direction];
      if (d.count == 0) continue;
      Json values = Json::array();
      for (int layer = 0; layer < scorer.n_layers(); ++layer) {
        Json row = Json::array();
        for (int head = 0; head < scorer.n_heads(); ++head) {
          row.push_back(accuracy(d.correct[std::size_t(layer) * scorer.n_heads() + head], d.count));
        }
        values.push_back(std::move(row));
      }
      const std::size_t offset = best_offset(d);
      grids.push_back(
          {{"title", name + ", " + kDirectionNames[direction]},
           {"note", fmt::format("{} pairs; the best fixed offset, {:+d}, is right on {} (heads "
                                "that do better are outlined)",
                                d.count, kBaselineOffsets[offset],
                                percent(accuracy(d.baseline_correct[offset], d.count)))},
           {"diverging", false},
           {"values", std::move(values)},
           {"above", accuracy(d.baseline_correct[offset], d.count)}});
    }
  };
  add("all relations", scorer.all());
  const auto relations = by_frequency(scorer.universal());
  for (std::size_t i = 0; i < std::min(kRelationsShown, relations.size()); ++i) {
    add(relations[i]->first, relations[i]->second);
  }
  const Json data = {
      {"title", "Dependency heads"},
      {"summary", model.name() + " (" + model.model_type +
                      (model.kind() == ModelKind::kEncoderDecoder ? ", the encoder" : "") +
                      "): each cell, how often the head's strongest attention picks the "
                      "syntactic relation (Clark et al. 2019), darker for more"},
      {"grids", std::move(grids)}};
  return page_with_data(kHeadGridViewHtml, "{{GRID_DATA}}", data);
}

}  // namespace

int run_dependency_heads(const HeadsCommand& command) {
  const std::filesystem::path& file = *command.deps;
  if (!command.input.arguments.empty() || !command.input.prompts.empty() || command.input.file) {
    throw UsageError("--deps: the treebank's sentences are the texts; give no other");
  }
  if (command.probe == true || command.probe_options_given || command.cross ||
      command.max_new_tokens) {
    throw UsageError(
        "--deps: scores self-attention over the treebank alone; --probe, --cross "
        "and --max-new-tokens do not apply");
  }
  const Treebank treebank =
      read_conllu(read_input_text(file, "--deps", kMaxInputTextBytes), file.string());
  auto model = load_model(command.common.model_dir, command.common.dtype, Passes::kManyRows);
  // An encoder-decoder's encoder reads the sentence; its decoder reads another language.
  const ArchSpec& spec = model->input_stack().spec();
  const TokenOffsets* offsets = &model->tokenizer->offsets();
  const AttentionSelection all_heads = select_attention(spec, {});

  DependencyScorer scorer(spec.n_layer, spec.n_head, spec.causal);
  std::vector<SkippedSentence> skipped;
  Progress progress("heads --deps", "sentences", command.common.quiet);
  long tokens = 0;
  for (std::size_t index = 0; index < treebank.sentences.size(); ++index) {
    const TreebankSentence& sentence = treebank.sentences[index];
    const auto skip = [&](const std::string& reason) {
      skipped.push_back({int(index), sentence.sent_id, reason});
    };
    progress.update(long(index), long(treebank.sentences.size()), tokens);
    if (!sentence.text) {
      skip("no '# text = ' comment");
      continue;
    }
    if (sentence.words.empty()) {
      skip("no words");
      continue;
    }
    const Encoding encoding = model->tokenizer->encode(*sentence.text);
    if (int(encoding.ids.size()) > spec.max_positions) {
      skip(std::to_string(encoding.ids.size()) + " tokens, more than the model's context");
      continue;
    }
    const auto spans = token_byte_spans(*model->tokenizer, offsets, *sentence.text, encoding.ids);
    if (!spans) {
      skip(
          "its tokens do not spell the text (an unknown token, or characters the tokenizer "
          "changed beyond the case of ASCII letters)");
      continue;
    }
    const WordAlignment alignment = align_words(*sentence.text, sentence.words, *spans);
    if (!alignment.problem.empty()) {
      skip(alignment.problem);
      continue;
    }
    const int n_words = int(sentence.words.size());
    scorer.begin_sentence(int(index), sentence.words);
    capture_attention(
        *model, encoding, all_heads, [&](int layer, int head, const float* probabilities, int n) {
          scorer.add_head(layer, head,
                          word_attention(probabilities, n, alignment.token_word, n_words));
        });
    tokens += long(encoding.ids.size());
  }
  progress.update(long(treebank.sentences.size()), long(treebank.sentences.size()), tokens);
  if (skipped.size() == treebank.sentences.size()) {
    throw Error("--deps " + file.string() +
                ": no sentence could be aligned with the model's "
                "tokens (" +
                (skipped.empty() ? "the file has no sentence" : skipped[0].reason) + ")");
  }

  OutputFile out(std::nullopt, "-o");  // standard output, or main's -o file
  switch (command.format) {
    case ReportFormat::kText:
      out.write(deps_text(*model, file, treebank, skipped, scorer));
      break;
    case ReportFormat::kJson:
      out.write(json_text(deps_json(*model, file, treebank, skipped, scorer)) + "\n");
      break;
    case ReportFormat::kHtml:
      out.write(deps_page(*model, scorer));
      break;
  }
  out.commit();
  return 0;
}

}  // namespace attn
