// ZIP archives (the container of .npz): read_zip (npz.hpp).
#define ZLIB_CONST
#include <zlib.h>

#include <algorithm>
#include <optional>
#include <set>

#include "byte_order.hpp"
#include "normcore/bn_params.hpp"  // Error
#include "normcore/npz.hpp"

namespace normcore {

using byte_order::le16;
using byte_order::le32;

namespace {

constexpr std::uint32_t kLocalSig = 0x04034b50;
constexpr std::uint32_t kCentralSig = 0x02014b50;
constexpr std::uint32_t kEndSig = 0x06054b50;
constexpr std::uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::size_t kEndSize = 22;
constexpr std::size_t kCentralSize = 46;
constexpr std::size_t kLocalSize = 30;

// RAII raw-inflate stream.
class Inflater {
 public:
  Inflater() { ok_ = inflateInit2(&zs_, -MAX_WBITS) == Z_OK; }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  ~Inflater() {
    if (ok_) inflateEnd(&zs_);
  }
  [[nodiscard]] bool ok() const { return ok_; }
  z_stream& stream() { return zs_; }

 private:
  z_stream zs_{};
  bool ok_ = false;
};

std::vector<std::uint8_t> inflate_raw(std::span<const std::uint8_t> in, std::size_t out_size,
                                      const std::string& who) {
  Inflater inf;
  if (!inf.ok()) throw Error(who + ": zlib inflateInit2 failed");
  std::vector<std::uint8_t> out(std::max<std::size_t>(out_size, 1));
  z_stream& zs = inf.stream();
  zs.next_in = in.data();
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  const int ret = inflate(&zs, Z_FINISH);
  if (ret == Z_STREAM_END && zs.total_out == out_size) {
    out.resize(out_size);
    return out;
  }
  if (ret == Z_STREAM_END) {
    throw Error(who + ": corrupt: inflates to " + std::to_string(zs.total_out) +
                " bytes, the directory says " + std::to_string(out_size));
  }
  if (ret == Z_BUF_ERROR && zs.avail_in == 0) {
    throw Error(who + ": truncated deflate data (stream ends early)");
  }
  if (ret == Z_BUF_ERROR || ret == Z_OK) {
    throw Error(who + ": corrupt: inflates to more than the " + std::to_string(out_size) +
                " bytes the directory says");
  }
  const std::string detail = zs.msg ? zs.msg : "zlib error " + std::to_string(ret);
  throw Error(who + ": corrupt deflate data (" + detail + ")");
}

std::uint32_t crc_of(std::span<const std::uint8_t> data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  constexpr std::size_t kChunk = 1u << 30;
  for (std::size_t at = 0; at < data.size(); at += kChunk) {
    const std::size_t n = std::min(kChunk, data.size() - at);
    crc = crc32(crc, data.data() + at, static_cast<uInt>(n));
  }
  return static_cast<std::uint32_t>(crc);
}

// The end-of-central-directory record: where the directory is and how many entries it has.
struct Directory {
  std::size_t offset = 0, end = 0;
  unsigned entries = 0;
};

Directory find_directory(std::span<const std::uint8_t> bytes, const std::string& who) {
  if (bytes.size() < kEndSize) {
    throw Error(who + ": truncated: " + std::to_string(bytes.size()) +
                " bytes is too short for a ZIP archive");
  }
  // The end-of-central-directory record: the last 22 bytes plus a comment of up to 64 KiB.
  std::optional<std::size_t> end_at;
  const std::size_t last = bytes.size() - kEndSize;
  const std::size_t first = last > 65535 ? last - 65535 : 0;
  for (std::size_t p = last + 1; p-- > first;) {
    if (le32(bytes, p) == kEndSig && p + kEndSize + le16(bytes, p + 20) <= bytes.size()) {
      end_at = p;
      break;
    }
  }
  if (!end_at) {
    throw Error(who + ": not a ZIP archive or truncated (no end-of-central-directory record)");
  }
  const std::size_t e = *end_at;
  // A ZIP64 end record whose classic record still holds every value (torch.export.save writes
  // one into small archives) is redundant: the classic values are used. Saturated classic
  // fields (a real ZIP64 archive) are refused below.
  const bool zip64_locator = e >= 20 && le32(bytes, e - 20) == kZip64LocatorSig;
  const std::uint16_t disk = le16(bytes, e + 4), cd_disk = le16(bytes, e + 6);
  const std::uint16_t entries_here = le16(bytes, e + 8), entries = le16(bytes, e + 10);
  const std::uint32_t cd_size = le32(bytes, e + 12), cd_offset = le32(bytes, e + 16);
  if (entries == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_offset == 0xFFFFFFFFu ||
      (zip64_locator && (disk == 0xFFFF || cd_disk == 0xFFFF || entries_here == 0xFFFF))) {
    throw Error(who + ": ZIP64 archives are not supported");
  }
  if (disk != 0 || cd_disk != 0 || entries_here != entries) {
    throw Error(who + ": multi-disk ZIP archives are not supported");
  }
  if (std::size_t{cd_offset} + cd_size > e) {
    throw Error(who + ": truncated or corrupt: central directory (" + std::to_string(cd_size) +
                " bytes at offset " + std::to_string(cd_offset) + ") lies outside the file");
  }
  return Directory{cd_offset, std::size_t{cd_offset} + cd_size, entries};
}

// One central directory entry.
struct Entry {
  std::string member;
  std::uint16_t flags = 0, method = 0;
  std::uint32_t crc = 0, csize = 0, usize = 0, local = 0;
};

// The entry at p (advanced past it).
Entry read_entry(std::span<const std::uint8_t> bytes, std::size_t& p, const Directory& dir,
                 unsigned i, const std::string& who) {
  if (p + kCentralSize > dir.end || le32(bytes, p) != kCentralSig) {
    throw Error(who + ": corrupt: central directory entry " + std::to_string(i) + " is damaged");
  }
  Entry en;
  en.flags = le16(bytes, p + 8);
  en.method = le16(bytes, p + 10);
  en.crc = le32(bytes, p + 16);
  en.csize = le32(bytes, p + 20);
  en.usize = le32(bytes, p + 24);
  const std::uint16_t nlen = le16(bytes, p + 28), xlen = le16(bytes, p + 30),
                      clen = le16(bytes, p + 32);
  en.local = le32(bytes, p + 42);
  if (p + kCentralSize + nlen + xlen + clen > dir.end) {
    throw Error(who + ": corrupt: central directory entry " + std::to_string(i) +
                " runs past the directory");
  }
  en.member.assign(reinterpret_cast<const char*>(bytes.data() + p + kCentralSize), nlen);
  p += kCentralSize + nlen + xlen + clen;
  return en;
}

// The member's data: located through its local header, stored or inflated, CRC checked.
std::vector<std::uint8_t> member_data(std::span<const std::uint8_t> bytes, const Entry& en,
                                      const std::string& mwho) {
  if (std::size_t{en.local} + kLocalSize > bytes.size() || le32(bytes, en.local) != kLocalSig) {
    throw Error(mwho + ": corrupt or truncated: no local header at offset " +
                std::to_string(en.local));
  }
  const std::size_t data_at =
      std::size_t{en.local} + kLocalSize + le16(bytes, en.local + 26) + le16(bytes, en.local + 28);
  if (data_at > bytes.size() || bytes.size() - data_at < en.csize) {
    throw Error(mwho + ": truncated: " + std::to_string(en.csize) +
                " bytes of data run past the end of the file");
  }
  const auto raw = bytes.subspan(data_at, en.csize);
  std::vector<std::uint8_t> data;
  if (en.method == 0) {
    if (en.csize != en.usize) {
      throw Error(mwho + ": corrupt: stored member has compressed size " +
                  std::to_string(en.csize) + " != size " + std::to_string(en.usize));
    }
    data.assign(raw.begin(), raw.end());
  } else if (en.method == 8) {
    // Deflate expands at most 1032:1: a larger size in the directory is corrupt, and is refused
    // before its buffer is allocated.
    if (std::uint64_t{en.usize} > std::uint64_t{en.csize} * 1032 + 64) {
      throw Error(mwho + ": corrupt: " + std::to_string(en.csize) +
                  " compressed bytes cannot inflate to the " + std::to_string(en.usize) +
                  " bytes the directory says");
    }
    data = inflate_raw(raw, en.usize, mwho);
  } else {
    throw Error(mwho + ": compression method " + std::to_string(en.method) +
                " is not supported (only stored and deflate)");
  }
  if (crc_of(data) != en.crc) throw Error(mwho + ": corrupt: CRC-32 mismatch");
  return data;
}

// Every member's directory entry (directories left out), checked but not decompressed.
std::vector<Entry> list_entries(std::span<const std::uint8_t> bytes, const std::string& who) {
  const Directory dir = find_directory(bytes, who);
  std::vector<Entry> out;
  std::set<std::string> seen;
  std::size_t p = dir.offset;
  for (unsigned i = 0; i < dir.entries; ++i) {
    Entry en = read_entry(bytes, p, dir, i, who);
    const std::string mwho = who + ": member '" + en.member + "'";
    // NumPy writes ZIP64 extra fields into the *local* headers of small members; only sizes or
    // offsets that really need 64 bits (0xFFFFFFFF here) make the archive unsupported.
    if (en.csize == 0xFFFFFFFFu || en.usize == 0xFFFFFFFFu || en.local == 0xFFFFFFFFu) {
      throw Error(mwho + ": ZIP64 members (4 GiB or more) are not supported");
    }
    if (en.flags & 1u) throw Error(mwho + ": encrypted members are not supported");
    if (!en.member.empty() && en.member.back() == '/') continue;  // a directory
    if (!seen.insert(en.member).second) throw Error(mwho + ": appears twice in the archive");
    out.push_back(std::move(en));
  }
  return out;
}

}  // namespace

struct ZipArchive::Entries {
  std::vector<Entry> list;
};

ZipArchive::ZipArchive(std::vector<std::uint8_t> bytes, std::string name)
    : bytes_(std::move(bytes)), name_(std::move(name)), entries_(std::make_unique<Entries>()) {
  entries_->list = list_entries(bytes_, name_);
}
ZipArchive::ZipArchive(ZipArchive&&) noexcept = default;
ZipArchive& ZipArchive::operator=(ZipArchive&&) noexcept = default;
ZipArchive::~ZipArchive() = default;

std::vector<std::string> ZipArchive::members() const {
  std::vector<std::string> out;
  for (const auto& e : entries_->list) out.push_back(e.member);
  return out;
}

std::vector<std::uint8_t> ZipArchive::read(const std::string& member) const {
  for (const auto& e : entries_->list) {
    if (e.member == member) return member_data(bytes_, e, name_ + ": member '" + member + "'");
  }
  throw Error(name_ + ": no member '" + member + "'");
}

std::map<std::string, std::vector<std::uint8_t>> read_zip(std::span<const std::uint8_t> bytes,
                                                          std::string_view name,
                                                          const MemberFilter& wanted) {
  const std::string who(name);
  std::map<std::string, std::vector<std::uint8_t>> members;
  for (const auto& en : list_entries(bytes, who)) {
    if (wanted && !wanted(en.member)) continue;  // never decompressed
    members.emplace(en.member, member_data(bytes, en, who + ": member '" + en.member + "'"));
  }
  return members;
}

}  // namespace normcore
