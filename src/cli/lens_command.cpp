// attn lens: the logit lens of each text, as a table (positions down, layers across), JSON in
// the field names of ../shared/golden/interp/lens_*.json, or an HTML page (layers x positions).
#include <cmath>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/io/output_file.h"
#include "src/tasks/lens_view_html.h"  // generated from src/tasks/lens_view.html
#include "src/tasks/logit_lens.h"
#include "src/tasks/translate.h"

namespace attn {
namespace {

// attn lens: the logit lens of each text.
struct LensCommand final : Command {
  LensCommand()
      : Command("lens",
                "the logit lens: what each layer predicts at each position (nostalgebraist 2020)") {
  }
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  ReportFormat format = ReportFormat::kText;
  // --target: the token whose rank and probability are followed through the layers at the
  // last position (an encoder's first mask); default: the model's own prediction there.
  std::optional<std::string> target;
};

// The candidates per cell written to JSON and the page; the reference files' "top5".
constexpr int kLensTopK = 5;

// A token as it reads in the text, quoted and escaped as a JSON string (" cat", "\n").
std::string shown_token(const Tokenizer& tokenizer, int id) {
  return json_text(nlohmann::json(tokenizer.decode(std::span(&id, 1), false)));
}

std::string depth_name(int depth) {
  if (depth == 0) return "embeddings";
  return "block " + std::to_string(depth - 1);
}

// Probabilities with three significant decimals at most: 0.634, 0.0021.
std::string probability_text(double logprob) {
  std::ostringstream out;
  out << std::setprecision(3) << std::exp(logprob);
  return out.str();
}

// What the lens of one text reads: the text's tokens, or an encoder-decoder's decoder over the
// model's own greedy translation of the text (the source).
struct LensInput {
  Encoding encoding;               // the positions the lens reads
  std::optional<Encoding> source;  // an encoder-decoder's source
  std::string translation;         // an encoder-decoder's: the decoder's input as text
};

std::string lens_table(const Model& model, const LensInput& input, const LogitLens& lens,
                       const InputText& text) {
  const Encoding& encoding = input.encoding;
  const Tokenizer& tokenizer = *model.tokenizer;
  // cells[row][column]: a header row, then a row per position; a column for the position, the
  // input token, then one per depth.
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header = {"position", "token"};
  for (int depth = 0; depth < lens.depths; ++depth) header.push_back(depth_name(depth));
  cells.push_back(header);
  for (int t = 0; t < lens.n_tokens; ++t) {
    std::vector<std::string> row = {std::to_string(t), shown_token(tokenizer, encoding.ids[t])};
    for (int depth = 0; depth < lens.depths; ++depth) {
      const LensEntry& top = lens.entries(depth, t)[0];
      row.push_back(shown_token(tokenizer, top.id) + " " + probability_text(top.logprob));
    }
    cells.push_back(row);
  }
  const std::size_t table_rows = cells.size();
  cells.push_back({"", "rank"});
  cells.push_back({"", "probability"});
  for (int depth = 0; depth < lens.depths; ++depth) {
    cells[table_rows].push_back(std::to_string(lens.target_rank[depth]));
    cells[table_rows + 1].push_back(probability_text(lens.target_logprob[depth]));
  }
  std::vector<std::size_t> widths(header.size(), 0);
  for (const auto& row : cells) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], display_width(row[c]));
    }
  }
  std::ostringstream out;
  out << text.text << "\n";
  if (input.source) {
    out << "translation: " << input.translation << "\n"
        << "the next token of the translation each decoder layer predicts at each position, and "
           "its probability:\n";
  } else {
    out << (model.spec().causal ? "the next token" : "the token")
        << " each layer predicts at each position, and its probability:\n";
  }
  for (std::size_t r = 0; r < cells.size(); ++r) {
    if (r == table_rows) {
      out << "target " << shown_token(tokenizer, lens.target_id) << " at position "
          << lens.target_position << ", its rank and probability:\n";
    }
    std::string line;
    for (std::size_t c = 0; c < cells[r].size(); ++c) {
      if (c > 0) line += "  ";
      line += cells[r][c];
      // Padding, except after the last column.
      if (c + 1 < cells[r].size()) line.append(widths[c] - display_width(cells[r][c]), ' ');
    }
    out << line << "\n";
  }
  return out.str();
}

nlohmann::ordered_json lens_json(const Model& model, const LensInput& input, const LogitLens& lens,
                                 const InputText& text) {
  const Encoding& encoding = input.encoding;
  const std::vector<std::string> tokens = token_strings(*model.tokenizer, encoding.ids);
  nlohmann::ordered_json top5 = nlohmann::ordered_json::array();
  for (int depth = 0; depth < lens.depths; ++depth) {
    nlohmann::ordered_json positions = nlohmann::ordered_json::array();
    for (int t = 0; t < lens.n_tokens; ++t) {
      nlohmann::ordered_json entries = nlohmann::ordered_json::array();
      for (int k = 0; k < lens.top_k; ++k) {
        const LensEntry& entry = lens.entries(depth, t)[k];
        entries.push_back({entry.id, shortest(float(entry.logprob)), shortest(entry.logit)});
      }
      positions.push_back(std::move(entries));
    }
    top5.push_back(std::move(positions));
  }
  nlohmann::ordered_json logprobs = nlohmann::ordered_json::array();
  for (double logprob : lens.target_logprob) logprobs.push_back(shortest(float(logprob)));
  nlohmann::ordered_json out = {{"model", model.name()}, {"model_type", model.model_type}};
  if (text.line > 0) out["line"] = text.line;
  out["prompt"] = text.text;
  if (input.source) {
    out["source_ids"] = input.source->ids;
    out["source_tokens"] = token_strings(*model.tokenizer, input.source->ids);
    out["translation"] = input.translation;
  }
  out["ids"] = encoding.ids;
  out["tokens"] = tokens;
  out["shape"] = {lens.depths, lens.n_tokens, lens.top_k};
  out["top5"] = std::move(top5);
  out["target"] = {{"position", lens.target_position},
                   {"id", lens.target_id},
                   {"token", model.tokenizer->token_string(lens.target_id)},
                   {"rank", lens.target_rank},
                   {"logprob", std::move(logprobs)}};
  return out;
}

// The page: src/tasks/lens_view.html with {"model", "model_type", "causal", "inputs":
// [lens_json...], "pieces": {id: {"piece", "text"}}} in place of its marker.
std::string lens_page(const Model& model, const std::vector<nlohmann::ordered_json>& inputs) {
  nlohmann::ordered_json pieces = nlohmann::ordered_json::object();
  auto add_piece = [&](int id) {
    pieces[std::to_string(id)] = {{"piece", model.tokenizer->token_string(id)},
                                  {"text", model.tokenizer->decode(std::span(&id, 1), false)}};
  };
  for (const auto& input : inputs) {
    for (int id : input["ids"]) add_piece(id);
    for (const auto& positions : input["top5"]) {
      for (const auto& entries : positions) {
        for (const auto& entry : entries) add_piece(entry[0].get<int>());
      }
    }
    add_piece(input["target"]["id"].get<int>());
  }
  const nlohmann::ordered_json data = {{"model", model.name()},
                                       {"model_type", model.model_type},
                                       {"causal", model.spec().causal},
                                       {"inputs", inputs},
                                       {"pieces", std::move(pieces)}};
  return page_with_data(kLensViewHtml, "{{LENS_DATA}}", data);
}

// --target: one token of the model's vocabulary (an encoder-decoder's: of its target side).
int target_token(const Model& model, const std::string& target) {
  require_utf8(target, "--target");
  const std::vector<int> ids = model.kind() == ModelKind::kEncoderDecoder
                                   ? target_ids(model, target)
                                   : model.tokenizer->encode_plain(target);
  if (ids.size() != 1) {
    std::string pieces;
    for (int id : ids) {
      if (!pieces.empty()) pieces += ' ';
      pieces += model.tokenizer->token_string(id);
    }
    throw UsageError("--target: '" + target + "' is " + plural(long(ids.size()), "token") +
                     (ids.empty() ? "" : " (" + pieces + ")") +
                     ", not one; give a single token (GPT-2 and Llama tokens start with a space "
                     "inside a text: ' Paris')");
  }
  return ids[0];
}

}  // namespace

void LensCommand::add_options(CLI::App& app) {
  add_common_options(app, common, "tiny-gpt2-brown");
  add_output_options(app, common, "the same as --format json");
  add_text_options(app, input,
                   "texts to run through the model, each alone (an encoder-decoder's decoder "
                   "reads the model's own translation)");
  add_report_format_option(
      app, format,
      "text (the default: a table per text, positions down, layers across), json (the "
      "top 5 of every layer and position, one object per text) or html (a "
      "page: layers x positions)");
  app.add_option("--target", target,
                 "a token whose rank and probability are followed through the layers, at "
                 "the last position (encoders: the first mask; default: the model's own "
                 "prediction there)");
  add_examples(app, {"attn lens \"The jury said the judge was\"",
                     "attn lens -m gpt2 --target \" fair\" \"The jury said the judge was\"",
                     "attn lens -m bert-base-uncased \"Paris is the [MASK] of France.\" --format "
                     "html -o lens.html"});
}

int LensCommand::run([[maybe_unused]] const CLI::App& app) {
  const LensCommand& command = *this;
  const std::vector<InputText> texts = read_texts(command.input);
  OutputFile out(std::nullopt, "-o");  // standard output, or main's -o file
  auto model = load_model(command.common.model_dir, command.common.dtype);
  check_lens_model(*model, "lens");
  const bool encoder_decoder = model->kind() == ModelKind::kEncoderDecoder;
  if (encoder_decoder) check_translation_model(*model, "lens");
  const std::optional<int> target =
      command.target ? std::optional(target_token(*model, *command.target)) : std::nullopt;
  const int context = model->input_stack().spec().max_positions;

  std::vector<nlohmann::ordered_json> page_inputs;
  bool first = true;
  Progress progress("lens", "texts", command.common.quiet);
  int done = 0;
  std::int64_t tokens_done = 0;
  const int failed = for_each_text(texts, [&](const InputText& text) {
    const Encoding encoding = model->tokenizer->encode(text.text);
    if (encoding.ids.empty()) text.fail(kNoTokens);
    if (int(encoding.ids.size()) > context) {
      text.fail(std::to_string(encoding.ids.size()) + " tokens, more than the model's context of " +
                std::to_string(context));
    }
    LensInput input{.encoding = encoding, .source = std::nullopt, .translation = {}};
    std::optional<CrossAttentionMemory> memory;
    if (encoder_decoder) {
      memory = encode_source(*model, encoding.ids);
      input.source = encoding;
      input.encoding = Encoding{
          .ids = greedy_decoder_input(*model, *memory, kMaxOwnTranslationTokens), .type_ids = {}};
      input.translation = model->tokenizer->decode(input.encoding.ids, true);
    }
    const LogitLens lens =
        logit_lens(*model, input.encoding, kLensTopK, target, memory ? &*memory : nullptr);
    switch (command.format) {
      case ReportFormat::kText:
        if (!first) out.write('\n');
        out.write(lens_table(*model, input, lens, text));
        break;
      case ReportFormat::kJson:
        out.write(json_text(lens_json(*model, input, lens, text)) + "\n");
        break;
      case ReportFormat::kHtml:
        page_inputs.push_back(lens_json(*model, input, lens, text));
        break;
    }
    first = false;
    tokens_done += std::int64_t(input.encoding.ids.size());
    progress.update(++done, std::int64_t(texts.size()), tokens_done);
  });
  if (command.format == ReportFormat::kHtml && !page_inputs.empty()) {
    out.write(lens_page(*model, page_inputs));
  }
  out.commit();
  return failed;
}

std::unique_ptr<Command> make_lens_command() { return std::make_unique<LensCommand>(); }

}  // namespace attn
