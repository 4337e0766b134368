#include "src/serve/metrics.h"

#include <spdlog/fmt/fmt.h>

#include "src/serve/http_json.h"

namespace attn::serve {

void Metrics::request(const std::string& route, int status, double seconds) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{route, status}];
  for (std::size_t b = 0; b < std::size(kBuckets); ++b) buckets_[b] += seconds <= kBuckets[b];
  ++count_;
  sum_ += seconds;
}

std::string Metrics::text() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::string out =
      "# HELP attn_requests_total Requests answered, by route and status.\n"
      "# TYPE attn_requests_total counter\n";
  for (const auto& [key, count] : requests_) {
    out += "attn_requests_total{route=\"" + key.first + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
  }
  out +=
      "# HELP attn_request_duration_seconds Time from a request's arrival to its answer.\n"
      "# TYPE attn_request_duration_seconds histogram\n";
  for (std::size_t b = 0; b < std::size(kBuckets); ++b) {
    out += "attn_request_duration_seconds_bucket{le=\"" + fmt::format("{}", kBuckets[b]) + "\"} " +
           std::to_string(buckets_[b]) + "\n";
  }
  out += "attn_request_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += "attn_request_duration_seconds_sum " + std::to_string(sum_) + "\n";
  out += "attn_request_duration_seconds_count " + std::to_string(count_) + "\n";
  const auto one = [&](const char* name, const char* type, const char* help, long value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
           name + " " + std::to_string(value) + "\n";
  };
  one("attn_prompt_tokens_total", "counter", "Tokens of prompts and inputs computed.",
      prompt_tokens_);
  one("attn_generated_tokens_total", "counter", "Tokens generated.", generated_tokens_);
  one("attn_decode_passes_total", "counter", "Decode steps: passes over the busy slots.",
      decode_passes_);
  one("attn_decode_rows_total", "counter",
      "Rows of the decode steps (a busy slot each): over attn_decode_passes_total, the mean batch.",
      decode_rows_);
  one("attn_queue_depth", "gauge", "Requests waiting for the model or running on it.", queued);
  one("attn_active_slots", "gauge", "Requests the model is running.", running);
  return out;
}

QueueTicket::QueueTicket(Metrics& metrics, int queue) : metrics_(metrics) {
  if (metrics_.queued.fetch_add(1) >= queue) {
    metrics_.queued.fetch_sub(1);
    throw HttpError{503, "the server is busy (" + std::to_string(queue) +
                             " requests queued); try again shortly"};
  }
}

}  // namespace attn::serve
