// .npy files without per-element decoding: MappedNpy (the input mapped read-only, elements used
// in place) and NpyImage (the output built in one buffer, header then elements).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "normcore/npz.hpp"

namespace normcore {

MappedNpy MappedNpy::open(const std::filesystem::path& path) {
  const std::string who = path.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(who + ": cannot open for reading: " + std::strerror(errno));
  struct stat st {};
  MappedNpy m;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    m.size_ = static_cast<std::size_t>(st.st_size);
    void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p != MAP_FAILED) {
      m.base_ = static_cast<const std::uint8_t*>(p);
      m.mapped_ = true;
    }
  }
  ::close(fd);
  if (!m.mapped_) {  // a pipe, an empty file, or a file system without mmap: one read
    m.bytes_ = read_file_bytes(path);
    m.base_ = m.bytes_.data();
    m.size_ = m.bytes_.size();
  }
  m.header_ = parse_npy_header(std::span(m.base_, m.size_), who);
  return m;
}

MappedNpy::MappedNpy(MappedNpy&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      mapped_(std::exchange(o.mapped_, false)),
      bytes_(std::move(o.bytes_)),
      header_(std::move(o.header_)) {
  if (!mapped_) base_ = bytes_.data();
}

MappedNpy& MappedNpy::operator=(MappedNpy&& o) noexcept {
  if (this != &o) {
    if (mapped_) ::munmap(const_cast<std::uint8_t*>(base_), size_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapped_ = std::exchange(o.mapped_, false);
    bytes_ = std::move(o.bytes_);
    header_ = std::move(o.header_);
    if (!mapped_) base_ = bytes_.data();
  }
  return *this;
}

MappedNpy::~MappedNpy() {
  if (mapped_) ::munmap(const_cast<std::uint8_t*>(base_), size_);
}

std::span<const std::uint8_t> MappedNpy::data() const {
  return std::span(base_ + header_.data_offset,
                   header_.count * static_cast<std::size_t>(header_.item_size));
}

NpyImage::NpyImage(std::span<const std::size_t> shape, std::string_view dtype) {
  bytes_ = encode_npy_header(shape, dtype);
  header_ = bytes_.size();  // a multiple of 64: data() is aligned as the allocation is
  const std::size_t count = npy_element_count(shape, "NpyImage");
  const std::size_t item = npy_item_size(dtype);
  if (count > (SIZE_MAX - header_) / item) throw Error("NpyImage: the array is too large");
  bytes_.resize(header_ + count * item);
}

}  // namespace normcore
