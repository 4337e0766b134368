#include "src/io/npy.h"

#include <bit>
#include <stdexcept>

namespace attn {

// The values are written as they are in memory, which is the file's little-endian float32.
static_assert(std::endian::native == std::endian::little, "the .npy writer assumes little-endian");

std::string npy_header(std::size_t rows, std::size_t columns) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) +
                     ", " + std::to_string(columns) + "), }";
  // Magic (6 bytes), version (2), header length (2), then the dict padded with spaces and ended
  // by a newline so that the data starts at a multiple of 64 bytes, as numpy writes it.
  constexpr std::size_t kPrefixBytes = 10;
  constexpr std::size_t kAlignment = 64;
  const std::size_t unpadded = kPrefixBytes + dict.size() + 1;
  dict.append((kAlignment - unpadded % kAlignment) % kAlignment, ' ');
  dict += '\n';
  const std::size_t length = dict.size();  // at most a few hundred bytes: fits 16 bits
  std::string header = "\x93NUMPY";
  header += '\x01';
  header += '\x00';
  header += char(length & 0xFF);
  header += char(length >> 8);
  return header + dict;
}

NpyMatrixWriter::NpyMatrixWriter(OutputFile& out, std::size_t rows, std::size_t columns)
    : out_(out), rows_(rows), columns_(columns) {
  out_.write(npy_header(rows, columns));
}

void NpyMatrixWriter::write_row(std::span<const float> row) {
  if (row.size() != columns_ || rows_written_ == rows_) {
    throw std::logic_error("npy: a row that does not fit the announced shape");
  }
  out_.write(std::string_view(reinterpret_cast<const char*>(row.data()), row.size_bytes()));
  ++rows_written_;
}

void NpyMatrixWriter::finish() const {
  if (rows_written_ != rows_) throw std::logic_error("npy: fewer rows than announced");
}

}  // namespace attn
