// Minimal NumPy .npy / .npz support (no Python needed) and the small file helpers the file
// formats share. Little-endian, C-order arrays of plain numbers only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "normcore/bn_params.hpp"          // normcore::Error
#include "normcore/util/atomic_write.hpp"  // write_file_atomic

namespace normcore {

// One decoded array. `dtype` is the NumPy descriptor as found ("<f4", "|i1", ...). as_double is
// always filled; as_int only for integer and bool dtypes (exact for every value).
struct NpyArray {
  std::vector<std::size_t> shape;  // empty = 0-d (one element)
  std::string dtype;
  std::vector<double> as_double;
  std::vector<std::int64_t> as_int;

  [[nodiscard]] std::size_t size() const { return as_double.size(); }
  // Integer or bool dtype (as_int holds the exact values).
  [[nodiscard]] bool is_integer() const;
};

// Decodes a whole .npy image (format v1, v2 or v3). Supported dtypes: <f4 <f8 |i1 |u1 |b1 <i2
// <u2 <i4 <u4 <i8 ('|' or '<' accepted for one-byte types). Rejects big-endian, structured and
// object dtypes and fortran_order True. `name` prefixes error messages.
NpyArray parse_npy(std::span<const std::uint8_t> bytes, std::string_view name);
NpyArray read_npy(const std::filesystem::path& path);

// The header of a .npy image, checked as parse_npy checks it (data size included), without
// decoding the data: the raw little-endian elements are bytes[data_offset, + count * item_size).
struct NpyHeader {
  std::vector<std::size_t> shape;
  std::string dtype;  // the descriptor as found ("<f4", "|i1", ...)
  char kind = 'f';    // f, i, u, b
  int item_size = 4;  // bytes per element
  std::size_t count = 0;
  std::size_t data_offset = 0;
};
NpyHeader parse_npy_header(std::span<const std::uint8_t> bytes, std::string_view name);

// A .npy file mapped read-only (mmap; a file that cannot be mapped, e.g. a pipe, is read into
// memory once). data() is the array's raw elements in place: nothing is copied or converted.
class MappedNpy {
 public:
  static MappedNpy open(const std::filesystem::path& path);  // Error naming the file
  MappedNpy(MappedNpy&& o) noexcept;
  MappedNpy& operator=(MappedNpy&& o) noexcept;
  MappedNpy(const MappedNpy&) = delete;
  MappedNpy& operator=(const MappedNpy&) = delete;
  ~MappedNpy();
  [[nodiscard]] const NpyHeader& header() const { return header_; }
  [[nodiscard]] std::span<const std::uint8_t> data() const;

 private:
  MappedNpy() = default;
  const std::uint8_t* base_ = nullptr;  // the mapping (or bytes_.data())
  std::size_t size_ = 0;
  bool mapped_ = false;
  std::vector<std::uint8_t> bytes_;  // the file's bytes when it could not be mapped
  NpyHeader header_;
};

// A .npy file image built in one buffer: the header (64-byte aligned, as encode_npy writes it)
// followed by room for the raw elements, which the caller fills in place through data() (aligned
// for any element type) before writing bytes() out with write_file_atomic.
class NpyImage {
 public:
  NpyImage(std::span<const std::size_t> shape, std::string_view dtype);
  [[nodiscard]] std::span<std::uint8_t> data() { return std::span(bytes_).subspan(header_); }
  [[nodiscard]] std::span<const std::uint8_t> bytes() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::size_t header_ = 0;
};
// The header encode_npy writes for `shape` and `dtype` (a name or descriptor, as encode_npy).
std::vector<std::uint8_t> encode_npy_header(std::span<const std::size_t> shape,
                                            std::string_view dtype);
// Bytes per element of a writable dtype; the element count of a shape (Error on overflow).
std::size_t npy_item_size(std::string_view dtype);
std::size_t npy_element_count(std::span<const std::size_t> shape, std::string_view name);

// Encodes a .npy (v1 header, 64-byte aligned, or v2 if the header is huge). `dtype` is a NumPy
// descriptor or a name: int8 uint8 int16 uint16 int32 uint32 int64 float32 float64. Integer data
// must fit the dtype (Error naming the index); the double overload rejects non-integral values
// for integer dtypes. data.size() must equal the product of shape.
std::vector<std::uint8_t> encode_npy(std::span<const std::size_t> shape, std::string_view dtype,
                                     std::span<const std::int64_t> data);
std::vector<std::uint8_t> encode_npy(std::span<const std::size_t> shape, std::string_view dtype,
                                     std::span<const double> data);
// encode_npy + write_file_atomic.
void write_npy(const std::filesystem::path& path, std::span<const std::size_t> shape,
               std::string_view dtype, std::span<const std::int64_t> data);
void write_npy(const std::filesystem::path& path, std::span<const std::size_t> shape,
               std::string_view dtype, std::span<const double> data);

// Which members of an archive to read (by member name); an empty filter reads every member.
using MemberFilter = std::function<bool(const std::string& member)>;

// The members of a ZIP archive that `wanted` accepts (central directory; stored and deflate
// entries; CRC checked). Members not wanted are never decompressed; a size in the directory that
// its compressed data cannot have is refused before allocating. ZIP64 archives are rejected;
// NumPy's ZIP64 *local* headers on small members, and the redundant ZIP64 end record that
// torch.export.save writes beside a complete classic one, are fine.
std::map<std::string, std::vector<std::uint8_t>> read_zip(std::span<const std::uint8_t> bytes,
                                                          std::string_view name,
                                                          const MemberFilter& wanted = {});

// A ZIP archive whose central directory is read (and checked) once; a member's data is located,
// decompressed and CRC-checked only when read() asks for it, so members nobody asks for are
// never inflated. Sizes in the directory that the compressed data cannot have are refused
// before anything is allocated. Errors name the archive and the member.
class ZipArchive {
 public:
  ZipArchive(std::vector<std::uint8_t> bytes, std::string name);
  ZipArchive(ZipArchive&&) noexcept;
  ZipArchive& operator=(ZipArchive&&) noexcept;
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;
  ~ZipArchive();
  // Member names in directory order (directory entries left out).
  [[nodiscard]] std::vector<std::string> members() const;
  // The member's data (Error naming it if it is not in the archive, or is corrupt).
  [[nodiscard]] std::vector<std::uint8_t> read(const std::string& member) const;
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  struct Entries;
  std::vector<std::uint8_t> bytes_;
  std::string name_;
  std::unique_ptr<Entries> entries_;
};

// The arrays of an .npz, keyed by member name without ".npy"; members not ending in .npy, and
// those whose key `wanted_key` rejects, are skipped without being decompressed. Errors name the
// file and the member.
std::map<std::string, NpyArray> read_npz(const std::filesystem::path& path,
                                         const MemberFilter& wanted_key = {});

// Whole-file read; Error naming the file if it cannot be opened or read.
std::vector<std::uint8_t> read_file_bytes(const std::filesystem::path& path);

}  // namespace normcore
