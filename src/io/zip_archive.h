#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// One file in a zip archive, as its central directory describes it.
struct ZipEntry {
  std::string name;
  uint16_t method = 0;           // 0: stored as is; 8: deflated
  uint32_t crc32 = 0;            // of the uncompressed bytes
  uint64_t compressed_size = 0;  // bytes in the archive
  uint64_t size = 0;             // bytes once uncompressed
  uint64_t header_offset = 0;    // where the entry's local header starts in the archive
  uint64_t data_offset = 0;      // where its (compressed) bytes start, after the local header

  bool stored() const { return method == 0; }
};

// A zip archive held in memory (torch.save's format: a memory-mapped pytorch_model.bin), read
// as far as its central directory when constructed, with every offset and size checked against
// the archive: the end-of-central-directory record (zip64's too, as torch writes it), each entry
// and its local header inside the archive, names unique, entries not overlapping, only stored or
// deflated entries, none encrypted, and a deflated entry's size no more than deflate can produce
// from its compressed bytes (1032:1). Errors are attn::Error of one line starting "<file>: ".
class ZipArchive {
 public:
  // `bytes` must stay valid for the archive's life; `file` names it in errors.
  ZipArchive(std::span<const std::byte> bytes, std::string file);
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  const std::vector<ZipEntry>& entries() const { return entries_; }
  // The entry called `name`, or null.
  const ZipEntry* find(std::string_view name) const;

  // The entry's bytes as the archive holds them: for a stored entry, its contents, in place.
  std::span<const std::byte> raw_bytes(const ZipEntry& entry) const {
    return bytes_.subspan(entry.data_offset, entry.compressed_size);
  }
  // The entry's contents: in place for a stored entry; for a deflated one, inflated into a copy
  // the first time (which must give exactly `size` bytes with the right CRC-32) and kept. A copy
  // is aligned for any scalar type.
  std::span<const std::byte> contents(const ZipEntry& entry);

 private:
  void read_central_directory(uint64_t offset, uint64_t size, uint64_t count);
  void locate_data(ZipEntry& entry, const std::string& where) const;
  void check_overlaps() const;

  std::span<const std::byte> bytes_;
  std::string file_;
  std::vector<ZipEntry> entries_;
  std::map<std::string, std::size_t, std::less<>> by_name_;  // index into entries_
  std::map<std::size_t, std::vector<std::byte>> inflated_;   // by index into entries_
};

}  // namespace attn
