#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <utility>

// attn serve's counters for GET /metrics, and its bounded queue for the model.
namespace attn::serve {

// What GET /metrics reports, in Prometheus' text format, names prefixed attn_.
class Metrics {
 public:
  // The upper bounds of the request duration histogram's buckets, in seconds.
  static constexpr double kBuckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                        0.5,   1,    2.5,   5,    10,  30};

  // One request answered: its route (or "other"), status and time.
  void request(const std::string& route, int status, double seconds);
  void tokens(long prompt, long generated) {
    prompt_tokens_ += prompt;
    generated_tokens_ += generated;
  }
  // A decode step of the generation slots: one pass of `rows` rows, a busy slot each.
  void decode_pass(int rows) {
    ++decode_passes_;
    decode_rows_ += rows;
  }
  long decode_passes() const { return decode_passes_; }
  long decode_rows() const { return decode_rows_; }
  std::atomic<int> queued{0};   // requests waiting for the model or running on it
  std::atomic<int> running{0};  // requests running on it

  // Everything, in Prometheus' text format.
  std::string text() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, long> requests_;
  long buckets_[std::size(kBuckets)] = {};
  long count_ = 0;
  double sum_ = 0;
  std::atomic<long> prompt_tokens_{0};
  std::atomic<long> generated_tokens_{0};
  std::atomic<long> decode_passes_{0};
  std::atomic<long> decode_rows_{0};
};

// A request's place in the queue for the model: 503 when the queue is full. Held from the
// request's arrival (a stream's, until it ends).
class QueueTicket {
 public:
  QueueTicket(Metrics& metrics, int queue);
  ~QueueTicket() { metrics_.queued.fetch_sub(1); }
  QueueTicket(const QueueTicket&) = delete;
  QueueTicket& operator=(const QueueTicket&) = delete;

 private:
  Metrics& metrics_;
};

}  // namespace attn::serve
