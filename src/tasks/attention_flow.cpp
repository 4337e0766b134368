#include "src/tasks/attention_flow.h"

#include <algorithm>
#include <limits>

#include "src/kernels/thread_pool.h"
#include "src/tasks/attention_capture.h"

namespace attn {
namespace {

// Residual capacities at or below this are used up: a float64 flow leaves crumbs of 1e-17 on
// edges it has filled, and chasing them would only add rounding.
constexpr double kUsedUp = 1e-13;

// The layered graph of one layer l as a residual network: nodes (m, a) for m = 0..l at index
// m * n + a, an edge (m, a) -> (m - 1, b) of capacity Ahat[m][a][b] for every nonzero weight,
// each with its reverse edge. Dinic's algorithm finds one maximum flow at a time; the edges
// are kept, the flows reset before each.
class FlowGraph {
 public:
  FlowGraph(const std::vector<double>& augmented, int layer, int n) : n_(n) {
    const int nodes = (layer + 1) * n;
    std::vector<std::vector<int>> out_edges(nodes);
    for (int m = 1; m <= layer; ++m) {
      const double* ahat = augmented.data() + std::size_t(m - 1) * n * n;
      for (int a = 0; a < n; ++a) {
        for (int b = 0; b < n; ++b) {
          const double capacity = ahat[std::size_t(a) * n + b];
          if (capacity <= 0) continue;
          const int from = m * n + a, to = (m - 1) * n + b;
          out_edges[from].push_back(int(edges_.size()));
          edges_.push_back({.to = to, .reverse = int(edges_.size()) + 1, .capacity = capacity});
          out_edges[to].push_back(int(edges_.size()));
          edges_.push_back({.to = from, .reverse = int(edges_.size()) - 1, .capacity = 0});
        }
      }
    }
    // Each node's edges contiguous: first_edge_[v] .. first_edge_[v + 1] in edge_order_.
    first_edge_.push_back(0);
    for (const std::vector<int>& list : out_edges) {
      edge_order_.insert(edge_order_.end(), list.begin(), list.end());
      first_edge_.push_back(int(edge_order_.size()));
    }
    residual_.resize(edges_.size());
    level_.resize(nodes);
    next_edge_.resize(nodes);
  }

  // The maximum flow from node `source` to node `sink` (layer 0 holds the sink).
  double max_flow(int source, int sink) {
    for (std::size_t e = 0; e < edges_.size(); ++e) residual_[e] = edges_[e].capacity;
    double total = 0;
    while (find_levels(source, sink)) {
      for (std::size_t v = 0; v < level_.size(); ++v) next_edge_[v] = first_edge_[v];
      while (true) {
        const double pushed = push(source, sink, std::numeric_limits<double>::infinity());
        if (pushed <= kUsedUp) break;
        total += pushed;
      }
    }
    return total;
  }

 private:
  struct Edge {
    int to = 0;
    int reverse = 0;  // index of the edge back
    double capacity = 0;
  };

  // Breadth-first levels over edges with capacity left; whether the sink is reached. The other
  // nodes of layer 0 lead nowhere and are not entered.
  bool find_levels(int source, int sink) {
    std::fill(level_.begin(), level_.end(), -1);
    queue_.assign(1, source);
    level_[source] = 0;
    for (std::size_t head = 0; head < queue_.size(); ++head) {
      const int v = queue_[head];
      for (int k = first_edge_[v]; k < first_edge_[v + 1]; ++k) {
        const int e = edge_order_[k];
        const int to = edges_[e].to;
        if (residual_[e] <= kUsedUp || level_[to] >= 0) continue;
        if (to < n_ && to != sink) continue;
        level_[to] = level_[v] + 1;
        queue_.push_back(to);
      }
    }
    return level_[sink] >= 0;
  }

  // Pushes up to `limit` from v to the sink along edges that go one level down; returns the
  // amount pushed. Edges that cannot carry more are skipped for the rest of the phase.
  double push(int v, int sink, double limit) {
    if (v == sink) return limit;
    for (int& k = next_edge_[v]; k < first_edge_[v + 1]; ++k) {
      const int e = edge_order_[k];
      const int to = edges_[e].to;
      if (residual_[e] <= kUsedUp || level_[to] != level_[v] + 1) continue;
      const double pushed = push(to, sink, std::min(limit, residual_[e]));
      if (pushed > kUsedUp) {
        residual_[e] -= pushed;
        residual_[edges_[e].reverse] += pushed;
        return pushed;
      }
    }
    return 0;
  }

  int n_;
  std::vector<Edge> edges_;
  std::vector<int> edge_order_;
  std::vector<int> first_edge_;  // (nodes + 1)
  std::vector<double> residual_;
  std::vector<int> level_;
  std::vector<int> next_edge_;
  std::vector<int> queue_;
};

}  // namespace

MeanAttention mean_attention(const Model& model, const Encoding& encoding) {
  const ArchSpec& spec = model.input_stack().spec();
  const int n = int(encoding.ids.size());
  MeanAttention mean{.n_layers = spec.n_layer,
                     .n_tokens = n,
                     .weights = std::vector<double>(std::size_t(spec.n_layer) * n * n, 0.0)};
  const AttentionSelection all = select_attention(spec, {});  // every layer and head
  capture_attention(model, encoding, all,
                    [&](int layer, int, const float* probabilities, int n_tokens) {
                      double* sum = mean.weights.data() + std::size_t(layer) * n * n;
                      for (long i = 0; i < long(n_tokens) * n_tokens; ++i)
                        sum[i] += probabilities[i];
                    });
  for (double& w : mean.weights) w /= spec.n_head;
  return mean;
}

std::vector<double> augmented_attention(const MeanAttention& attention) {
  const int n = attention.n_tokens;
  std::vector<double> augmented(attention.weights.size());
  for (int layer = 0; layer < attention.n_layers; ++layer) {
    for (int i = 0; i < n; ++i) {
      const std::size_t row = (std::size_t(layer) * n + i) * n;
      double sum = 0;
      for (int j = 0; j < n; ++j) {
        augmented[row + j] = 0.5 * attention.weights[row + j] + (i == j ? 0.5 : 0.0);
        sum += augmented[row + j];
      }
      for (int j = 0; j < n; ++j) augmented[row + j] /= sum;
    }
  }
  return augmented;
}

std::vector<double> attention_rollout(const std::vector<double>& augmented, int n_layers, int n) {
  const std::size_t size = std::size_t(n) * n;
  std::vector<double> rollout(augmented.size(), 0.0);
  std::copy_n(augmented.begin(), size, rollout.begin());
  for (int layer = 1; layer < n_layers; ++layer) {
    const double* ahat = augmented.data() + layer * size;
    const double* below = rollout.data() + (layer - 1) * size;
    double* out = rollout.data() + layer * size;
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < n; ++k) {
        const double a = ahat[std::size_t(i) * n + k];
        for (int j = 0; j < n; ++j)
          out[std::size_t(i) * n + j] += a * below[std::size_t(k) * n + j];
      }
    }
  }
  return rollout;
}

std::vector<double> attention_flow_raw(const std::vector<double>& augmented, int n_layers, int n,
                                       const FlowProgress& progress) {
  const std::size_t size = std::size_t(n) * n;
  std::vector<double> raw(augmented.size());
  ThreadPool& pool = thread_pool();
  for (int layer = 1; layer <= n_layers; ++layer) {
    // Task t finds every flow out of positions t, t + tasks, ... of this layer, on a graph of
    // its own: the flows share the edges, each needs its own residuals.
    const int tasks = std::min(pool.size(), n);
    std::vector<FlowGraph> graphs(tasks, FlowGraph(augmented, layer, n));
    double* out = raw.data() + (layer - 1) * size;
    pool.run(tasks, [&](int t) {
      for (int i = t; i < n; i += tasks) {
        for (int j = 0; j < n; ++j)
          out[std::size_t(i) * n + j] = graphs[t].max_flow(layer * n + i, j);
      }
    });
    if (progress) progress(layer);
  }
  return raw;
}

std::vector<double> normalize_rows(std::vector<double> raw, int n) {
  for (std::size_t row = 0; row < raw.size(); row += n) {
    double sum = 0;
    for (int j = 0; j < n; ++j) sum += raw[row + j];
    if (sum > 0) {
      for (int j = 0; j < n; ++j) raw[row + j] /= sum;
    }
  }
  return raw;
}

double attention_flow_cost(int n_layers, int n) {
  // n^2 flows per layer, each a few passes over the l * n^2 edges of its graph.
  double cost = 0;
  for (int layer = 1; layer <= n_layers; ++layer) cost += double(n) * n * layer * n * n * 4;
  return cost;
}

}  // namespace attn
