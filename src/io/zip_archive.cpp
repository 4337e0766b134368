#include "src/io/zip_archive.h"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <new>
#include <numeric>
#include <utility>

#include "src/base/error.h"
#include "src/io/json_util.h"

// The layout of a zip archive (PKWARE's APPNOTE.TXT), as torch.save writes it:
//
//   local header 1, data 1, local header 2, data 2, ...   each entry's bytes
//   central directory: one header per entry               names, sizes, local header offsets
//   zip64 end-of-central-directory record and locator     64-bit counts and offsets
//   end-of-central-directory record (+ comment)           where the central directory is
//
// A reader starts from the end: it finds the last record, then the central directory, then
// each entry's local header, whose own name and extra field lengths decide where the data
// begins (torch pads the extra field so that every storage starts 64-byte aligned). All
// numbers are little-endian.

namespace attn {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;     // "PK\3\4"
constexpr uint32_t kCentralHeader = 0x02014b50;   // "PK\1\2"
constexpr uint32_t kEndRecord = 0x06054b50;       // "PK\5\6"
constexpr uint32_t kZip64EndRecord = 0x06064b50;  // "PK\6\6"
constexpr uint32_t kZip64Locator = 0x07064b50;    // "PK\6\7"
constexpr std::size_t kLocalHeaderBytes = 30;
constexpr std::size_t kCentralHeaderBytes = 46;
constexpr std::size_t kEndRecordBytes = 22;
constexpr std::size_t kMaxCommentBytes = 65535;
constexpr std::size_t kZip64EndRecordBytes = 56;
constexpr std::size_t kZip64LocatorBytes = 20;
// A value of the 32-bit (16-bit) fields meaning "the real one is in a zip64 field".
constexpr uint64_t kZip64Marker32 = 0xFFFFFFFF;
constexpr uint64_t kZip64Marker16 = 0xFFFF;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kEncryptedFlag = 1;
constexpr uint16_t kStored = 0, kDeflated = 8;
// Deflate's best case: a 258-byte match coded in 2 bits, so each compressed byte yields at most
// 1032 bytes. A size claiming more is not real data.
constexpr uint64_t kMaxDeflateRatio = 1032;

// `count` bytes at `at` of `bytes`, little-endian; the caller has checked that they are there.
uint64_t little_endian(std::span<const std::byte> bytes, std::size_t at, std::size_t count) {
  uint64_t value = 0;
  for (std::size_t i = count; i-- > 0;) value = value << 8 | uint8_t(bytes[at + i]);
  return value;
}
uint64_t u16(std::span<const std::byte> bytes, std::size_t at) {
  return little_endian(bytes, at, 2);
}
uint64_t u32(std::span<const std::byte> bytes, std::size_t at) {
  return little_endian(bytes, at, 4);
}
uint64_t u64(std::span<const std::byte> bytes, std::size_t at) {
  return little_endian(bytes, at, 8);
}

std::string_view text(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::string method_name(uint64_t method) {
  switch (method) {
    case 9:
      return "9 (deflate64)";
    case 12:
      return "12 (bzip2)";
    case 14:
      return "14 (LZMA)";
    case 93:
      return "93 (zstd)";
    case 95:
      return "95 (xz)";
  }
  return std::to_string(method);
}

// The zip64 extra field of a central directory header holds, in this order, the 64-bit values
// of those fields that hold the marker: size, compressed size, local header offset, disk.
void read_zip64_extra(std::span<const std::byte> extra, ZipEntry& entry, uint64_t& disk,
                      const std::string& where) {
  const bool wide_size = entry.size == kZip64Marker32;
  const bool wide_compressed = entry.compressed_size == kZip64Marker32;
  const bool wide_offset = entry.header_offset == kZip64Marker32;
  const bool wide_disk = disk == kZip64Marker16;
  if (!wide_size && !wide_compressed && !wide_offset && !wide_disk) return;
  for (std::size_t at = 0; extra.size() - at >= 4;) {
    const uint64_t id = u16(extra, at), bytes = u16(extra, at + 2);
    if (bytes > extra.size() - at - 4) break;
    if (id == kZip64ExtraId) {
      const std::span<const std::byte> field = extra.subspan(at + 4, bytes);
      std::size_t next = 0;
      const auto read = [&](std::size_t count) {
        if (field.size() - next < count) throw Error(where + ": zip64 extra field is too short");
        next += count;
        return little_endian(field, next - count, count);
      };
      if (wide_size) entry.size = read(8);
      if (wide_compressed) entry.compressed_size = read(8);
      if (wide_offset) entry.header_offset = read(8);
      if (wide_disk) disk = read(4);
      return;
    }
    at += 4 + bytes;
  }
  throw Error(where + ": sizes or offset need a zip64 extra field, and it is missing or malformed");
}

// Ends an inflation however it leaves.
struct InflateStream {
  z_stream stream{};
  explicit InflateStream(const std::string& where) {
    // Raw deflate (negative window bits): zip entries have no zlib header.
    if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) throw Error(where + ": cannot start zlib");
  }
  ~InflateStream() { inflateEnd(&stream); }
};

// Inflates `compressed` into exactly `output.size()` bytes, never writing past them.
void inflate_exactly(std::span<const std::byte> compressed, std::span<std::byte> output,
                     const std::string& where) {
  InflateStream inflater(where);
  z_stream& stream = inflater.stream;
  // zlib counts bytes in 32 bits: larger entries go in and come out in chunks.
  constexpr std::size_t kChunk = std::size_t{1} << 30;
  std::size_t in_at = 0, out_at = 0;
  Bytef spare = 0;  // room for one byte past the declared size: any output there is too much
  for (;;) {
    if (stream.avail_in == 0 && in_at < compressed.size()) {
      const std::size_t count = std::min(kChunk, compressed.size() - in_at);
      stream.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(compressed.data() + in_at));
      stream.avail_in = uInt(count);
      in_at += count;
    }
    bool past_end = false;
    if (stream.avail_out == 0) {
      if (out_at < output.size()) {
        const std::size_t count = std::min(kChunk, output.size() - out_at);
        stream.next_out = reinterpret_cast<Bytef*>(output.data() + out_at);
        stream.avail_out = uInt(count);
        out_at += count;
      } else {
        stream.next_out = &spare;
        stream.avail_out = 1;
        past_end = true;
      }
    }
    const int status = inflate(&stream, Z_NO_FLUSH);
    if (past_end && stream.avail_out == 0) {
      throw Error(where + ": inflates past its declared size of " + std::to_string(output.size()) +
                  " bytes (zip bomb?)");
    }
    if (status == Z_STREAM_END) break;
    if (status == Z_BUF_ERROR && stream.avail_in == 0 && in_at == compressed.size()) {
      throw Error(where + ": deflated data ends before the stream does (truncated?)");
    }
    if (status != Z_OK && status != Z_BUF_ERROR) {
      throw Error(where + ": deflated data is corrupt (" +
                  (stream.msg ? brief_text(stream.msg) : "zlib error " + std::to_string(status)) +
                  ")");
    }
  }
  if (stream.total_out != output.size()) {
    throw Error(where + ": inflates to " + std::to_string(stream.total_out) +
                " bytes, not its declared size of " + std::to_string(output.size()));
  }
}

uint32_t crc32_of(std::span<const std::byte> bytes) {
  uLong crc = crc32(0, nullptr, 0);
  constexpr std::size_t kChunk = std::size_t{1} << 30;
  for (std::size_t at = 0; at < bytes.size(); at += kChunk) {
    const std::size_t count = std::min(kChunk, bytes.size() - at);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at), uInt(count));
  }
  return uint32_t(crc);
}

}  // namespace

ZipArchive::ZipArchive(std::span<const std::byte> bytes, std::string file)
    : bytes_(bytes), file_(std::move(file)) {
  const std::size_t size = bytes_.size();
  if (size < kEndRecordBytes) {
    throw Error(file_ + ": truncated zip archive (" + std::to_string(size) + " bytes)");
  }
  // The end record is the last 22 bytes, unless a comment of up to 64 KiB follows it: the last
  // signature whose comment ends within the file.
  const std::size_t lowest =
      size - kEndRecordBytes - std::min(size - kEndRecordBytes, kMaxCommentBytes);
  std::size_t end = size;
  for (std::size_t at = size - kEndRecordBytes; end == size; --at) {
    if (u32(bytes_, at) == kEndRecord && u16(bytes_, at + 20) <= size - kEndRecordBytes - at) {
      end = at;
    }
    if (at == lowest) break;
  }
  if (end == size) {
    throw Error(file_ + ": zip archive without an end-of-central-directory record (truncated?)");
  }
  uint64_t disk = u16(bytes_, end + 4), directory_disk = u16(bytes_, end + 6);
  uint64_t count = u16(bytes_, end + 10), directory_size = u32(bytes_, end + 12),
           directory_offset = u32(bytes_, end + 16);

  // Zip64 keeps 64-bit values in a record found through a locator right before the end record.
  // torch always writes them; other writers when a value does not fit in the fields above.
  if (end >= kZip64LocatorBytes && u32(bytes_, end - kZip64LocatorBytes) == kZip64Locator) {
    const std::size_t locator = end - kZip64LocatorBytes;
    const uint64_t record = u64(bytes_, locator + 8);
    if (u32(bytes_, locator + 4) != 0 || u32(bytes_, locator + 16) > 1) {
      throw Error(file_ + ": zip archive spans several disks, which attn does not read");
    }
    if (record > locator || locator - record < kZip64EndRecordBytes ||
        u32(bytes_, record) != kZip64EndRecord) {
      throw Error(file_ + ": zip64 end-of-central-directory record missing or misplaced");
    }
    disk = u32(bytes_, record + 16);
    directory_disk = u32(bytes_, record + 20);
    count = u64(bytes_, record + 32);
    directory_size = u64(bytes_, record + 40);
    directory_offset = u64(bytes_, record + 48);
  } else if (count == kZip64Marker16 || directory_size == kZip64Marker32 ||
             directory_offset == kZip64Marker32) {
    throw Error(file_ +
                ": zip archive needs a zip64 end-of-central-directory record, and has none");
  }
  if (disk != 0 || directory_disk != 0) {
    throw Error(file_ + ": zip archive spans several disks, which attn does not read");
  }
  read_central_directory(directory_offset, directory_size, count);
  check_overlaps();
}

void ZipArchive::read_central_directory(uint64_t offset, uint64_t size, uint64_t count) {
  if (offset > bytes_.size() || size > bytes_.size() - offset) {
    throw Error(file_ + ": zip central directory (" + std::to_string(size) + " bytes at offset " +
                std::to_string(offset) + ") runs past the end of the file (" +
                std::to_string(bytes_.size()) + " bytes; truncated?)");
  }
  if (count > size / kCentralHeaderBytes) {
    throw Error(file_ + ": zip central directory of " + std::to_string(size) +
                " bytes cannot hold the " + std::to_string(count) + " entries it claims");
  }
  const std::span<const std::byte> directory = bytes_.subspan(offset, size);
  entries_.reserve(count);
  std::size_t at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const std::string where = file_ + ": zip central directory entry " + std::to_string(i);
    if (directory.size() - at < kCentralHeaderBytes || u32(directory, at) != kCentralHeader) {
      throw Error(where + " is malformed");
    }
    const uint64_t flags = u16(directory, at + 8), method = u16(directory, at + 10);
    const uint64_t name_bytes = u16(directory, at + 28), extra_bytes = u16(directory, at + 30),
                   comment_bytes = u16(directory, at + 32);
    uint64_t disk = u16(directory, at + 34);
    if (name_bytes + extra_bytes + comment_bytes > directory.size() - at - kCentralHeaderBytes) {
      throw Error(where + " runs past the end of the central directory");
    }
    ZipEntry entry;
    entry.name = text(directory.subspan(at + kCentralHeaderBytes, name_bytes));
    entry.method = uint16_t(method);
    entry.crc32 = uint32_t(u32(directory, at + 16));
    entry.compressed_size = u32(directory, at + 20);
    entry.size = u32(directory, at + 24);
    entry.header_offset = u32(directory, at + 42);
    const std::string entry_where = file_ + ": zip entry '" + brief_text(entry.name) + "'";
    read_zip64_extra(directory.subspan(at + kCentralHeaderBytes + name_bytes, extra_bytes), entry,
                     disk, entry_where);
    at += kCentralHeaderBytes + name_bytes + extra_bytes + comment_bytes;

    if (flags & kEncryptedFlag)
      throw Error(entry_where + " is encrypted, which attn does not read");
    if (method != kStored && method != kDeflated) {
      throw Error(entry_where + " is compressed with method " + method_name(method) +
                  ", which attn does not read (only stored and deflated entries)");
    }
    if (disk != 0)
      throw Error(file_ + ": zip archive spans several disks, which attn does not read");
    locate_data(entry, entry_where);
    if (entry.stored() && entry.compressed_size != entry.size) {
      throw Error(entry_where + ": stored entry of " + std::to_string(entry.size) +
                  " bytes takes " + std::to_string(entry.compressed_size) + " in the archive");
    }
    // compressed_size is within the file, so the product cannot overflow.
    if (!entry.stored() && entry.size > entry.compressed_size * kMaxDeflateRatio) {
      throw Error(entry_where + " claims " + std::to_string(entry.size) + " bytes from " +
                  std::to_string(entry.compressed_size) +
                  " deflated bytes, more than deflate can produce (zip bomb?)");
    }
    if (!by_name_.emplace(entry.name, entries_.size()).second) {
      throw Error(entry_where + " appears twice in the archive");
    }
    entries_.push_back(std::move(entry));
  }
}

void ZipArchive::locate_data(ZipEntry& entry, const std::string& where) const {
  const uint64_t header = entry.header_offset;
  if (header > bytes_.size() || bytes_.size() - header < kLocalHeaderBytes ||
      u32(bytes_, header) != kLocalHeader) {
    throw Error(where + ": no local header at offset " + std::to_string(header) +
                " (truncated or corrupt archive?)");
  }
  const uint64_t name_bytes = u16(bytes_, header + 26), extra_bytes = u16(bytes_, header + 28);
  // At most 2 * 64 KiB past a header that lies within the file: no overflow.
  const uint64_t data = header + kLocalHeaderBytes + name_bytes + extra_bytes;
  if (data > bytes_.size() || entry.compressed_size > bytes_.size() - data) {
    throw Error(where + ": its " + std::to_string(entry.compressed_size) + " bytes at offset " +
                std::to_string(data) + " run past the end of the file (" +
                std::to_string(bytes_.size()) + " bytes; truncated?)");
  }
  if (text(bytes_.subspan(header + kLocalHeaderBytes, name_bytes)) != entry.name) {
    throw Error(where + ": its local header gives another name");
  }
  entry.data_offset = data;
}

// Entries that share bytes would let a small archive claim many times its size.
void ZipArchive::check_overlaps() const {
  std::vector<std::size_t> order(entries_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return entries_[a].header_offset < entries_[b].header_offset;
  });
  for (std::size_t i = 1; i < order.size(); ++i) {
    const ZipEntry& before = entries_[order[i - 1]];
    const ZipEntry& after = entries_[order[i]];
    if (before.data_offset + before.compressed_size > after.header_offset) {
      throw Error(file_ + ": zip entries '" + brief_text(before.name) + "' and '" +
                  brief_text(after.name) + "' overlap");
    }
  }
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

std::span<const std::byte> ZipArchive::contents(const ZipEntry& entry) {
  if (entry.stored()) return raw_bytes(entry);
  const std::size_t index = std::size_t(&entry - entries_.data());
  if (const auto it = inflated_.find(index); it != inflated_.end()) return it->second;

  const std::string where = file_ + ": zip entry '" + brief_text(entry.name) + "'";
  std::vector<std::byte> output;
  try {
    output.resize(entry.size);  // at most 1032 times the compressed bytes (checked when opened)
  } catch (const std::bad_alloc&) {
    throw Error(where + ": cannot allocate the " + std::to_string(entry.size) +
                " bytes it inflates to");
  }
  inflate_exactly(raw_bytes(entry), output, where);
  if (crc32_of(output) != entry.crc32) {
    throw Error(where + ": CRC-32 of the inflated bytes does not match the archive's (corrupt?)");
  }
  return inflated_.emplace(index, std::move(output)).first->second;
}

}  // namespace attn
