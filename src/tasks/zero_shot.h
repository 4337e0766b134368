#pragma once

// Zero-shot classification as Hugging Face's ZeroShotClassificationPipeline (transformers 4.45)
// computes it with a natural-language-inference model: each candidate label becomes a hypothesis
// ("This example is sports."), the text is the premise, and the model's entailment logits rank
// the labels.

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// The pipeline's default hypothesis template.
inline constexpr std::string_view kDefaultHypothesisTemplate = "This example is {}.";

// "politics, sports,science" -> {"politics", "sports", "science"}: split at commas, each label
// stripped, empty ones dropped, as the pipeline splits a string of labels. Throws Error (naming
// `what`) when no label is left or a label comes twice.
std::vector<std::string> split_candidate_labels(std::string_view list, const std::string& what);

// The hypothesis for one label: Python's template.format(label), for the forms a template uses:
// "{}" or "{0}" is the label, "{{" and "}}" are braces. Throws Error (naming `what`) for a
// template without a place for the label or with another replacement field.
std::string hypothesis_for(std::string_view hypothesis_template, std::string_view label,
                           const std::string& what);

// The id of the NLI model's entailment label: the first label that starts with "entail", ignoring
// case, as the pipeline looks for it; -1 when there is none.
int entailment_label_id(const std::vector<std::string>& labels);

// The scores of the candidate labels from the NLI logits of their (text, hypothesis) pairs:
// `logits` is (candidates, nli_labels). As the pipeline computes them in float32, with no shift
// by the maximum:
//   one label at a time (multi_label, or a single candidate): for each candidate c,
//     score[c] = exp(l[c][e]) / (exp(l[c][k]) + exp(l[c][e])),  e = entailment id,
//     k = the contradiction id: 0, or the last label when the entailment id is 0;
//   otherwise, over the candidates: score[c] = exp(l[c][e]) / sum over c' of exp(l[c'][e]).
std::vector<float> zero_shot_scores(std::span<const float> logits, int nli_labels,
                                    int entailment_id, bool multi_label);

// The candidates' order in the pipeline's answer: highest score first, and among equal scores
// the later candidate first (numpy's argsort reversed).
std::vector<int> zero_shot_order(std::span<const float> scores);

}  // namespace attn
