#include "src/tasks/generate.h"

#include <algorithm>
#include <chrono>

#include "src/base/error.h"

namespace attn {
namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

int generation_context(const ArchSpec& spec, const GenerateOptions& options) {
  return options.max_context > 0 ? std::min(options.max_context, spec.max_positions)
                                 : spec.max_positions;
}

std::vector<int> end_of_sequence_ids(const Model& model, const GenerateOptions& options) {
  if (options.ignore_eos) return {};
  std::vector<int> ids = model.generation.eos_token_ids;
  ids.insert(ids.end(), options.extra_eos_ids.begin(), options.extra_eos_ids.end());
  return ids;
}

GenerateResult generate(const Model& model, std::span<const int> prompt_ids,
                        const GenerateOptions& options, const GenerateCallbacks& callbacks,
                        const CrossAttentionMemory* memory) {
  return GenerationSession(model, options, memory).generate(prompt_ids, callbacks);
}

GenerationSession::GenerationSession(const Model& model, GenerateOptions options,
                                     const CrossAttentionMemory* memory)
    : model_(model), options_(std::move(options)), memory_(memory) {}

GenerationSession::~GenerationSession() = default;

int CachedSequence::shared_start(std::span<const int> prompt) const {
  const std::size_t limit = std::min(tokens.size(), prompt.size() - 1);
  std::size_t n = 0;
  while (n < limit && tokens[n] == prompt[n]) ++n;
  return int(n);
}

int CachedSequence::keep_start_of(std::span<const int> prompt) {
  tokens.resize(cache ? cache->keep_rows(shared_start(prompt)) : 0);
  return int(tokens.size());
}

void CachedSequence::reserve(const ArchSpec& spec, int capacity, int rows) {
  if (cache && capacity <= cache->capacity && rows <= max_rows) return;
  max_rows = std::max(rows, max_rows);
  auto larger = std::make_unique<KVCache>(spec, std::max(capacity, cache ? cache->capacity : 0),
                                          spec.n_layer, max_rows);
  if (!cache || !cache->copy_rows_to(*larger, int(tokens.size()))) tokens.clear();
  cache = std::move(larger);
}

void GenerationSession::reset() { sequence_.tokens.clear(); }

void GenerationSession::reserve(int positions, int rows) {
  const ArchSpec& spec = model_.spec();
  const KVCache* cache = sequence_.cache.get();
  // Growing by at least half keeps the copies of a long conversation few.
  const int capacity = cache && positions > cache->capacity
                           ? std::min(generation_context(spec, options_),
                                      std::max(positions, cache->capacity * 3 / 2))
                           : positions;
  sequence_.reserve(spec, capacity, rows);
  const int keys = std::max(sequence_.cache->capacity, memory_ ? memory_->length : 0);
  if (!state_ || rows > state_->max_rows || keys > state_->max_context) {
    state_ = std::make_unique<RunState>(spec, sequence_.max_rows, keys);
  }
}

GenerateResult GenerationSession::generate(std::span<const int> prompt_ids,
                                           const GenerateCallbacks& callbacks) {
  const Transformer& transformer = *model_.transformer;
  const int n_prompt = static_cast<int>(prompt_ids.size());
  if (n_prompt == 0) throw Error("prompt: is empty (it must have at least one token)");
  const int context = generation_context(transformer.spec(), options_);
  if (n_prompt > context) {
    throw Error("prompt: " + std::to_string(n_prompt) + " tokens is longer than the context of " +
                std::to_string(context) + " (use --truncate to keep the last tokens)");
  }
  // The prompt's tokens already in the cache; its last token always runs, for its logits.
  if (!options_.use_cache) sequence_.tokens.clear();
  int reused = sequence_.keep_start_of(prompt_ids);
  const int capacity = std::min<long>(context, long(n_prompt) + options_.max_new_tokens);
  reserve(capacity, options_.use_cache ? n_prompt - reused : capacity);
  reused = int(sequence_.tokens.size());  // growing the cache may have had to forget it

  std::vector<float> logits(transformer.spec().vocab_size);
  SequenceGenerator sequence(model_, prompt_ids, options_, callbacks, context);
  const std::vector<int>& ids = sequence.ids();
  // Runs the tokens from `first` on (all of them without the cache) and leaves the logits of
  // the last one in `logits`. Afterwards the cache holds the keys and values of ids[0, end).
  Batch batch;  // reused: a decode step allocates nothing
  auto run = [&](int first) {
    if (!options_.use_cache) first = 0;
    batch.clear();
    batch.add_sequence(std::span(ids).subspan(first), {}, first);
    batch.cache_offset = first;
    batch.memory = memory_;
    // Rows before `first` stay as they are, even if the pass throws; only the new rows are
    // recorded, so a decode step copies one id, not the sequence.
    sequence_.tokens.resize(first);
    transformer.forward(batch, *sequence_.cache, *state_, callbacks.observer);
    sequence_.tokens.insert(sequence_.tokens.end(), ids.begin() + first, ids.end());
    const int last = batch.rows() - 1;
    transformer.compute_logits(*state_, std::span(&last, 1), logits.data());
  };

  auto start = Clock::now();
  run(reused);
  const double prompt_ms = milliseconds_since(start);
  start = Clock::now();
  int decode_steps = 0;
  while (sequence.step(logits)) {
    run(int(ids.size()) - 1);
    ++decode_steps;
  }
  GenerateResult result = sequence.finish();
  result.decode_ms = milliseconds_since(start);
  result.prompt_ms = prompt_ms;
  result.decode_steps = decode_steps;
  result.reused_tokens = reused;
  return result;
}

SequenceGenerator::SequenceGenerator(const Model& model, std::span<const int> prompt_ids,
                                     const GenerateOptions& options,
                                     const GenerateCallbacks& callbacks, int context)
    : model_(model),
      options_(options),
      callbacks_(callbacks),
      context_(context),
      ids_(prompt_ids.begin(), prompt_ids.end()),
      eos_ids_(end_of_sequence_ids(model, options)),
      sampler_(options.sampling),
      stream_(options.stop) {
  result_.prompt_tokens = int(prompt_ids.size());
  result_.stop_reason = "length";
}

bool SequenceGenerator::step(std::span<float> logits) {
  if (int(result_.generated_ids.size()) >= options_.max_new_tokens) return false;
  if (callbacks_.stop && callbacks_.stop->load(std::memory_order_relaxed)) {
    result_.stop_reason = "interrupted";
    return false;
  }
  if (callbacks_.on_logits) callbacks_.on_logits(logits);
  const int next = sampler_.next(logits, ids_);
  if (std::find(eos_ids_.begin(), eos_ids_.end(), next) != eos_ids_.end()) {
    result_.stop_reason = "eos";
    return false;
  }
  result_.generated_ids.push_back(next);
  ids_.push_back(next);
  bool stopped = false;
  const std::string shown = stream_.add(
      model_.tokenizer->decode_continuation(std::span(ids_).first(ids_.size() - 1), next), stopped);
  if (callbacks_.on_text && !shown.empty()) callbacks_.on_text(shown);
  if (callbacks_.on_token) callbacks_.on_token(next, shown);
  if (stopped) {
    result_.stop_reason = "stop";
    return false;
  }
  if (int(result_.generated_ids.size()) == options_.max_new_tokens) return false;
  // The next pass would read ids.size() positions. A sequence of exactly `context` still runs
  // (its last token predicts one more); past that there is no position embedding (or room).
  if (int(ids_.size()) > context_) {
    result_.stop_reason = "context";
    return false;
  }
  return true;
}

GenerateResult SequenceGenerator::finish() {
  if (!result_.generated_ids.empty() && result_.stop_reason != "stop") {
    bool stopped = false;
    const std::string shown = stream_.add(model_.tokenizer->decode_held_back(ids_), stopped);
    if (callbacks_.on_text && !shown.empty()) callbacks_.on_text(shown);
  }
  const std::string rest = stream_.rest();
  if (callbacks_.on_text && !rest.empty()) callbacks_.on_text(rest);
  result_.text = stream_.text();
  return std::move(result_);
}

}  // namespace attn
