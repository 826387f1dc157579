// Where the blocks of a LevelDB table file are, read from its footer and
// metaindex block by this harness itself (LevelDB exposes no per-table block
// sizes). A LevelDB table is laid out as
//
//   data blocks | filter block | metaindex block | index block | footer
//
// where each block is followed by a 5-byte trailer (compression type, CRC),
// and the 48-byte footer holds two BlockHandles (varint64 offset and size:
// metaindex, then index), padding and the magic number. The metaindex block
// maps "filter.<policy name>" to the filter block's handle.
#pragma once

#include <cstdint>
#include <string>

namespace shale_leveldb {

struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;  // without the 5-byte trailer
  bool present = false;
};

struct TableLayout {
  uint64_t file_size = 0;
  BlockHandle metaindex, index, filter;

  static constexpr uint64_t kFooterSize = 48;
  static constexpr uint64_t kTrailerSize = 5;

  // What a read at `offset` fetches. LevelDB reads each block with one Read
  // at the block's offset, and the footer with one Read of its 48 bytes.
  enum class Kind { Footer, Metaindex, Index, Filter, Data };
  Kind kind_of_read(uint64_t offset) const;

  // Bytes of data blocks (with their trailers): everything before the first
  // meta block.
  uint64_t data_bytes() const { return filter.present ? filter.offset : metaindex.offset; }
};

// Reads the layout of the table file open as `fd`, of `file_size` bytes.
// Throws std::runtime_error (naming `name`) if it is not a LevelDB table.
TableLayout read_table_layout(int fd, uint64_t file_size, const std::string& name);

// The same, opening the file at `path`.
TableLayout read_table_layout(const std::string& path);

}  // namespace shale_leveldb
