#include "src/tasks/beam_search.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "src/base/error.h"

namespace attn {

namespace {

// The kept hypotheses, as Hugging Face's BeamHypotheses: at most `capacity`, the lowest score
// dropped when one more comes in.
class Hypotheses {
 public:
  Hypotheses(int capacity, float length_penalty)
      : capacity_(capacity), length_penalty_(length_penalty) {}

  double score_of(double sum_logprobs, int length) const {
    return sum_logprobs / std::pow(double(length), double(length_penalty_));
  }

  void add(std::vector<int> ids, double sum_logprobs, bool finished) {
    const double score = score_of(sum_logprobs, int(ids.size()));
    if (int(kept_.size()) >= capacity_ && score <= worst_) return;
    kept_.push_back({.ids = std::move(ids), .score = score, .finished = finished});
    if (int(kept_.size()) > capacity_) {
      // The lowest goes; on equal scores the earlier one.
      const auto lowest = std::min_element(
          kept_.begin(), kept_.end(),
          [](const BeamHypothesis& a, const BeamHypothesis& b) { return a.score < b.score; });
      kept_.erase(lowest);
      worst_ = std::min_element(kept_.begin(), kept_.end(),
                                [](const BeamHypothesis& a, const BeamHypothesis& b) {
                                  return a.score < b.score;
                                })
                   ->score;
    } else {
      worst_ = std::min(worst_, score);
    }
  }

  int size() const { return int(kept_.size()); }
  double worst() const { return worst_; }

  // Best first; on equal scores the later added first (Hugging Face sorts ascending, stably,
  // and takes from the end).
  std::vector<BeamHypothesis> best(int n) const {
    std::vector<BeamHypothesis> sorted = kept_;
    std::stable_sort(
        sorted.begin(), sorted.end(),
        [](const BeamHypothesis& a, const BeamHypothesis& b) { return a.score < b.score; });
    std::reverse(sorted.begin(), sorted.end());
    sorted.resize(std::min<std::size_t>(sorted.size(), n));
    return sorted;
  }

 private:
  int capacity_;
  float length_penalty_;
  std::vector<BeamHypothesis> kept_;
  double worst_ = 1e9;
};

// log_softmax of one row of logits, as float32 values (computed in double).
void log_softmax(std::span<const float> logits, std::vector<float>& out) {
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float logit : logits) sum += std::exp(double(logit) - max);
  const double log_sum = max + std::log(sum);
  out.resize(logits.size());
  for (std::size_t v = 0; v < logits.size(); ++v) out[v] = float(double(logits[v]) - log_sum);
}

}  // namespace

BeamSearchResult beam_search(const Model& model, std::span<const int> prompt_ids,
                             const BeamSearchOptions& options, const CrossAttentionMemory* memory) {
  const ArchSpec& spec = model.spec();
  const int k = options.beams;
  if (k < 1) throw UsageError("--beams: must be >= 1, got " + std::to_string(k));
  if (options.num_return < 1 || options.num_return > k) {
    throw UsageError("--num-return: must be in 1..--beams (" + std::to_string(k) + "), got " +
                     std::to_string(options.num_return));
  }
  const int n_prompt = static_cast<int>(prompt_ids.size());
  const int capacity = n_prompt + options.max_new_tokens;
  if (capacity > spec.max_positions) {
    throw Error("the prompt (" + std::to_string(n_prompt) + " tokens) and " +
                std::to_string(options.max_new_tokens) +
                " new tokens exceed the model's context of " + std::to_string(spec.max_positions));
  }
  const int vocab = spec.vocab_size;
  auto is_eos = [&](int id) {
    return std::find(options.eos_ids.begin(), options.eos_ids.end(), id) != options.eos_ids.end();
  };

  // Each running beam: its new tokens, summed log-probability (float32, as Hugging Face keeps
  // it), and its own KV cache (the prompt's keys and values copied, never recomputed). A step
  // runs every beam's token in one pass, one row each, so that each weight is read once per
  // step, not once per beam.
  RunState state(spec, std::max(n_prompt, k), std::max(capacity, memory ? memory->length : 0));
  std::vector<KVCache> caches(1, KVCache(spec, capacity, spec.n_layer, n_prompt));
  std::vector<std::vector<int>> tokens(k);
  std::vector<float> scores(k, -1e9f);
  scores[0] = 0;
  std::vector<std::vector<float>> logprobs(k);        // (beams, vocab)
  std::vector<float> logits(std::size_t(k) * vocab);  // (beams, vocab)

  // The prompt, once; every beam starts from it.
  Batch batch;
  batch.add_sequence(prompt_ids);
  batch.memory = memory;
  model.transformer->forward(batch, caches[0], state);
  const int last = n_prompt - 1;
  model.transformer->compute_logits(state, std::span(&last, 1), logits.data());
  log_softmax(std::span(logits).first(vocab), logprobs[0]);
  for (int b = 1; b < k; ++b) logprobs[b] = logprobs[0];
  const KVCache prompt_cache = caches[0];
  caches.assign(k, prompt_cache);

  Hypotheses hypotheses(k, options.length_penalty);
  BeamSearchResult result;
  result.stop_reason = "length";
  bool done = false;
  std::vector<int> order(std::size_t(k) * vocab);
  for (int step = 1; step <= options.max_new_tokens && !done; ++step) {
    result.steps = step;
    // The 2k best of the k x vocab candidates score[b] + logprob[b][v], descending.
    auto candidate = [&](int index) {
      return scores[index / vocab] + logprobs[index / vocab][index % vocab];
    };
    std::iota(order.begin(), order.end(), 0);
    const int n_best = std::min<int>(2 * k, int(order.size()));
    std::partial_sort(order.begin(), order.begin() + n_best, order.end(), [&](int a, int b) {
      const float ca = candidate(a), cb = candidate(b);
      return ca > cb || (ca == cb && a < b);
    });
    std::vector<int> parents, next_tokens;
    std::vector<float> next_scores;
    for (int rank = 0; rank < n_best && int(parents.size()) < k; ++rank) {
      const int beam = order[rank] / vocab, token = order[rank] % vocab;
      const float score = candidate(order[rank]);
      if (is_eos(token)) {
        if (rank >= k) continue;  // an end-of-sequence below the first k does not count
        std::vector<int> ids = tokens[beam];
        ids.push_back(token);
        hypotheses.add(std::move(ids), score, true);
      } else {
        parents.push_back(beam);
        next_tokens.push_back(token);
        next_scores.push_back(score);
      }
    }
    if (hypotheses.size() >= k) {
      const double best = hypotheses.score_of(candidate(order[0]), step);
      done = options.early_stopping || hypotheses.worst() >= best;
    }
    // The new running beams: each its parent's tokens and cache, one token longer. A parent's
    // last child takes its cache over; each other child takes the cache of a beam that has no
    // child, and the rows written so far are copied into it (no allocation, no unused rows).
    std::vector<int> children(k, 0);
    for (int parent : parents) ++children[parent];
    std::vector<int> spare;  // beams without children, whose caches are free
    for (int b = 0; b < k; ++b) {
      if (children[b] == 0) spare.push_back(b);
    }
    std::vector<int> cache_of(k);  // (beams) the current cache each new beam takes
    for (int b = 0; b < k; ++b) {
      const int parent = parents[b];
      if (--children[parent] == 0) {
        cache_of[b] = parent;
      } else {
        cache_of[b] = spare.back();
        spare.pop_back();
        caches[parent].copy_rows_to(caches[cache_of[b]], n_prompt + step - 1);
      }
    }
    std::vector<std::vector<int>> next_beams(k);
    std::vector<KVCache> next_caches;
    next_caches.reserve(k);
    for (int b = 0; b < k; ++b) {
      next_beams[b] = tokens[parents[b]];
      next_beams[b].push_back(next_tokens[b]);
      next_caches.push_back(std::move(caches[cache_of[b]]));
    }
    tokens = std::move(next_beams);
    caches = std::move(next_caches);
    scores = next_scores;
    if (done || step == options.max_new_tokens) break;
    // Here, not before the step: every beam then has at least one token to be scored by.
    if (options.stop && options.stop->load(std::memory_order_relaxed)) {
      result.stop_reason = "interrupted";
      break;
    }
    // Each beam's next log-probabilities: its last token through its own cache, all in one
    // pass.
    batch.clear();
    batch.memory = memory;
    std::vector<KVCache*> beam_caches(k);
    std::vector<int> rows(k);
    for (int b = 0; b < k; ++b) {
      batch.add_sequence(std::span(&tokens[b].back(), 1), {}, n_prompt + step - 1);
      beam_caches[b] = &caches[b];
      rows[b] = b;
    }
    model.transformer->forward(batch, beam_caches, state);
    model.transformer->compute_logits(state, rows, logits.data(), RowKind::kSeparate);
    for (int b = 0; b < k; ++b) {
      log_softmax(std::span(logits).subspan(std::size_t(b) * vocab, vocab), logprobs[b]);
    }
  }
  if (done) {
    result.stop_reason = "eos";
  } else {
    for (int b = 0; b < k; ++b) hypotheses.add(tokens[b], scores[b], false);
  }
  result.sequences = hypotheses.best(options.num_return);
  return result;
}

}  // namespace attn
