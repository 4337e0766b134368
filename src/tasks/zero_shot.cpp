#include "src/tasks/zero_shot.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "src/base/error.h"
#include "src/base/unicode.h"

namespace attn {

std::vector<std::string> split_candidate_labels(std::string_view list, const std::string& what) {
  std::vector<std::string> labels;
  for (std::size_t begin = 0; begin <= list.size();) {
    std::size_t end = list.find(',', begin);
    if (end == std::string_view::npos) end = list.size();
    std::string label = python_strip(list.substr(begin, end - begin), what);
    if (!label.empty()) {
      if (std::find(labels.begin(), labels.end(), label) != labels.end()) {
        throw Error(what + ": the label '" + label + "' is given twice");
      }
      labels.push_back(std::move(label));
    }
    begin = end + 1;
  }
  if (labels.empty()) throw Error(what + ": no label (give them separated by commas)");
  return labels;
}

std::string hypothesis_for(std::string_view hypothesis_template, std::string_view label,
                           const std::string& what) {
  std::string hypothesis;
  bool has_label = false;
  for (std::size_t i = 0; i < hypothesis_template.size(); ++i) {
    const std::string_view rest = hypothesis_template.substr(i);
    if (rest.starts_with("{{") || rest.starts_with("}}")) {
      hypothesis += rest[0];
      ++i;
    } else if (rest.starts_with("{}") || rest.starts_with("{0}")) {
      hypothesis += label;
      i += rest[1] == '}' ? 1 : 2;
      has_label = true;
    } else if (rest[0] == '{' || rest[0] == '}') {
      throw Error(what + ": '" + std::string(hypothesis_template) +
                  "' has a brace that is not {} (write {{ or }} for a brace)");
    } else {
      hypothesis += rest[0];
    }
  }
  if (!has_label) {
    throw Error(what + ": '" + std::string(hypothesis_template) +
                "' has no {} where the label should go");
  }
  return hypothesis;
}

int entailment_label_id(const std::vector<std::string>& labels) {
  for (std::size_t id = 0; id < labels.size(); ++id) {
    std::string lower = labels[id];
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (lower.starts_with("entail")) return int(id);
  }
  return -1;
}

std::vector<float> zero_shot_scores(std::span<const float> logits, int nli_labels,
                                    int entailment_id, bool multi_label) {
  const std::size_t candidates = logits.size() / std::size_t(nli_labels);
  std::vector<float> scores(candidates);
  if (multi_label || candidates == 1) {
    const int contradiction_id = entailment_id == 0 ? nli_labels - 1 : 0;
    for (std::size_t c = 0; c < candidates; ++c) {
      const float* row = logits.data() + c * std::size_t(nli_labels);
      const float entail = std::exp(row[entailment_id]);
      scores[c] = entail / (std::exp(row[contradiction_id]) + entail);
    }
    return scores;
  }
  float sum = 0;
  for (std::size_t c = 0; c < candidates; ++c) {
    sum += scores[c] = std::exp(logits[c * std::size_t(nli_labels) + std::size_t(entailment_id)]);
  }
  for (float& score : scores) score /= sum;
  return scores;
}

std::vector<int> zero_shot_order(std::span<const float> scores) {
  std::vector<int> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores[a] < scores[b]; });
  std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace attn
