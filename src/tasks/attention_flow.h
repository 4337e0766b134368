#pragma once

// Attention rollout and attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in
// Transformers"): how much each input token reaches each position of a layer, following the
// attention through the residual connections of every layer below, instead of reading one
// layer's raw weights. The definitions, as ../shared/golden/README.md ("interp/") states them:
//
//   Ahat[l] = 0.5 * (mean over heads of A[l]) + 0.5 * I, each row divided by its sum;
//   rollout R[1] = Ahat[1], R[l] = Ahat[l] @ R[l - 1];
//   flow: the layered graph with nodes (l, i) for l = 0..L (layer 0 = the input tokens) and an
//   edge (l, i) -> (l - 1, j) of capacity Ahat[l][i][j]; flow_raw[l][i][j] = the maximum flow
//   from (l, i) to (0, j), and flow[l][i][j] = flow_raw[l][i][j] / sum over j of it.
//
// Layers are 1-based in these formulas; every array below holds layer l at index l - 1. All
// matrices are float64, (n_tokens, n_tokens) row-major, row = position at that layer, column =
// input token.

#include <functional>
#include <vector>

#include "src/model/model.h"

namespace attn {

// One text's attention averaged over heads, layer by layer: (n_layers, n_tokens, n_tokens).
struct MeanAttention {
  int n_layers = 0;
  int n_tokens = 0;
  std::vector<double> weights;
};

// Runs `encoding` through the model's input stack once (an encoder-decoder's encoder: rollout and
// flow follow self-attention, and its decoder also reads the source through cross-attention) and
// averages each layer's heads (float64 sums of the float32 probabilities).
MeanAttention mean_attention(const Model& model, const Encoding& encoding);

// Ahat of every layer: (n_layers, n, n).
std::vector<double> augmented_attention(const MeanAttention& attention);

// R of every layer from Ahat: (n_layers, n, n).
std::vector<double> attention_rollout(const std::vector<double>& augmented, int n_layers, int n);

// Called after each layer's flow is done, with the number of layers done so far.
using FlowProgress = std::function<void(int layers_done)>;

// flow_raw of every layer from Ahat: (n_layers, n, n), the maximum flows themselves. The graph
// of layer l has l * n * n edges and there are n * n of its flows to find, so the work grows as
// n_layers^2 * n^4: seconds at 32 tokens, much longer past 64. The flows run on the thread pool.
std::vector<double> attention_flow_raw(const std::vector<double>& augmented, int n_layers, int n,
                                       const FlowProgress& progress = {});

// Each row of `raw` divided by its sum (a zero row stays zero).
std::vector<double> normalize_rows(std::vector<double> raw, int n);

// Rough count of the elementary steps attention_flow_raw takes, for the warning before a long run.
double attention_flow_cost(int n_layers, int n);

}  // namespace attn
