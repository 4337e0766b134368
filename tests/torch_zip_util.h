#pragma once

// pytorch_model.bin archives for tests, written byte by byte as torch.save writes them: pickles
// opcode by opcode, and zip archives with knobs for breaking them. Independent of
// src/io/torch_*, so a test can check the reader against what torch itself would write.

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn::test {

// ---- Pickles, opcode by opcode (the names are pickletools')

class Pickle {
 public:
  Pickle& op(uint8_t code) {
    bytes_ += char(code);
    return *this;
  }
  Pickle& raw(std::string_view bytes) {
    bytes_ += bytes;
    return *this;
  }
  Pickle& le(uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) bytes_ += char(value >> (8 * i));
    return *this;
  }
  Pickle& proto(int version = 2) { return op(0x80).op(uint8_t(version)); }
  Pickle& mark() { return op('('); }
  Pickle& stop() { return op('.'); }
  Pickle& str(std::string_view text) { return op('X').le(text.size(), 4).raw(text); }  // BINUNICODE
  Pickle& integer(int64_t value) {
    if (value >= 0 && value < 256) return op('K').le(value, 1);          // BININT1
    if (value >= 0 && value < 65536) return op('M').le(value, 2);        // BININT2
    if (value == int32_t(value)) return op('J').le(uint32_t(value), 4);  // BININT
    return op(0x8a).op(8).le(uint64_t(value), 8);                        // LONG1
  }
  Pickle& global(std::string_view module, std::string_view name) {
    return op('c').raw(module).raw("\n").raw(name).raw("\n");
  }
  Pickle& stack_global(std::string_view module, std::string_view name) {
    return str(module).str(name).op(0x93);
  }
  Pickle& ints(const std::vector<int64_t>& values) {  // a tuple
    mark();
    for (const int64_t value : values) integer(value);
    return op('t');
  }
  Pickle& empty_ordered_dict() { return global("collections", "OrderedDict").op(')').op('R'); }
  // torch.save's persistent id of a storage: ('storage', torch.<type>, key, 'cpu', numel).
  Pickle& storage(std::string_view type, std::string_view key, int64_t numel) {
    return mark()
        .str("storage")
        .global("torch", type)
        .str(key)
        .str("cpu")
        .integer(numel)
        .op('t')
        .op('Q');
  }
  // _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())
  Pickle& tensor(std::string_view type, std::string_view key, int64_t numel, int64_t offset,
                 const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
    global("torch._utils", "_rebuild_tensor_v2").mark().storage(type, key, numel);
    return integer(offset).ints(size).ints(stride).op(0x89).empty_ordered_dict().op('t').op('R');
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

// One tensor of a state dict as torch.save writes it.
struct TensorSpec {
  std::string name, type, key;
  int64_t numel = 0, offset = 0;
  std::vector<int64_t> size, stride;
};

inline std::string state_dict_pickle(const std::vector<TensorSpec>& tensors) {
  Pickle pickle;
  pickle.proto().op('}').mark();
  for (const TensorSpec& t : tensors) {
    pickle.str(t.name).tensor(t.type, t.key, t.numel, t.offset, t.size, t.stride);
  }
  return pickle.op('u').stop().bytes();
}

// ---- Zip archives, written as torch.save writes them (with zip64 end records), with knobs
// for breaking them.

struct ZipInput {
  std::string name;
  std::string data;
  bool deflate = false;
  bool zip64_extra = false;  // sizes and offset in the central directory's zip64 extra field
  std::size_t misalign = 0;  // data starts this far past a multiple of 64
  // Overrides of what the headers claim (-1: the truth).
  int64_t size = -1;             // uncompressed size
  int64_t compressed_size = -1;  // also the size of a stored entry
  int64_t crc = -1;
  int method = -1;
  uint16_t flags = 0x0800;  // UTF-8 names
};

inline std::string raw_deflate(std::string_view data) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, uLong(data.size())), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = uInt(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

inline void put(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += char(value >> (8 * i));
}

// How the archive ends: torch writes zip64 end records always, and puts the marker 0xFFFF...
// in the end record's fields when a value needs them.
struct ZipEnd {
  bool zip64 = true;
  bool markers = false;
};

inline std::string make_zip(const std::vector<ZipInput>& entries, ZipEnd end = {}) {
  std::string zip, directory;
  for (const ZipInput& entry : entries) {
    const std::string data = entry.deflate ? raw_deflate(entry.data) : entry.data;
    const uint64_t crc =
        entry.crc >= 0
            ? uint64_t(entry.crc)
            : crc32(0, reinterpret_cast<const Bytef*>(entry.data.data()), uInt(entry.data.size()));
    const uint64_t size = entry.size >= 0 ? uint64_t(entry.size) : entry.data.size();
    const uint64_t compressed =
        entry.compressed_size >= 0 ? uint64_t(entry.compressed_size) : data.size();
    const uint64_t method = entry.method >= 0 ? uint64_t(entry.method) : entry.deflate ? 8 : 0;
    const uint64_t header = zip.size();
    // Padding in the extra field, as torch writes it ("FB" + length + "Z..."), so that the data
    // starts at `misalign` past a multiple of 64.
    const std::size_t before_padding = header + 30 + entry.name.size() + 4;
    const std::size_t padding = (64 + entry.misalign - before_padding % 64) % 64;
    zip += "PK\3\4";
    put(zip, 45, 2);
    put(zip, entry.flags, 2);
    put(zip, method, 2);
    put(zip, 0, 4);  // time, date
    put(zip, crc, 4);
    put(zip, std::min<uint64_t>(compressed, 0xFFFFFFFF), 4);
    put(zip, std::min<uint64_t>(size, 0xFFFFFFFF), 4);
    put(zip, entry.name.size(), 2);
    put(zip, 4 + padding, 2);
    zip += entry.name + "FB";
    put(zip, padding, 2);
    zip += std::string(padding, 'Z');
    zip += data;

    std::string extra;
    if (entry.zip64_extra) {
      put(extra, 1, 2);
      put(extra, 24, 2);
      put(extra, size, 8);
      put(extra, compressed, 8);
      put(extra, header, 8);
    }
    const uint64_t wide = entry.zip64_extra ? 0xFFFFFFFF : 0;
    directory += "PK\1\2";
    put(directory, 45, 2);
    put(directory, 45, 2);
    put(directory, entry.flags, 2);
    put(directory, method, 2);
    put(directory, 0, 4);
    put(directory, crc, 4);
    put(directory, wide ? wide : compressed, 4);
    put(directory, wide ? wide : size, 4);
    put(directory, entry.name.size(), 2);
    put(directory, extra.size(), 2);
    put(directory, 0, 2);  // comment
    put(directory, 0, 2);  // disk
    put(directory, 0, 2);  // internal attributes
    put(directory, 0, 4);  // external attributes
    put(directory, wide ? wide : header, 4);
    directory += entry.name + extra;
  }
  const uint64_t directory_offset = zip.size();
  zip += directory;
  const uint64_t record = zip.size();
  if (end.zip64) {
    zip += "PK\6\6";  // zip64 end of central directory record
    put(zip, 44, 8);
    put(zip, 45, 2);
    put(zip, 45, 2);
    put(zip, 0, 4);
    put(zip, 0, 4);
    put(zip, entries.size(), 8);
    put(zip, entries.size(), 8);
    put(zip, directory.size(), 8);
    put(zip, directory_offset, 8);
    zip += "PK\6\7";  // its locator
    put(zip, 0, 4);
    put(zip, record, 8);
    put(zip, 1, 4);
  }
  zip += "PK\5\6";  // end of central directory record
  put(zip, 0, 4);
  put(zip, end.markers ? 0xFFFF : entries.size(), 2);
  put(zip, end.markers ? 0xFFFF : entries.size(), 2);
  put(zip, end.markers ? 0xFFFFFFFF : directory.size(), 4);
  put(zip, end.markers ? 0xFFFFFFFF : directory_offset, 4);
  put(zip, 0, 2);
  return zip;
}

// torch.save's layout: archive/data.pkl, archive/data/<key> (names given relative to data/),
// archive/version.
inline std::string torch_zip(const std::string& pickle, std::vector<ZipInput> storages = {}) {
  std::vector<ZipInput> entries = {{.name = "archive/data.pkl", .data = pickle}};
  for (ZipInput& storage : storages) {
    storage.name = "archive/data/" + storage.name;
    entries.push_back(std::move(storage));
  }
  entries.push_back({.name = "archive/version", .data = "3\n"});
  return make_zip(entries);
}

}  // namespace attn::test
