// A small reader of LevelDB's table format (footer, metaindex); see
// table_layout.h. Written from the documented format (doc/table_format.md of
// LevelDB), not from LevelDB's code.
#include "table_layout.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <snappy.h>

namespace shale_leveldb {

namespace {

// The footer's last 8 bytes, little-endian.
constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ULL;

// The metaindex key of the Bloom filter of NewBloomFilterPolicy.
const char kFilterKey[] = "filter.leveldb.BuiltinBloomFilter2";

[[noreturn]] void bad(const std::string& name, const std::string& what) {
  throw std::runtime_error(name + ": not a LevelDB table as expected: " + what);
}

std::string pread_exact(int fd, uint64_t offset, size_t n, const std::string& name) {
  std::string buf(n, '\0');
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, &buf[done], n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw std::runtime_error(name + ": read: " + std::strerror(errno));
    if (r == 0) bad(name, "short read");
    done += static_cast<size_t>(r);
  }
  return buf;
}

// Decodes a varint (7 bits per byte, low groups first) at *pos of s.
bool get_varint(const std::string& s, size_t* pos, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift <= 63 && *pos < s.size(); shift += 7) {
    uint8_t b = static_cast<uint8_t>(s[(*pos)++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

bool get_handle(const std::string& s, size_t* pos, BlockHandle* h) {
  h->present = get_varint(s, pos, &h->offset) && get_varint(s, pos, &h->size);
  return h->present;
}

uint32_t le32(const std::string& s, size_t pos) {
  uint32_t v = 0;
  for (int k = 3; k >= 0; k--) v = (v << 8) | static_cast<uint8_t>(s[pos + k]);
  return v;
}

// Finds the filter handle among the metaindex block's entries. A block is a
// run of entries (shared key bytes, unshared key bytes, value length as
// varints, then the unshared key bytes and the value), followed by the
// restart offsets (u32 each) and their count (u32).
BlockHandle find_filter(const std::string& block, const std::string& name) {
  if (block.size() < 4) bad(name, "metaindex block too short");
  uint64_t restarts = le32(block, block.size() - 4);
  if (restarts * 4 + 4 > block.size()) bad(name, "metaindex restarts out of range");
  size_t end = block.size() - 4 - 4 * restarts;
  size_t pos = 0;
  std::string key;
  while (pos < end) {
    uint64_t shared, unshared, vlen;
    if (!get_varint(block, &pos, &shared) || !get_varint(block, &pos, &unshared) ||
        !get_varint(block, &pos, &vlen) || shared > key.size() || pos + unshared + vlen > end)
      bad(name, "corrupt metaindex entry");
    key = key.substr(0, shared) + block.substr(pos, unshared);
    pos += unshared;
    std::string value = block.substr(pos, vlen);
    pos += vlen;
    if (key == kFilterKey) {
      BlockHandle h;
      size_t vpos = 0;
      if (!get_handle(value, &vpos, &h)) bad(name, "corrupt filter handle");
      return h;
    }
  }
  return BlockHandle{};  // a table written without a filter policy
}

}  // namespace

TableLayout::Kind TableLayout::kind_of_read(uint64_t offset) const {
  if (offset + kFooterSize == file_size) return Kind::Footer;
  if (offset == metaindex.offset) return Kind::Metaindex;
  if (offset == index.offset) return Kind::Index;
  if (filter.present && offset == filter.offset) return Kind::Filter;
  return Kind::Data;
}

TableLayout read_table_layout(int fd, uint64_t file_size, const std::string& name) {
  TableLayout t;
  t.file_size = file_size;
  if (file_size < TableLayout::kFooterSize) bad(name, "shorter than a footer");
  std::string footer = pread_exact(fd, file_size - TableLayout::kFooterSize, TableLayout::kFooterSize, name);
  uint64_t magic = uint64_t{le32(footer, 40)} | (uint64_t{le32(footer, 44)} << 32);
  if (magic != kTableMagic) bad(name, "bad magic number");
  size_t pos = 0;
  if (!get_handle(footer, &pos, &t.metaindex) || !get_handle(footer, &pos, &t.index))
    bad(name, "corrupt footer");
  if (t.metaindex.offset + t.metaindex.size + TableLayout::kTrailerSize > file_size ||
      t.index.offset + t.index.size + TableLayout::kTrailerSize > file_size)
    bad(name, "block handle beyond the end of the file");

  // The metaindex block, uncompressed if its trailer says Snappy (type 1).
  std::string raw = pread_exact(fd, t.metaindex.offset, t.metaindex.size + TableLayout::kTrailerSize, name);
  uint8_t type = static_cast<uint8_t>(raw[t.metaindex.size]);
  raw.resize(t.metaindex.size);
  std::string block;
  if (type == 0) {
    block = std::move(raw);
  } else if (type == 1) {
    if (!snappy::Uncompress(raw.data(), raw.size(), &block)) bad(name, "corrupt Snappy metaindex");
  } else {
    bad(name, "unknown block compression type " + std::to_string(type));
  }
  t.filter = find_filter(block, name);
  return t;
}

TableLayout read_table_layout(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw std::runtime_error(path + ": stat: " + std::strerror(e));
  }
  try {
    TableLayout t = read_table_layout(fd, static_cast<uint64_t>(st.st_size), path);
    ::close(fd);
    return t;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

}  // namespace shale_leveldb
