#include "src/tokenizer/sentencepiece_model.h"

#include <cstdint>
#include <cstring>
#include <exception>
#include <string_view>
#include <utility>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"

namespace attn {
namespace {

// The parts of the serialized ModelProto that decoding depends on (the installed headers
// declare ModelProto but do not define it). Defaults are those of sentencepiece_model.proto.
struct ModelFileSettings {
  bool has_trainer_spec = false;
  bool has_normalizer_spec = false;
  bool has_denormalizer_spec = false;
  bool treat_whitespace_as_suffix = false;
};

struct ProtoField {
  std::uint64_t number = 0;
  std::uint64_t value = 0;  // wire type 0 (varint), 5 (fixed32)
  std::string_view bytes;   // wire type 2 (length-delimited)
};

// Walks the fields of one protobuf message (wire format). The library has already parsed the
// file, so a malformed field means the two disagree: reported as a broken file all the same.
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
    throw Error(file_ + ": not a SentencePiece model (malformed protocol buffer)");
  }

  std::string_view data_;
  const std::string& file_;
};

// ModelProto: 2 trainer_spec, 3 normalizer_spec, 5 denormalizer_spec. TrainerSpec: 24
// treat_whitespace_as_suffix. A message given twice is merged, a scalar given twice keeps the
// last.
ModelFileSettings read_model_file_settings(std::string_view serialized, const std::string& file) {
  ModelFileSettings settings;
  ProtoFields model(serialized, file);
  for (ProtoField field; model.next(field);) {
    if (field.number == 2) {
      settings.has_trainer_spec = true;
      ProtoFields trainer(field.bytes, file);
      for (ProtoField inner; trainer.next(inner);) {
        if (inner.number == 24) settings.treat_whitespace_as_suffix = inner.value != 0;
      }
    } else if (field.number == 3) {
      settings.has_normalizer_spec = true;
    } else if (field.number == 5) {
      settings.has_denormalizer_spec = true;
    }
  }
  return settings;
}

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_processor(std::string_view serialized,
                                                                      const std::string& file) {
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  sentencepiece::util::Status status;
  try {
    status = processor->LoadFromSerializedProto(serialized);
  } catch (const std::exception& error) {
    // Most problems come back as a status, but the trie builder inside the library throws (a
    // piece starting with a NUL byte is an empty key to it).
    throw Error(file + ": not a SentencePiece model (libsentencepiece: " +
                brief_text(error.what(), 200) + ")");
  }
  if (!status.ok()) {
    // The library reports a protobuf that does not parse by the failed check's source line.
    const std::string message = status.message();
    const std::string reason = message.find("ParseFromArray") != std::string::npos
                                   ? "the file is not a valid protocol buffer"
                                   : "libsentencepiece: " + brief_text(message, 200);
    throw Error(file + ": not a SentencePiece model (" + reason + ")");
  }
  return processor;
}

// The checks of read_sentencepiece_model on the file's bytes; the library's processor.
std::unique_ptr<sentencepiece::SentencePieceProcessor> load_checked(const std::string& serialized,
                                                                    const std::string& file) {
  if (serialized.empty()) throw Error(file + ": not a SentencePiece model (empty file)");
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor =
      load_processor(serialized, file);
  const ModelFileSettings settings = read_model_file_settings(serialized, file);
  // Real models always carry both; a file cut short after its pieces parses without them and
  // would silently run with default settings.
  if (!settings.has_trainer_spec || !settings.has_normalizer_spec) {
    throw Error(file + ": not a SentencePiece model (no " +
                (settings.has_trainer_spec ? "normalizer" : "trainer") +
                " settings: is the file cut short?)");
  }
  if (settings.treat_whitespace_as_suffix) {
    throw Error(file + ": treat_whitespace_as_suffix models are not supported");
  }
  if (settings.has_denormalizer_spec) {
    throw Error(file + ": models with a denormalizer are not supported");
  }
  // libsentencepiece loads a model without an unknown piece, then gives id -1 for every piece
  // it does not know.
  const int unk_id = processor->unk_id();
  if (unk_id < 0 || unk_id >= processor->GetPieceSize()) {
    throw Error(file + ": not a SentencePiece model (it has no unknown piece)");
  }
  return processor;
}

}  // namespace

SentencePieceModel read_sentencepiece_model(const std::filesystem::path& path) {
  const std::string file = path.string();
  const std::string serialized = read_model_file(path, kMaxTokenizerBytes);
  SentencePieceModel model;
  model.processor = load_checked(serialized, file);
  return model;
}

SentencePieceProto read_sentencepiece_proto(const std::filesystem::path& path) {
  const std::string file = path.string();
  const std::string serialized = read_model_file(path, kMaxTokenizerBytes);
  const int piece_count = load_checked(serialized, file)->GetPieceSize();
  SentencePieceProto proto;
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
        if (inner.number == 3) entry.type = static_cast<SentencePieceType>(inner.value);
      }
      // The pipeline's vocabulary is text, as tokenizer.json's (JSON strings) is.
      if (!is_valid_utf8(entry.piece)) {
        throw Error(file + ": piece " + std::to_string(proto.pieces.size()) + " (" +
                    brief_text(entry.piece) + ") is not valid UTF-8");
      }
      proto.pieces.push_back(std::move(entry));
    } else if (field.number == 2) {
      ProtoFields trainer(field.bytes, file);
      for (ProtoField inner; trainer.next(inner);) {
        if (inner.number == 3) proto.model_type = static_cast<int>(inner.value);
        if (inner.number == 40) proto.unk_id = static_cast<int>(inner.value);
        if (inner.number == 44) proto.unk_surface = std::string(inner.bytes);
        if (inner.number == 45) proto.unk_piece = std::string(inner.bytes);
      }
    } else if (field.number == 3) {
      ProtoFields normalizer(field.bytes, file);
      for (ProtoField inner; normalizer.next(inner);) {
        if (inner.number == 2) proto.precompiled_charsmap = std::string(inner.bytes);
        if (inner.number == 3) proto.add_dummy_prefix = inner.value != 0;
        if (inner.number == 4) proto.remove_extra_whitespaces = inner.value != 0;
      }
    }
  }
  // The library has loaded the same pieces; it checks their types, texts and the unknown id.
  if (static_cast<int>(proto.pieces.size()) != piece_count) {
    throw Error(file + ": not a SentencePiece model (" + std::to_string(proto.pieces.size()) +
                " pieces, the library read " + std::to_string(piece_count) + ")");
  }
  if (proto.model_type != 1 && proto.model_type != 2) {
    throw Error(file + ": model_type " + std::to_string(proto.model_type) +
                " (WORD or CHAR) is not supported: transformers converts only UNIGRAM (1) and "
                "BPE (2) models");
  }
  return proto;
}

}  // namespace attn
