// The tokenizers library's Unigram model (models/unigram): the Viterbi path over the pieces'
// scores, as model.rs's encode_optimized finds it, with runs of unknown characters fused into one
// unknown token.

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"
#include "src/tokenizer/pipeline/models.h"

namespace attn::pipeline {
namespace {

using nlohmann::json;

constexpr std::size_t kIdLimit = std::size_t{1} << 24;

// What an unknown character scores below the lowest-scoring piece (model.rs's K_UNK_PENALTY).
constexpr double kUnknownPenalty = 10.0;

// A byte trie of the pieces. Its edges live in one open-addressing table keyed by
// (node, byte), which is compact and needs one probe per byte of input.
class PieceTrie {
 public:
  static constexpr std::uint32_t kNoNode = ~std::uint32_t{0};

  PieceTrie() : piece_of_node_(1, -1) { edges_.assign(1024, Edge{}); }

  // A piece given twice ends at the same node, which keeps the later id, as the library's
  // token-to-id map does.
  void add(std::string_view piece, int id) {
    std::uint32_t node = 0;
    for (const char byte : piece) {
      std::uint32_t next = child(node, byte);
      if (next == kNoNode) {
        next = static_cast<std::uint32_t>(piece_of_node_.size());
        piece_of_node_.push_back(-1);
        insert_edge(edge_key(node, byte), next);
      }
      node = next;
    }
    piece_of_node_[node] = id;
  }

  std::uint32_t child(std::uint32_t node, char byte) const {
    const std::uint64_t key = edge_key(node, byte);
    for (std::size_t index = home(key);; index = (index + 1) & (edges_.size() - 1)) {
      if (edges_[index].key == key) return edges_[index].child;
      if (edges_[index].key == kEmptyKey) return kNoNode;
    }
  }

  // The id of the piece ending at `node`, -1 when none does.
  int piece_at(std::uint32_t node) const { return piece_of_node_[node]; }

  std::optional<int> find(std::string_view text) const {
    std::uint32_t node = 0;
    for (const char byte : text) {
      node = child(node, byte);
      if (node == kNoNode) return std::nullopt;
    }
    return piece_at(node) < 0 ? std::nullopt : std::optional<int>(piece_at(node));
  }

 private:
  static constexpr std::uint64_t kEmptyKey = ~std::uint64_t{0};
  struct Edge {
    std::uint64_t key = kEmptyKey;
    std::uint32_t child = kNoNode;
  };
  static std::uint64_t edge_key(std::uint32_t node, char byte) {
    return (static_cast<std::uint64_t>(node) << 8) | static_cast<unsigned char>(byte);
  }
  std::size_t home(std::uint64_t key) const {
    return (key * 0x9E3779B97F4A7C15ull) >> (64 - std::countr_zero(edges_.size()));
  }

  void insert_edge(std::uint64_t key, std::uint32_t child) {
    if ((edge_count_ + 1) * 4 > edges_.size() * 3) grow();
    std::size_t index = home(key);
    while (edges_[index].key != kEmptyKey) index = (index + 1) & (edges_.size() - 1);
    edges_[index] = Edge{key, child};
    ++edge_count_;
  }

  void grow() {
    std::vector<Edge> old = std::move(edges_);
    edges_.assign(old.size() * 2, Edge{});
    for (const Edge& edge : old) {
      if (edge.key == kEmptyKey) continue;
      std::size_t index = home(edge.key);
      while (edges_[index].key != kEmptyKey) index = (index + 1) & (edges_.size() - 1);
      edges_[index] = edge;
    }
  }

  std::vector<int> piece_of_node_;
  std::vector<Edge> edges_;
  std::size_t edge_count_ = 0;
};

// The best path found so far that ends at a byte position (encode_optimized's BestPathNode).
struct PathEnd {
  double score = 0.0;
  int start = -1;  // where its last token starts; -1 while no path reaches here
  int id = 0;
};

class UnigramModel final : public Model {
 public:
  explicit UnigramModel(const ConfigNode& node)
      : byte_fallback_(node.boolean_or("byte_fallback", false)), where_(node.where()) {
    read_vocab(node.at("vocab"));
    if (node.has("unk_id")) {
      unk_id_ = static_cast<int>(node.integer("unk_id", 0, std::numeric_limits<int>::max()));
      if (*unk_id_ >= vocab_size()) {
        node.at("unk_id").fail(std::to_string(*unk_id_) + " is not an id of the vocabulary (" +
                               std::to_string(vocab_size()) + " pieces)");
      }
    }
    if (byte_fallback_) {
      static constexpr char kHexDigits[] = "0123456789ABCDEF";
      for (int byte = 0; byte < 256; ++byte) {
        const std::string name = {'<', '0', 'x', kHexDigits[byte >> 4], kHexDigits[byte & 15], '>'};
        byte_token_ids_[byte] = trie_.find(name).value_or(-1);
      }
    }
  }

  void tokenize(std::string_view piece, std::vector<int>& ids,
                std::vector<ByteSpan>* spans) const override {
    thread_local std::vector<PathEnd> best;
    thread_local std::vector<PathEnd> path;
    find_best_path(piece, best);
    path.clear();
    for (std::size_t end = piece.size(); end > 0; end = best[end].start) {
      path.push_back(best[end]);
    }
    emit(piece, path, ids, spans);
  }

  std::optional<int> token_to_id(std::string_view token) const override {
    return trie_.find(token);
  }

  const std::string* id_to_token(int id) const override {
    return id >= 0 && id < vocab_size() ? &pieces_[id] : nullptr;
  }

  int vocab_size() const override { return static_cast<int>(pieces_.size()); }
  std::optional<int> id_named_by_text() const override { return unk_id_; }

 private:
  void read_vocab(const ConfigNode& vocab) {
    if (!vocab.value().is_array()) {
      vocab.fail("expected an array of [piece, score], found " + brief_json(vocab.value()));
    }
    if (vocab.value().size() > kIdLimit) {
      vocab.fail("has " + std::to_string(vocab.value().size()) + " pieces, attn's limit is " +
                 std::to_string(kIdLimit));
    }
    pieces_.reserve(vocab.value().size());
    scores_.reserve(vocab.value().size());
    for (const json& entry : vocab.value()) {
      if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() ||
          !entry[1].is_number()) {
        vocab.at(pieces_.size()).fail("expected [piece, score], found " + brief_json(entry));
      }
      const int id = static_cast<int>(pieces_.size());
      pieces_.push_back(entry[0].get<std::string>());
      scores_.push_back(entry[1].get<double>());
      trie_.add(pieces_.back(), id);
      min_score_ = std::min(min_score_, scores_.back());
    }
  }

  // encode_optimized's forward pass: best[end] is the best path over piece[0, end). Candidates
  // replace a path only when strictly better, so among equal scores the one found first — the
  // earliest start, then the shortest token — stays.
  void find_best_path(std::string_view piece, std::vector<PathEnd>& best) const {
    best.assign(piece.size() + 1, PathEnd{});
    const double unknown_score = min_score_ - kUnknownPenalty;
    const auto offer = [&](std::size_t end, std::size_t start, double score, int id) {
      PathEnd& target = best[end];
      if (target.start < 0 || score > target.score) {
        target = PathEnd{score, static_cast<int>(start), id};
      }
    };
    for (std::size_t start = 0; start < piece.size();) {
      const double score_so_far = best[start].score;
      const std::size_t character_length = std::min(
          utf8_sequence_length(static_cast<unsigned char>(piece[start])), piece.size() - start);
      bool has_single_character_piece = false;
      std::uint32_t node = 0;
      for (std::size_t end = start; end < piece.size();) {
        node = trie_.child(node, piece[end++]);
        if (node == PieceTrie::kNoNode) break;
        const int id = trie_.piece_at(node);
        if (id < 0) continue;
        offer(end, start, scores_[id] + score_so_far, id);
        if (end - start == character_length) has_single_character_piece = true;
      }
      if (!has_single_character_piece) {
        const std::size_t end = start + character_length;
        const double score = unknown_score + score_so_far;
        if (best[end].start < 0 || score > best[end].score) {
          if (!unk_id_) {
            throw Error(where_ +
                        ": the text has a character that is in no piece, and unk_id is "
                        "not set");
          }
          best[end] = PathEnd{score, static_cast<int>(start), *unk_id_};
        }
      }
      start += character_length;
    }
  }

  // Appends the ids of the path (given last token first). Neighbouring tokens with the unknown
  // id become one text, looked up again as model.rs's tokenize does: that text's own id if it is
  // a piece, else its bytes as <0xNN> pieces (byte_fallback), else the unknown id.
  // Appends the path's ids and, when `spans` is not null, where each token lies in the piece:
  // the bytes of its piece, also for each <0xNN> token of a piece spelled in bytes (the
  // library's offsets).
  void emit(std::string_view piece, const std::vector<PathEnd>& path, std::vector<int>& ids,
            std::vector<ByteSpan>* spans) const {
    std::size_t unknown_start = 0;
    std::size_t unknown_end = 0;  // unknown_start == unknown_end: no unknown run pending
    const auto add_spans = [&](std::size_t first_new, std::size_t start, std::size_t end) {
      if (spans) {
        spans->resize(ids.size() - first_new + spans->size(),
                      ByteSpan{static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(end)});
      }
    };
    const auto flush_unknown = [&] {
      if (unknown_start == unknown_end) return;
      const std::size_t first_new = ids.size();
      emit_unknown(piece.substr(unknown_start, unknown_end - unknown_start), ids);
      add_spans(first_new, unknown_start, unknown_end);
      unknown_start = unknown_end = 0;
    };
    for (std::size_t index = path.size(); index-- > 0;) {
      const PathEnd& token = path[index];
      const std::size_t end = index == 0 ? piece.size() : path[index - 1].start;
      if (unk_id_ && token.id == *unk_id_) {
        if (unknown_start == unknown_end) unknown_start = token.start;
        unknown_end = end;
      } else {
        flush_unknown();
        ids.push_back(token.id);
        add_spans(ids.size() - 1, token.start, end);
      }
    }
    flush_unknown();
  }

  void emit_unknown(std::string_view text, std::vector<int>& ids) const {
    if (const auto id = trie_.find(text)) {
      ids.push_back(*id);
      return;
    }
    if (byte_fallback_) {
      bool all_bytes_known = true;
      for (const char byte : text) {
        all_bytes_known = all_bytes_known && byte_token_ids_[static_cast<unsigned char>(byte)] >= 0;
      }
      if (all_bytes_known) {
        for (const char byte : text)
          ids.push_back(byte_token_ids_[static_cast<unsigned char>(byte)]);
        return;
      }
    }
    ids.push_back(*unk_id_);
  }

  bool byte_fallback_;
  std::string where_;
  std::vector<std::string> pieces_;
  std::vector<double> scores_;
  double min_score_ = std::numeric_limits<double>::infinity();
  PieceTrie trie_;
  std::optional<int> unk_id_;
  std::array<int, 256> byte_token_ids_{};  // <0xNN> pieces, -1 where missing
};

}  // namespace

std::unique_ptr<Model> make_unigram_model(const ConfigNode& node) {
  return std::make_unique<UnigramModel>(node);
}

}  // namespace attn::pipeline
