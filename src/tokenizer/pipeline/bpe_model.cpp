// The tokenizers library's BPE model (models/bpe): a piece becomes one symbol per character, then
// the merges are applied lowest rank first, as word.rs's merge_all does with its priority queue.

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"
#include "src/tokenizer/pipeline/models.h"
#include "src/tokenizer/pipeline/vocabulary.h"

namespace attn::pipeline {
namespace {

using nlohmann::json;

// The capacity at which the library's cache stops growing (utils/cache.rs), and the length from
// which it does not cache a piece at all.
constexpr std::size_t kCacheCapacity = 10'000;
constexpr std::size_t kMaxCachedPieceBytes = 256;

// Token text -> id, open addressing. A slot holds the id and the first bytes of its text, so that
// most lookups touch one cache line: loading Gemma-3 checks 515k merges (three lookups each), and
// memory latency, not hashing, is what that costs.
class TokenTable {
 public:
  TokenTable() = default;

  // `texts` must be distinct (a JSON object's keys are); ids[i] is the id of texts[i].
  TokenTable(std::vector<std::string> texts, std::vector<int> ids)
      : texts_(std::move(texts)), ids_(std::move(ids)) {
    slots_.assign(std::bit_ceil(std::max<std::size_t>(16, texts_.size() * 3 / 2)), Slot{});
    mask_ = slots_.size() - 1;
    std::vector<std::size_t> hashes(texts_.size());
    for (std::size_t entry = 0; entry < texts_.size(); ++entry) {
      hashes[entry] = hash_of(texts_[entry]);
    }
    // Each insertion misses the cache; prefetching a few entries ahead overlaps the misses.
    constexpr std::size_t kLookahead = 16;
    for (std::size_t entry = 0; entry < texts_.size(); ++entry) {
      if (entry + kLookahead < hashes.size()) {
        __builtin_prefetch(&slots_[hashes[entry + kLookahead] & mask_]);
      }
      std::size_t index = hashes[entry] & mask_;
      while (slots_[index].id >= 0) index = (index + 1) & mask_;
      Slot& slot = slots_[index];
      slot.id = ids_[entry];
      slot.length = static_cast<std::uint32_t>(texts_[entry].size());
      slot.entry = static_cast<std::uint32_t>(entry);
      texts_[entry].copy(slot.head, kHeadBytes);
    }
  }

  std::optional<int> find(std::string_view text) const { return find(text, hash_of(text)); }

  // Starts loading the slot where `text` would be; returns the hash for find.
  std::size_t prefetch(std::string_view text) const {
    const std::size_t hash = hash_of(text);
    __builtin_prefetch(&slots_[hash & mask_]);
    return hash;
  }

  std::optional<int> find(std::string_view text, std::size_t hash) const {
    for (std::size_t index = hash & mask_;; index = (index + 1) & mask_) {
      const Slot& slot = slots_[index];
      if (slot.id < 0) return std::nullopt;
      if (slot.length == text.size() &&
          std::memcmp(slot.head, text.data(), std::min(text.size(), kHeadBytes)) == 0 &&
          (text.size() <= kHeadBytes || texts_[slot.entry] == text)) {
        return slot.id;
      }
    }
  }

  std::size_t size() const { return texts_.size(); }
  int id(std::size_t entry) const { return ids_[entry]; }
  const std::string& text(std::size_t entry) const { return texts_[entry]; }

 private:
  static constexpr std::size_t kHeadBytes = 20;
  struct Slot {
    int id = -1;  // -1: empty
    std::uint32_t length = 0;
    std::uint32_t entry = 0;  // index of the whole text in texts_
    char head[kHeadBytes] = {};
  };
  static std::size_t hash_of(std::string_view text) { return std::hash<std::string_view>{}(text); }

  std::vector<std::string> texts_;
  std::vector<int> ids_;
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
};

struct MergeResult {
  std::uint32_t rank;
  int new_id;
};

// (left id, right id) -> the merge's rank and result, open addressing on the 64-bit pair.
class MergeTable {
 public:
  explicit MergeTable(std::size_t expected_merges) {
    slots_.assign(std::bit_ceil(std::max<std::size_t>(16, expected_merges * 3 / 2)), Slot{});
    shift_ = 64 - std::countr_zero(slots_.size());
  }

  // A pair listed twice keeps its later rank, as the library's map does (later inserts win).
  void set(int left, int right, MergeResult result) {
    const std::uint64_t key = key_of(left, right);
    std::size_t index = home(key);
    while (slots_[index].key != kEmptyKey && slots_[index].key != key) {
      index = (index + 1) & (slots_.size() - 1);
    }
    slots_[index] = Slot{key, result};
  }

  void prefetch(int left, int right) const {
    __builtin_prefetch(&slots_[home(key_of(left, right))]);
  }

  const MergeResult* find(int left, int right) const {
    const std::uint64_t key = key_of(left, right);
    for (std::size_t index = home(key);; index = (index + 1) & (slots_.size() - 1)) {
      const Slot& slot = slots_[index];
      if (slot.key == key) return &slot.result;
      if (slot.key == kEmptyKey) return nullptr;
    }
  }

 private:
  static constexpr std::uint64_t kEmptyKey = ~std::uint64_t{0};
  struct Slot {
    std::uint64_t key = kEmptyKey;
    MergeResult result{};
  };
  static std::uint64_t key_of(int left, int right) {
    return (static_cast<std::uint64_t>(left) << 32) | static_cast<std::uint32_t>(right);
  }
  std::size_t home(std::uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }

  std::vector<Slot> slots_;
  int shift_ = 0;
};

// Finished pieces, their ids and each id's bytes of the piece. Sharded so that threads encoding
// at once rarely wait for each other; like the library's cache it stops taking entries once full
// rather than evicting.
class PieceCache {
 public:
  // Appends the piece's ids (and, when `spans` is not null, their spans) if it is cached.
  bool find(std::string_view piece, std::vector<int>& ids, std::vector<ByteSpan>* spans) const {
    Shard& shard = shard_of(piece);
    const std::lock_guard lock(shard.mutex);
    const auto found = shard.entries.find(piece);
    if (found == shard.entries.end()) return false;
    ids.insert(ids.end(), found->second.ids.begin(), found->second.ids.end());
    if (spans) spans->insert(spans->end(), found->second.spans.begin(), found->second.spans.end());
    return true;
  }

  void add(std::string_view piece, std::span<const int> ids,
           std::span<const ByteSpan> spans) const {
    if (piece.size() >= kMaxCachedPieceBytes) return;
    Shard& shard = shard_of(piece);
    const std::lock_guard lock(shard.mutex);
    if (shard.entries.size() >= kCacheCapacity / kShards) return;
    shard.entries.try_emplace(std::string(piece),
                              Entry{{ids.begin(), ids.end()}, {spans.begin(), spans.end()}});
  }

 private:
  static constexpr std::size_t kShards = 16;
  struct PieceHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const {
      return std::hash<std::string_view>{}(text);
    }
  };
  struct Entry {
    std::vector<int> ids;
    std::vector<ByteSpan> spans;  // one per id, in bytes of the piece
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, Entry, PieceHash, std::equal_to<>> entries;
  };
  Shard& shard_of(std::string_view piece) const {
    // The high bits, so that a shard's own table (which uses the low bits) stays well spread.
    return shards_[(PieceHash{}(piece) >> 59) % kShards];
  }

  mutable std::array<Shard, kShards> shards_;
};

struct BpeOptions {
  std::optional<std::string> unk_token;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
};

// One symbol of word.rs's Word: a run of the piece's bytes and the token it currently is.
struct Symbol {
  int id = 0;
  int prev = -1;
  int next = -1;
  int byte_length = 0;  // 0 once merged into the symbol on its left
};

// A queued merge of the symbol at `position` with its right neighbour (word.rs's Merge).
struct QueuedMerge {
  std::uint32_t rank;
  int position;
  int new_id;
};

// std::push_heap keeps the greatest element first; this makes it the lowest rank, then the
// leftmost position, the order of word.rs's heap.
bool comes_later(const QueuedMerge& a, const QueuedMerge& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.position > b.position;
}

class BpeModel final : public Model {
 public:
  BpeModel(const ConfigNode& node, BpeOptions options)
      : options_(std::move(options)), merges_(node.at("merges").value().size()) {
    read_vocab(node.at("vocab"));
    read_merges(node.at("merges"));
    if (options_.unk_token) {
      unk_id_ = tokens_.find(*options_.unk_token);
      if (!unk_id_) {
        // The library accepts such a file and fails only when a piece needs the unknown token.
        missing_unk_message_ = node.at("unk_token").where() + ": \"" +
                               brief_text(*options_.unk_token) + "\" is not in the vocabulary";
      }
    }
    if (options_.byte_fallback) find_byte_tokens();
    if (options_.continuing_subword_prefix.empty() && options_.end_of_word_suffix.empty()) {
      find_short_character_tokens();
    }
  }

  void tokenize(std::string_view piece, std::vector<int>& ids,
                std::vector<ByteSpan>* spans) const override {
    if (piece.empty()) return;
    if (options_.ignore_merges) {
      if (const auto id = tokens_.find(piece)) {
        ids.push_back(*id);
        if (spans) spans->push_back({0, static_cast<std::uint32_t>(piece.size())});
        return;
      }
    }
    if (cache_.find(piece, ids, spans)) return;
    const std::size_t first_new = ids.size();
    thread_local std::vector<ByteSpan> piece_spans;
    piece_spans.clear();
    merge_piece(piece, ids, piece_spans);
    cache_.add(piece, std::span(ids).subspan(first_new), piece_spans);
    if (spans) spans->insert(spans->end(), piece_spans.begin(), piece_spans.end());
  }

  std::optional<int> token_to_id(std::string_view token) const override {
    return tokens_.find(token);
  }

  const std::string* id_to_token(int id) const override {
    if (id < 0 || id >= vocab_size()) return nullptr;
    const int entry = entry_of_id_[id];
    return entry < 0 ? nullptr : &tokens_.text(entry);
  }

  int vocab_size() const override { return static_cast<int>(entry_of_id_.size()); }

 private:
  void read_vocab(const ConfigNode& vocab) {
    if (!vocab.value().is_object()) {
      vocab.fail("expected an object of token: id, found " + brief_json(vocab.value()));
    }
    std::vector<std::string> texts;
    std::vector<int> ids;
    texts.reserve(vocab.value().size());
    ids.reserve(vocab.value().size());
    int max_id = -1;
    for (auto entry = vocab.value().begin(); entry != vocab.value().end(); ++entry) {
      texts.push_back(entry.key());
      ids.push_back(vocabulary_id(vocab, entry.key(), entry.value()));
      max_id = std::max(max_id, ids.back());
    }
    // Two tokens may share an id: both encode to it, as in the library; decoding gives the first
    // in the file's key order (the library's choice is arbitrary).
    entry_of_id_.assign(max_id + 1, -1);
    for (std::size_t entry = ids.size(); entry-- > 0;)
      entry_of_id_[ids[entry]] = static_cast<int>(entry);
    tokens_ = TokenTable(std::move(texts), std::move(ids));
  }

  // Merges are "left right" strings (split at the one space) or ["left", "right"] pairs; the
  // library takes one form for the whole list. Every merge's parts and result must be tokens:
  // the library refuses the file otherwise.
  void read_merges(const ConfigNode& merges) {
    if (!merges.value().is_array()) {
      merges.fail("expected an array of merges, found " + brief_json(merges.value()));
    }
    // Loading is bound by memory latency (three token lookups per merge, then the merge table),
    // so the lookups of kLookahead merges are in flight at once: each merge's slots are
    // prefetched when it is read and resolved kLookahead merges later, in order.
    constexpr std::size_t kLookahead = 16;
    std::array<MergeText, kLookahead> in_flight;
    std::vector<ResolvedMerge> resolved;
    resolved.reserve(merges.value().size());
    const bool as_strings = !merges.value().empty() && merges.value().front().is_string();
    std::size_t read = 0;
    for (std::size_t index = 0; index < merges.value().size(); ++index) {
      const json& merge = merges.value()[index];
      // merges.txt's header, which the library skips without counting a rank.
      if (as_strings && merge.is_string() &&
          merge.get_ref<const std::string&>().starts_with("#version")) {
        continue;
      }
      MergeText& text = in_flight[read % kLookahead];
      if (read >= kLookahead) resolved.push_back(resolve(merges, text));
      split_merge(merges, index, as_strings, text);
      ++read;
    }
    for (std::size_t pending = read - std::min(read, kLookahead); pending < read; ++pending) {
      resolved.push_back(resolve(merges, in_flight[pending % kLookahead]));
    }

    for (std::size_t rank = 0; rank < resolved.size(); ++rank) {
      if (rank + kLookahead < resolved.size()) {
        merges_.prefetch(resolved[rank + kLookahead].left, resolved[rank + kLookahead].right);
      }
      const ResolvedMerge& merge = resolved[rank];
      merges_.set(merge.left, merge.right,
                  MergeResult{static_cast<std::uint32_t>(rank), merge.merged});
    }
  }

  // One merge of the file, read but not yet looked up.
  struct MergeText {
    std::size_t index = 0;  // in the merges array
    std::string_view left;
    std::string_view right;
    std::string merged;  // left + right without the continuing-subword prefix
    std::size_t left_hash = 0;
    std::size_t right_hash = 0;
    std::size_t merged_hash = 0;
  };
  struct ResolvedMerge {
    int left;
    int right;
    int merged;
  };

  // Reads merge `index` into `text` and prefetches its lookups.
  void split_merge(const ConfigNode& merges, std::size_t index, bool as_strings,
                   MergeText& text) const {
    const json& merge = merges.value()[index];
    if (as_strings) {
      if (!merge.is_string()) merges.at(index).fail("expected a \"left right\" string");
      const std::string& line = merge.get_ref<const std::string&>();
      const std::size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        merges.at(index).fail("\"" + brief_text(line) + "\" is not two tokens split by a space");
      }
      text.left = std::string_view(line).substr(0, space);
      text.right = std::string_view(line).substr(space + 1);
    } else {
      if (!merge.is_array() || merge.size() != 2 || !merge[0].is_string() ||
          !merge[1].is_string()) {
        merges.at(index).fail("expected a [\"left\", \"right\"] pair, found " + brief_json(merge));
      }
      text.left = merge[0].get_ref<const std::string&>();
      text.right = merge[1].get_ref<const std::string&>();
    }
    const std::size_t prefix_length = options_.continuing_subword_prefix.size();
    if (text.right.size() < prefix_length) {
      merges.at(index).fail("\"" + brief_text(text.right) +
                            "\" is shorter than the continuing_subword_prefix");
    }
    text.index = index;
    // The library drops the right part's first prefix-length bytes, whatever they are.
    text.merged.assign(text.left);
    text.merged.append(text.right.substr(prefix_length));
    text.left_hash = tokens_.prefetch(text.left);
    text.right_hash = tokens_.prefetch(text.right);
    text.merged_hash = tokens_.prefetch(text.merged);
  }

  ResolvedMerge resolve(const ConfigNode& merges, const MergeText& text) const {
    const auto left = tokens_.find(text.left, text.left_hash);
    const auto right = tokens_.find(text.right, text.right_hash);
    const auto merged = tokens_.find(text.merged, text.merged_hash);
    if (!left || !right || !merged) {
      const std::string_view missing = !left ? text.left : !right ? text.right : text.merged;
      merges.at(text.index)
          .fail("merge \"" + brief_text(text.left) + "\" + \"" + brief_text(text.right) + "\": \"" +
                brief_text(missing) + "\" is not in the vocabulary");
    }
    return ResolvedMerge{*left, *right, *merged};
  }

  void find_byte_tokens() {
    static constexpr char kHexDigits[] = "0123456789ABCDEF";
    for (int byte = 0; byte < 256; ++byte) {
      const std::string name = {'<', '0', 'x', kHexDigits[byte >> 4], kHexDigits[byte & 15], '>'};
      byte_token_ids_[byte] = tokens_.find(name).value_or(-1);
    }
  }

  // Without prefix or suffix a character's token is the character itself; a table for the one-
  // and two-byte characters (all of byte-level BPE's alphabet) saves a hash lookup per character.
  void find_short_character_tokens() {
    short_character_ids_.assign(kShortCharacterLimit, -1);
    for (std::size_t entry = 0; entry < tokens_.size(); ++entry) {
      const int code = short_character_code(tokens_.text(entry));
      if (code >= 0) short_character_ids_[code] = tokens_.id(entry);
    }
  }

  // The code point of a text that is exactly one character below U+0800, else -1.
  static int short_character_code(std::string_view text) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    if (text.size() == 1 && byte(0) < 0x80) return byte(0);
    if (text.size() == 2 && byte(0) >= 0xC2 && byte(0) < 0xE0 && (byte(1) & 0xC0) == 0x80) {
      return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
    }
    return -1;
  }

  // The text under which the model looks a character of a piece up.
  void spell(std::string_view character, bool is_first, bool is_last, std::string& spelled) const {
    spelled.assign(is_first ? "" : options_.continuing_subword_prefix);
    spelled.append(character);
    if (is_last) spelled.append(options_.end_of_word_suffix);
  }

  std::optional<int> character_token(std::string_view character, bool is_first, bool is_last,
                                     std::string& spelled) const {
    if (!short_character_ids_.empty()) {
      const int code = short_character_code(character);
      if (code >= 0) {
        const int id = short_character_ids_[code];
        return id < 0 ? std::nullopt : std::optional<int>(id);
      }
    }
    spell(character, is_first, is_last, spelled);
    return tokens_.find(spelled);
  }

  // model.rs's merge_word and word.rs's merge_all, appending the resulting ids and their spans:
  // each symbol's bytes counted from the end of the one before, as word.rs's offsets are (a
  // character dropped for want of an unknown token shifts them).
  void merge_piece(std::string_view piece, std::vector<int>& ids,
                   std::vector<ByteSpan>& spans) const {
    thread_local std::vector<Symbol> symbols;
    thread_local std::vector<QueuedMerge> queue;
    thread_local std::string spelled;
    symbols.clear();
    queue.clear();
    const auto add_symbol = [&](int id, int byte_length) {
      const int index = static_cast<int>(symbols.size());
      if (index > 0) symbols.back().next = index;
      symbols.push_back(Symbol{id, index - 1, -1, byte_length});
    };

    // An unknown character waiting to be added, so that the next one can be fused into it.
    // (The unknown token's id is unk_id_; only its length in bytes varies. A length of 0: none.)
    int pending_unknown_length = 0;
    for (std::size_t start = 0; start < piece.size();) {
      const std::size_t length = std::min(utf8_sequence_length(piece[start]), piece.size() - start);
      const std::string_view character = piece.substr(start, length);
      const bool is_first = start == 0;
      start += length;
      const bool is_last = start == piece.size();
      const auto id = character_token(character, is_first, is_last, spelled);
      if (id) {
        if (pending_unknown_length > 0) add_symbol(*unk_id_, pending_unknown_length);
        pending_unknown_length = 0;
        add_symbol(*id, static_cast<int>(length));
        continue;
      }
      // Byte fallback spells the character as the model would look it up, prefix and suffix
      // included; a waiting unknown stays waiting (and so lands after these bytes), as in the
      // library.
      if (options_.byte_fallback) {
        spell(character, is_first, is_last, spelled);
        if (add_byte_tokens(spelled, add_symbol)) continue;
      }
      if (!options_.unk_token) continue;
      if (pending_unknown_length > 0 && options_.fuse_unk) {
        pending_unknown_length += static_cast<int>(length);
        continue;
      }
      if (pending_unknown_length > 0) add_symbol(*unk_id_, pending_unknown_length);
      if (!unk_id_) throw Error(missing_unk_message_);
      pending_unknown_length = static_cast<int>(length);
    }
    if (pending_unknown_length > 0) add_symbol(*unk_id_, pending_unknown_length);

    apply_merges(symbols, queue);
    std::uint32_t position = 0;
    for (const Symbol& symbol : symbols) {
      if (symbol.byte_length == 0) continue;
      ids.push_back(symbol.id);
      const auto end = position + static_cast<std::uint32_t>(symbol.byte_length);
      spans.push_back({position, end});
      position = end;
    }
  }

  template <typename AddSymbol>
  bool add_byte_tokens(std::string_view spelled, const AddSymbol& add_symbol) const {
    for (const char byte : spelled) {
      if (byte_token_ids_[static_cast<unsigned char>(byte)] < 0) return false;
    }
    for (const char byte : spelled)
      add_symbol(byte_token_ids_[static_cast<unsigned char>(byte)], 1);
    return true;
  }

  void push_merge_if_known(std::vector<QueuedMerge>& queue, const std::vector<Symbol>& symbols,
                           int position, int right) const {
    if (const MergeResult* merge = merges_.find(symbols[position].id, symbols[right].id)) {
      queue.push_back(QueuedMerge{merge->rank, position, merge->new_id});
      std::push_heap(queue.begin(), queue.end(), comes_later);
    }
  }

  // word.rs's merge_all without dropout. A queued merge whose pair has changed since is skipped
  // only when the pair now there merges into a different token, exactly as the library checks.
  void apply_merges(std::vector<Symbol>& symbols, std::vector<QueuedMerge>& queue) const {
    const int count = static_cast<int>(symbols.size());
    for (int position = 0; position + 1 < count; ++position) {
      if (const MergeResult* merge = merges_.find(symbols[position].id, symbols[position + 1].id)) {
        queue.push_back(QueuedMerge{merge->rank, position, merge->new_id});
      }
    }
    std::make_heap(queue.begin(), queue.end(), comes_later);
    while (!queue.empty()) {
      std::pop_heap(queue.begin(), queue.end(), comes_later);
      const QueuedMerge top = queue.back();
      queue.pop_back();
      Symbol& left = symbols[top.position];
      if (left.byte_length == 0 || left.next == -1) continue;
      Symbol& right = symbols[left.next];
      const MergeResult* current = merges_.find(left.id, right.id);
      if (current == nullptr || current->new_id != top.new_id) continue;

      left.id = top.new_id;
      left.byte_length += right.byte_length;
      left.next = right.next;
      right.byte_length = 0;
      if (left.next >= 0) symbols[left.next].prev = top.position;

      if (left.prev >= 0) push_merge_if_known(queue, symbols, left.prev, top.position);
      if (left.next >= 0) push_merge_if_known(queue, symbols, top.position, left.next);
    }
  }

  static constexpr int kShortCharacterLimit = 0x800;

  BpeOptions options_;
  TokenTable tokens_;
  MergeTable merges_;
  std::vector<int> entry_of_id_;  // id -> entry of tokens_, -1 for ids no token has
  std::optional<int> unk_id_;
  std::string missing_unk_message_;
  std::array<int, 256> byte_token_ids_{};  // <0xNN> tokens, -1 where missing
  std::vector<int> short_character_ids_;   // empty when prefix or suffix is set
  PieceCache cache_;
};

}  // namespace

std::unique_ptr<Model> make_bpe_model(const ConfigNode& node) {
  if (const auto dropout = node.number_or_null("dropout")) {
    if (!(*dropout >= 0.0 && *dropout <= 1.0)) {
      node.at("dropout").fail("must be between 0 and 1, found " +
                              brief_json(node.at("dropout").value()));
    }
    // Dropout samples merges at random; attn's encodings are deterministic.
    if (*dropout > 0.0) node.at("dropout").refuse("BPE dropout > 0");
  }
  BpeOptions options;
  if (node.has("unk_token")) options.unk_token = node.string("unk_token");
  options.continuing_subword_prefix = node.string_or("continuing_subword_prefix", "");
  options.end_of_word_suffix = node.string_or("end_of_word_suffix", "");
  // Null leaves the default, as the library reads these as Option<bool>.
  options.fuse_unk = node.boolean_or("fuse_unk", false);
  options.byte_fallback = node.boolean_or("byte_fallback", false);
  options.ignore_merges = node.boolean_or("ignore_merges", false);
  return std::make_unique<BpeModel>(node, std::move(options));
}

}  // namespace attn::pipeline
