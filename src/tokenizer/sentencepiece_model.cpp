#include "src/tokenizer/sentencepiece_model.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"

namespace attn {
namespace {

struct ProtoField {
  std::uint64_t number = 0;
  std::uint64_t value = 0;  // wire type 0 (varint), 5 (fixed32)
  std::string_view bytes;   // wire type 2 (length-delimited)
};

// Walks the fields of one protobuf message (wire format).
class ProtoFields {
 public:
  ProtoFields(std::string_view data, const std::string& file) : data_(data), file_(file) {}

  // Reads the next field into `field`; false at the end of the message.
  bool next(ProtoField& field) {
    if (data_.empty()) return false;
    const std::uint64_t key = varint();
    field = ProtoField{key >> 3, 0, {}};
    switch (key & 7) {
      case 0:
        field.value = varint();
        return true;
      case 1:
        skip(8);
        return true;
      case 2: {
        const std::uint64_t length = varint();
        if (length > data_.size()) malformed();
        field.bytes = data_.substr(0, length);
        data_.remove_prefix(length);
        return true;
      }
      case 5: {
        if (data_.size() < 4) malformed();
        std::uint32_t bits = 0;
        for (int i = 3; i >= 0; --i) {
          bits = (bits << 8) | static_cast<unsigned char>(data_[static_cast<std::size_t>(i)]);
        }
        field.value = bits;
        data_.remove_prefix(4);
        return true;
      }
      default:
        malformed();
    }
  }

 private:
  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (data_.empty()) malformed();
      const auto byte = static_cast<unsigned char>(data_.front());
      data_.remove_prefix(1);
      value |= std::uint64_t{byte & 0x7Fu} << shift;
      if (byte < 0x80) return value;
    }
    malformed();
  }

  void skip(std::size_t bytes) {
    if (bytes > data_.size()) malformed();
    data_.remove_prefix(bytes);
  }

  [[noreturn]] void malformed() const {
    throw Error(file_ + ": not a SentencePiece model (the file is not a valid protocol buffer)");
  }

  std::string_view data_;
  const std::string& file_;
};

// The byte a byte piece stands for ("<0x0A>" is 10), or -1 when the piece is not of that form
// (PieceToByte).
int piece_byte(const std::string& piece) {
  if (piece.size() != 6 || !piece.starts_with("<0x") || piece.back() != '>') return -1;
  int value = 0;
  for (const char digit : std::string_view(piece).substr(3, 2)) {
    const int nibble = std::isdigit(static_cast<unsigned char>(digit)) ? digit - '0'
                       : digit >= 'A' && digit <= 'F'                  ? digit - 'A' + 10
                                                                       : -1;
    if (nibble < 0) return -1;
    value = value * 16 + nibble;
  }
  return value;
}

// The checks of ModelInterface::InitializePieces (libsentencepiece 0.1.97), in its order, and
// the pieces' text.
void check_pieces(const SentencePieceProto& proto, bool byte_fallback, const std::string& file) {
  const auto refuse = [&](const std::string& reason) {
    throw Error(file + ": not a SentencePiece model (" + reason + ")");
  };
  // Normal, user-defined and unused pieces share one table, the others another.
  std::unordered_set<std::string_view> normal;
  std::unordered_set<std::string_view> reserved;
  bool unknown_found = false;
  std::array<bool, 256> byte_found{};
  for (std::size_t i = 0; i < proto.pieces.size(); ++i) {
    const SentencePieceEntry& entry = proto.pieces[i];
    const std::string where = "piece " + std::to_string(i);
    if (entry.piece.empty()) refuse(where + " is empty");
    // The pipeline's vocabulary is text, as tokenizer.json's (JSON strings) is.
    if (!is_valid_utf8(entry.piece)) {
      refuse(where + " (" + brief_text(entry.piece) + ") is not valid UTF-8");
    }
    const bool is_normal = entry.type == SentencePieceType::kNormal ||
                           entry.type == SentencePieceType::kUserDefined ||
                           entry.type == SentencePieceType::kUnused;
    if (!(is_normal ? normal : reserved).insert(entry.piece).second) {
      refuse(where + " (" + brief_text(entry.piece) + ") is given twice");
    }
    if (entry.type == SentencePieceType::kUnknown) {
      if (unknown_found) refuse(where + " is a second unknown piece");
      unknown_found = true;
    }
    if (entry.type == SentencePieceType::kByte) {
      if (!byte_fallback) {
        refuse("byte piece " + brief_text(entry.piece) + " although byte_fallback is false");
      }
      const int byte = piece_byte(entry.piece);
      if (byte < 0) refuse("byte piece " + brief_text(entry.piece) + " is not of the form <0xNN>");
      byte_found[static_cast<std::size_t>(byte)] = true;
    }
  }
  if (!unknown_found) refuse("it has no unknown piece");
  if (byte_fallback && std::find(byte_found.begin(), byte_found.end(), false) != byte_found.end()) {
    refuse("byte_fallback is true but not all 256 byte pieces are there");
  }
}

}  // namespace

SentencePieceProto read_sentencepiece_proto(const std::filesystem::path& path) {
  const std::string file = path.string();
  const std::string serialized = read_model_file(path, kMaxTokenizerBytes);
  if (serialized.empty()) throw Error(file + ": not a SentencePiece model (empty file)");
  SentencePieceProto proto;
  // ModelProto: 1 pieces, 2 trainer_spec, 3 normalizer_spec, 5 denormalizer_spec. A message given
  // twice is merged, a scalar given twice keeps the last.
  bool has_trainer_spec = false;
  bool has_normalizer_spec = false;
  bool has_denormalizer_spec = false;
  bool treat_whitespace_as_suffix = false;
  bool byte_fallback = false;
  ProtoFields model(serialized, file);
  for (ProtoField field; model.next(field);) {
    if (field.number == 1) {
      SentencePieceEntry entry;
      ProtoFields piece(field.bytes, file);
      for (ProtoField inner; piece.next(inner);) {
        if (inner.number == 1) entry.piece = std::string(inner.bytes);
        if (inner.number == 2) {
          const auto bits = static_cast<std::uint32_t>(inner.value);
          std::memcpy(&entry.score, &bits, sizeof bits);
        }
        if (inner.number == 3) {
          if (inner.value < 1 || inner.value > 6) {
            throw Error(file + ": not a SentencePiece model (piece " +
                        std::to_string(proto.pieces.size()) + " has type " +
                        std::to_string(inner.value) + ", which no SentencePiece version defines)");
          }
          entry.type = static_cast<SentencePieceType>(inner.value);
        }
      }
      proto.pieces.push_back(std::move(entry));
    } else if (field.number == 2) {
      has_trainer_spec = true;
      ProtoFields trainer(field.bytes, file);
      for (ProtoField inner; trainer.next(inner);) {
        if (inner.number == 3) proto.model_type = static_cast<int>(inner.value);
        if (inner.number == 24) treat_whitespace_as_suffix = inner.value != 0;
        if (inner.number == 35) byte_fallback = inner.value != 0;
        if (inner.number == 40) proto.unk_id = static_cast<int>(inner.value);
        if (inner.number == 44) proto.unk_surface = std::string(inner.bytes);
        if (inner.number == 45) proto.unk_piece = std::string(inner.bytes);
      }
    } else if (field.number == 3) {
      has_normalizer_spec = true;
      ProtoFields normalizer(field.bytes, file);
      for (ProtoField inner; normalizer.next(inner);) {
        if (inner.number == 2) proto.precompiled_charsmap = std::string(inner.bytes);
        if (inner.number == 3) proto.add_dummy_prefix = inner.value != 0;
        if (inner.number == 4) proto.remove_extra_whitespaces = inner.value != 0;
      }
    } else if (field.number == 5) {
      has_denormalizer_spec = true;
    }
  }
  // Real models always carry both; a file cut short after its pieces parses without them and
  // would silently run with default settings.
  if (!has_trainer_spec || !has_normalizer_spec) {
    throw Error(file + ": not a SentencePiece model (no " +
                (has_trainer_spec ? "normalizer" : "trainer") +
                " settings: is the file cut short?)");
  }
  if (treat_whitespace_as_suffix) {
    throw Error(file + ": treat_whitespace_as_suffix models are not supported");
  }
  if (has_denormalizer_spec) throw Error(file + ": models with a denormalizer are not supported");
  check_pieces(proto, byte_fallback, file);
  if (proto.model_type != 1 && proto.model_type != 2) {
    throw Error(file + ": model_type " + std::to_string(proto.model_type) +
                " (WORD or CHAR) is not supported: transformers converts only UNIGRAM (1) and "
                "BPE (2) models");
  }
  return proto;
}

}  // namespace attn
