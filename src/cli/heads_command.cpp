// attn heads: what every attention head does. Runs the texts (packed into batches), and for a
// decoder an induction probe, through the model, and prints each head's statistics and role
// (src/tasks/head_stats.h) as a table or as JSON.
#include "src/cli/heads_command.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/cli/options.h"
#include "src/io/output_file.h"
#include "src/tasks/attention_capture.h"
#include "src/tasks/attention_view_html.h"  // generated from src/tasks/attention_view.html
#include "src/tasks/head_stats.h"
#include "src/tasks/heads_view_html.h"  // generated from src/tasks/heads_view.html
#include "src/tasks/translate.h"

namespace attn {
namespace {

// Probe sequences beyond this tell nothing new about a head; the bound keeps a typo from
// running for hours.
constexpr int kMaxProbeSequences = 10000;

// The texts (text_input.h; blank lines skipped), each with the name its errors give.
std::vector<std::pair<std::string, std::string>> heads_texts(const HeadsCommand& command) {
  std::vector<std::pair<std::string, std::string>> texts;
  for (InputText& text : read_texts(command.input)) {
    if (!is_blank_line(text)) texts.emplace_back(std::move(text.text), std::move(text.source));
  }
  return texts;
}

// Tokenizes every text; an empty one, or one longer than `context`, is bad input.
std::vector<HeadStatsInput> encode_texts(
    const Model& model, const std::vector<std::pair<std::string, std::string>>& texts,
    int context) {
  std::vector<HeadStatsInput> inputs;
  for (const auto& [text, where] : texts) {
    require_utf8(text, where);
    std::vector<int> ids = model.tokenizer->encode(text).ids;
    if (ids.empty()) throw Error(where + ": " + kNoTokens);
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

// The heads of one kind of attention: a model's only stack, or an encoder-decoder's encoder,
// decoder or cross-attention.
struct HeadsSection {
  std::string id;     // "attention" (a single stack), "encoder", "decoder" or "cross"
  std::string title;  // "encoder self-attention", ...; empty for a single stack
  int n_layers = 0;
  int n_heads = 0;
  HeadAttention attention = HeadAttention::kBidirectional;
  std::vector<HeadScores> heads;
};

HeadsSection make_section(std::string id, std::string title, const ArchSpec& spec,
                          const HeadStatsAccumulator& stats) {
  return {.id = std::move(id),
          .title = std::move(title),
          .n_layers = spec.n_layer,
          .n_heads = spec.n_head,
          .attention = stats.attention(),
          .heads = stats.scores()};
}

// The table: cross-attention has only the statistics over the source's tokens.
std::string scores_table(const HeadsSection& section, bool probe) {
  const bool positional = section.attention != HeadAttention::kCross;
  std::string out = fmt::format("{:>5} {:>4}  {:<17} {:>5} ", "layer", "head", "role", "score");
  if (positional) out += fmt::format(" {:>5} {:>5} {:>5}", "prev", "next", "self");
  out += fmt::format(" {:>5} {:>5} {:>5}", "first", "sep", "punct");
  if (probe) out += fmt::format(" {:>5}", "induc");
  if (positional) out += fmt::format(" {:>6}", "dist");
  out += fmt::format(" {:>7}\n", "entropy");
  for (const HeadScores& s : section.heads) {
    out +=
        fmt::format("{:>5} {:>4}  {:<17} {:>5.2f} ", s.layer, s.head, role_label(s), s.role_score);
    if (positional) out += fmt::format(" {:>5.2f} {:>5.2f} {:>5.2f}", s.previous, s.next, s.self);
    out += fmt::format(" {:>5.2f} {:>5.2f} {:>5.2f}", s.first, s.separator, s.punctuation);
    if (probe) out += fmt::format(" {:>5.2f}", s.induction.value_or(0));
    if (positional) out += fmt::format(" {:>6.2f}", s.distance);
    out += fmt::format(" {:>7.2f}\n", s.entropy);
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

// Every head's numbers; a statistic the attention does not have (cross-attention's positional
// ones, induction without the probe) is null.
nlohmann::ordered_json scores_json(const HeadsSection& section) {
  const bool positional = section.attention != HeadAttention::kCross;
  const auto positional_value = [&](double value) {
    return positional ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const HeadScores& s : section.heads) {
    out.push_back({{"layer", s.layer},
                   {"head", s.head},
                   {"role", role_name(s.role)},
                   {"role_score", s.role_score},
                   {"strongest", role_name(s.strongest)},
                   {"previous", positional_value(s.previous)},
                   {"next", positional_value(s.next)},
                   {"self", positional_value(s.self)},
                   {"first", s.first},
                   {"separator", s.separator},
                   {"punctuation", s.punctuation},
                   {"distance", positional_value(s.distance)},
                   {"entropy", s.entropy},
                   {"induction", s.induction ? nlohmann::ordered_json(*s.induction) : nullptr}});
  }
  return out;
}

// A section's heads for the JSON document and the model view.
nlohmann::ordered_json section_json(const HeadsSection& section) {
  return {{"id", section.id},
          {"title", section.title},
          {"n_layers", section.n_layers},
          {"n_heads", section.n_heads},
          {"heads", scores_json(section)}};
}

// The attention document of the first input, as `attn attention --format json` writes it, for
// the model view's thumbnails and single-head pages; an encoder-decoder's decoder reads
// `decoder_ids`.
nlohmann::ordered_json attention_document(const Model& model, const std::string& text,
                                          const std::vector<int>& ids,
                                          const std::vector<int>& decoder_ids = {}) {
  const AttentionDocumentInfo info = attention_document_info(
      model, text, std::nullopt, Encoding{.ids = ids, .type_ids = {}}, decoder_ids);
  StringSink document;
  const AttentionOptions all;
  AttentionWriter writer(document, AttentionFormat::kJson, all.precision, info);
  write_attention_heads(model, info, all, writer);
  writer.finish();
  return nlohmann::ordered_json::parse(document.text);
}

// The model view: src/tasks/heads_view.html with its data in place of the marker.
std::string heads_page(nlohmann::ordered_json data) {
  data["head_page"] = kAttentionViewHtml;
  return page_with_data(kHeadsViewHtml, "{{HEADS_DATA}}", data);
}

// The heads of a decoder or an encoder: the texts, and a decoder's induction probe.
struct SingleStackHeads {
  std::vector<HeadStatsInput> inputs;
  HeadsSection section;
  std::optional<ProbeLoss> probe_loss;  // when the probe ran
};

SingleStackHeads single_stack_heads(const HeadsCommand& command, const Model& model,
                                    const std::vector<std::pair<std::string, std::string>>& texts) {
  const ArchSpec& spec = model.spec();
  const bool decoder = model.kind() == ModelKind::kDecoder;
  const bool probe = command.probe.value_or(decoder);
  std::vector<HeadStatsInput> probes;
  if (probe) probes = induction_probe_inputs(model, command.probe_options);
  SingleStackHeads result;
  result.inputs = encode_texts(model, texts, spec.max_positions);
  HeadStatsAccumulator stats(spec.n_layer, spec.n_head,
                             decoder ? HeadAttention::kCausal : HeadAttention::kBidirectional);
  accumulate_head_stats(model, result.inputs, command.batch_tokens, stats);
  if (probe) result.probe_loss = run_induction_probe(model, probes, command.batch_tokens, stats);
  result.section = make_section("attention", "", spec, stats);
  return result;
}

// An encoder-decoder's heads: each text is a source, and the decoder reads the model's greedy
// translation of it.
struct EncoderDecoderHeads {
  std::vector<HeadStatsInput> sources;
  std::vector<HeadStatsInput> targets;  // the decoder's inputs, start token first
  std::vector<HeadsSection> sections;   // encoder and decoder, or cross
};

EncoderDecoderHeads encoder_decoder_heads(
    const HeadsCommand& command, const Model& model,
    const std::vector<std::pair<std::string, std::string>>& texts) {
  check_translation_model(model, "heads");
  const ArchSpec& encoder_spec = model.encoder->spec();
  const ArchSpec& decoder_spec = model.spec();
  EncoderDecoderHeads result;
  result.sources = encode_texts(model, texts, encoder_spec.max_positions);
  const int max_new_tokens = command.max_new_tokens.value_or(kHeadsTargetTokens);
  HeadStatsAccumulator encoder(encoder_spec.n_layer, encoder_spec.n_head,
                               HeadAttention::kBidirectional);
  HeadStatsAccumulator decoder(decoder_spec.n_layer, decoder_spec.n_head, HeadAttention::kCausal);
  HeadStatsAccumulator cross(decoder_spec.n_layer, decoder_spec.n_head, HeadAttention::kCross);
  result.targets = accumulate_encoder_decoder_head_stats(
      model, result.sources,
      [&](std::size_t, const CrossAttentionMemory& memory) {
        return greedy_decoder_input(model, memory, max_new_tokens);
      },
      encoder, decoder, cross);
  if (command.cross) {
    result.sections.push_back(make_section(
        "cross", "cross-attention (target tokens over the source)", decoder_spec, cross));
  } else {
    result.sections.push_back(
        make_section("encoder", "encoder self-attention", encoder_spec, encoder));
    result.sections.push_back(
        make_section("decoder", "decoder self-attention", decoder_spec, decoder));
  }
  return result;
}

long token_count(const std::vector<HeadStatsInput>& inputs) {
  long tokens = 0;
  for (const HeadStatsInput& input : inputs) tokens += long(input.ids.size());
  return tokens;
}

// The text output of the sections: each one's table and roles, under its title if it has one.
std::string sections_text(const std::vector<HeadsSection>& sections, bool probe) {
  std::string out;
  for (const HeadsSection& section : sections) {
    out += '\n';
    if (!section.title.empty()) {
      out += fmt::format("{}: {} layers x {} heads\n", section.title, section.n_layers,
                         section.n_heads);
    }
    out += scores_table(section, probe);
    out += fmt::format("\nroles (the largest mass statistic when >= {:.2f}, else mixed):\n",
                       kRoleThreshold);
    out += role_summary(section.heads);
  }
  return out;
}

}  // namespace

void HeadsCommand::add_options(CLI::App& app) {
  add_common_options(app, common, "tiny-gpt2-brown");
  add_output_options(app, common, "the same as --format json");
  add_text_options(app, input, "texts to run through the model");
  add_report_format_option(app, format,
                           "text (the default: a table and the roles), json (every number) or "
                           "html (a page with every layer and head on the first input)");
  add_batch_tokens_option(app, batch_tokens);
  app.add_option_function<std::string>(
         "--probe", [this](const std::string& name) { probe = name == "induction"; },
         "induction: score induction heads on random sequences repeated twice (decoders; the "
         "default for them), or none")
      ->check(CLI::IsMember({"induction", "none"}));
  app.add_option("--probe-sequences", probe_options.sequences,
                 "random sequences in the induction probe (default: " +
                     std::to_string(probe_options.sequences) + ")")
      ->check(whole_number<int>())
      ->check(positive())
      ->check(at_most(kMaxProbeSequences));
  app.add_option("--probe-length", probe_options.length,
                 "tokens of each probe sequence, before it is repeated; at most half the "
                 "context (default: " +
                     std::to_string(probe_options.length) + ")")
      ->check(whole_number<int>())
      ->check(number_check(">= 2", [](double v) { return v >= 2; }));
  app.add_option(
         "-s,--seed", probe_options.seed,
         "random seed of the probe sequences (default: " + std::to_string(probe_options.seed) + ")")
      ->check(whole_number<std::uint64_t>())
      ->check(number_check("from 0 to " + std::to_string(kMaxSeed),
                           [](double v) { return v >= 0 && v <= double(kMaxSeed); }));
  app.add_option("--deps", deps,
                 "score every head against a dependency treebank (CoNLL-U) as Clark et al. 2019 "
                 "do: which heads find a word's syntactic head (an encoder-decoder's encoder "
                 "heads)")
      ->type_name("FILE.conllu");
  app.add_flag("--cross", cross,
               "encoder-decoders: the cross-attention heads (target tokens over the source) "
               "instead of the encoder's and decoder's self-attention heads");
  app.add_option("-n,--max-new-tokens", max_new_tokens,
                 "encoder-decoders: the decoder reads the model's greedy translation of each "
                 "text, at most this many tokens (default: " +
                     std::to_string(kHeadsTargetTokens) + ")")
      ->check(whole_number<int>())
      ->check(positive());
  add_examples(app, {"attn heads \"The jury said the judge was fair.\"",
                     "attn heads -m bert-base-uncased -f texts.txt --format html -o heads.html",
                     "attn heads -m bert-base-uncased --deps docs/examples/treebank.conllu"});
}

int HeadsCommand::run(const CLI::App& app) {
  probe_options_given = app.count("--probe-sequences") > 0 || app.count("--probe-length") > 0 ||
                        app.count("--seed") > 0;
  const HeadsCommand& command = *this;
  if (command.deps) return run_dependency_heads(command);
  const std::vector<std::pair<std::string, std::string>> texts = heads_texts(command);
  OutputFile out(std::nullopt, "-o");  // standard output, or main's -o file
  auto model = load_model(command.common.model_dir, command.common.dtype);
  const ModelKind kind = model->kind();
  const bool encoder_decoder = kind == ModelKind::kEncoderDecoder;
  const std::string is_kind = "'" + model->model_type + "' is " +
                              (kind == ModelKind::kDecoder   ? "a decoder"
                               : kind == ModelKind::kEncoder ? "an encoder"
                                                             : "an encoder-decoder");
  if (!encoder_decoder && (command.cross || command.max_new_tokens)) {
    throw UsageError(std::string(command.cross ? "--cross" : "--max-new-tokens") +
                     ": only for an encoder-decoder (Marian, T5); " + is_kind);
  }
  if (kind != ModelKind::kDecoder && (command.probe == true || command.probe_options_given)) {
    throw UsageError(std::string(command.probe == true ? "--probe induction"
                                                       : "--probe-sequences, "
                                                         "--probe-length, --seed") +
                     ": the induction probe needs a decoder-only model; " + is_kind);
  }
  nlohmann::ordered_json document = {{"model", model->name()}, {"model_type", model->model_type}};
  std::vector<HeadsSection> sections;
  std::string text;              // the text output's lines above the tables
  nlohmann::ordered_json first;  // the model view's attention document of the first input
  std::optional<ProbeLoss> probe_loss;
  if (encoder_decoder) {
    const EncoderDecoderHeads heads = encoder_decoder_heads(command, *model, texts);
    sections = heads.sections;
    const long source_tokens = token_count(heads.sources);
    const long target_tokens = token_count(heads.targets);
    document["inputs"] = heads.sources.size();
    document["tokens"] = source_tokens;
    document["target_tokens"] = target_tokens;
    const int max_new_tokens = command.max_new_tokens.value_or(kHeadsTargetTokens);
    document["max_new_tokens"] = max_new_tokens;
    text = fmt::format(
        "{}: {} input(s), {} source tokens; the decoder read the model's greedy translation of "
        "each ({} tokens with the start token, at most {} generated each)\n",
        model->name(), heads.sources.size(), source_tokens, target_tokens, max_new_tokens);
    if (command.format == ReportFormat::kHtml) {
      first =
          attention_document(*model, texts[0].first, heads.sources[0].ids, heads.targets[0].ids);
    }
  } else {
    const ArchSpec& spec = model->spec();
    const SingleStackHeads heads = single_stack_heads(command, *model, texts);
    sections = {heads.section};
    probe_loss = heads.probe_loss;
    document["n_layers"] = spec.n_layer;
    document["n_heads"] = spec.n_head;
    document["inputs"] = heads.inputs.size();
    document["tokens"] = token_count(heads.inputs);
    text = fmt::format("{}: {} layers x {} heads, {} input(s), {} tokens\n", model->name(),
                       spec.n_layer, spec.n_head, heads.inputs.size(), token_count(heads.inputs));
    if (command.format == ReportFormat::kHtml) {
      first = attention_document(*model, texts[0].first, heads.inputs[0].ids);
    }
  }
  document["role_threshold"] = kRoleThreshold;
  document["probe"] = nullptr;
  if (probe_loss) {
    document["probe"] = {{"sequences", command.probe_options.sequences},
                         {"length", command.probe_options.length},
                         {"seed", command.probe_options.seed},
                         {"first_copy_loss", probe_loss->first_copy},
                         {"second_copy_loss", probe_loss->second_copy},
                         {"loss_drop", probe_loss->first_copy - probe_loss->second_copy}};
    text += fmt::format(
        "induction probe: {} random sequences of {} tokens repeated twice (seed {}); loss "
        "{:.3f} nats on the first copy, {:.3f} on the second (drop {:.3f})\n",
        command.probe_options.sequences, command.probe_options.length, command.probe_options.seed,
        probe_loss->first_copy, probe_loss->second_copy,
        probe_loss->first_copy - probe_loss->second_copy);
  }

  if (command.format == ReportFormat::kHtml) {
    nlohmann::ordered_json page_sections = nlohmann::ordered_json::array();
    for (const HeadsSection& section : sections) page_sections.push_back(section_json(section));
    out.write(heads_page({{"model", model->name()},
                          {"inputs", document["inputs"]},
                          {"role_threshold", kRoleThreshold},
                          {"sections", std::move(page_sections)},
                          {"document", std::move(first)}}));
  } else if (command.format == ReportFormat::kJson) {
    if (encoder_decoder) {
      for (const HeadsSection& section : sections) document[section.id] = section_json(section);
    } else {
      document["heads"] = scores_json(sections[0]);
    }
    out.write(json_text(document) + "\n");
  } else {
    out.write(text + sections_text(sections, probe_loss.has_value()));
  }
  out.commit();
  return 0;
}

std::unique_ptr<Command> make_heads_command() { return std::make_unique<HeadsCommand>(); }

}  // namespace attn
