#include "normcore/util/atomic_write.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <system_error>

#include "normcore/bn_params.hpp"  // normcore::Error

namespace normcore {

namespace fs = std::filesystem;

namespace {

// Removes a path (file or tree) at scope exit unless released.
class TempPath {
 public:
  explicit TempPath(fs::path p) : path_(std::move(p)) {}
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  ~TempPath() {
    if (armed_) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  [[nodiscard]] const fs::path& path() const { return path_; }
  void release() { armed_ = false; }

 private:
  fs::path path_;
  bool armed_ = true;
};

void write_bytes(const fs::path& path, const char* data, std::size_t size, const fs::path& shown) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(shown.string() + ": cannot create " + path.string());
  out.write(data, static_cast<std::streamsize>(size));
  out.close();
  if (!out) throw Error(shown.string() + ": write to " + path.string() + " failed");
}

// The file a path finally names: symbolic links followed (relative ones from their directory),
// so the link itself stays a link. A dangling link names its (missing) target.
fs::path follow_links(const fs::path& path) {
  fs::path p = path;
  for (int hops = 0;; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
    if (hops == 40) throw Error(path.string() + ": too many levels of symbolic links");
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) throw Error(path.string() + ": cannot read the symbolic link: " + ec.message());
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
}

void write_stdout(const char* data, std::size_t size) {
  if (size != 0 && std::fwrite(data, 1, size, stdout) != size) {
    throw Error("-: write to standard output failed");
  }
  if (std::fflush(stdout) != 0) throw Error("-: write to standard output failed");
}

// Throws unless every directory of the tree at `dir` (and its parent) lets us remove entries,
// so replacing it cannot stop half-way with the old tree partly deleted.
void check_removable(const fs::path& dir) {
  auto check = [&](const fs::path& d) {
    if (::access(d.c_str(), W_OK | X_OK) != 0) {
      throw Error(dir.string() + ": not replaced: " + d.string() +
                  " is not writable (its entries could not be removed)");
    }
  };
  check(dir.parent_path());
  check(dir);
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) check(it->path());
  }
  if (ec) throw Error(dir.string() + ": not replaced: cannot read it: " + ec.message());
}

// "out/" -> "out", "." -> the absolute current directory, "a/../b" -> "b".
fs::path normal_dir(const fs::path& dir) {
  if (dir.empty()) throw Error("output directory: empty path");
  fs::path p = fs::absolute(dir).lexically_normal();
  while (p.has_parent_path() && p.filename().empty()) p = p.parent_path();
  if (p == p.root_path()) throw Error(dir.string() + ": cannot replace the root directory");
  return p;
}

void check_names(const fs::path& dir, const std::vector<DirFile>& files) {
  for (const auto& f : files) {
    const fs::path rel = fs::path(f.name).lexically_normal();
    if (rel.empty() || rel.is_absolute() || *rel.begin() == "..") {
      throw Error(dir.string() + ": bad output file name '" + f.name + "'");
    }
  }
}

void check_replaceable(const fs::path& dir, const ReplaceCheck& may_replace) {
  std::error_code ec;
  const auto st = fs::symlink_status(dir, ec);
  if (ec || !fs::exists(st)) return;
  if (!fs::is_directory(st)) throw Error(dir.string() + ": exists and is not a directory");
  if (fs::is_empty(dir, ec)) return;
  const std::string why = may_replace ? may_replace(dir) : "it is not empty";
  if (!why.empty()) throw Error(dir.string() + ": not replaced: " + why);
  check_removable(dir);
}

void build_tree(const fs::path& tmp, const fs::path& dir, const std::vector<DirFile>& files) {
  std::error_code ec;
  if (!fs::create_directory(tmp, ec) || ec) {
    throw Error(dir.string() + ": cannot create " + tmp.string() + ": " + ec.message());
  }
  for (const auto& f : files) {
    const fs::path p = tmp / fs::path(f.name).lexically_normal();
    fs::create_directories(p.parent_path(), ec);
    if (ec) throw Error(dir.string() + ": cannot create " + p.parent_path().string());
    write_bytes(p, f.content.data(), f.content.size(), dir);
  }
}

// Moves `tmp` to `dir`, the old `dir` (if any) aside first and back again if that fails.
void swap_in(const fs::path& tmp, const fs::path& dir, const fs::path& old) {
  std::error_code ec;
  const bool had_old = fs::exists(fs::symlink_status(dir, ec));
  if (had_old) {
    fs::rename(dir, old, ec);
    if (ec) throw Error(dir.string() + ": cannot move the old directory aside: " + ec.message());
  }
  fs::rename(tmp, dir, ec);
  if (ec) {
    const std::string msg = ec.message();
    std::error_code back;
    if (had_old) fs::rename(old, dir, back);
    throw Error(dir.string() + ": cannot rename " + tmp.string() + " into place: " + msg +
                (back ? " (the old directory is at " + old.string() + ")" : ""));
  }
  if (had_old) fs::remove_all(old, ec);
  if (had_old && ec) {
    throw Error(dir.string() + ": written, but the old directory could not be removed from " +
                old.string() + ": " + ec.message());
  }
}

}  // namespace

void write_file_atomic(const fs::path& path, std::span<const std::uint8_t> bytes) {
  const char* data = reinterpret_cast<const char*>(bytes.data());
  if (path == "-") {
    write_stdout(data, bytes.size());
    return;
  }
  std::error_code ec;
  const auto st = fs::status(path, ec);  // through every link, /proc/self/fd/N ones too
  if (fs::is_directory(st)) throw Error(path.string() + ": is a directory");
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    write_bytes(path, data, bytes.size(), path);  // a device, a pipe or a socket: in place
    return;
  }
  // A regular file is replaced where it really is (the links to it stay links).
  std::error_code rc;
  const fs::path target = fs::exists(st) ? fs::canonical(path, rc) : follow_links(path);
  if (rc) throw Error(path.string() + ": cannot resolve: " + rc.message());
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) {
    throw Error(path.string() + ": directory " + parent.string() + " does not exist");
  }
  fs::path tmp_path = target;
  tmp_path += ".tmp." + std::to_string(::getpid());
  TempPath tmp(tmp_path);
  write_bytes(tmp.path(), data, bytes.size(), path);
  if (fs::exists(st)) fs::permissions(tmp.path(), st.permissions(), ec);  // keep its mode
  fs::rename(tmp.path(), target, ec);
  if (ec) throw Error(path.string() + ": cannot rename temporary into place: " + ec.message());
  tmp.release();
}

void write_dir_atomic(const fs::path& dir_in, const std::vector<DirFile>& files,
                      const ReplaceCheck& may_replace) {
  const fs::path dir = normal_dir(follow_links(normal_dir(dir_in)));  // a link: its target
  check_names(dir, files);
  check_replaceable(dir, may_replace);
  const fs::path parent = dir.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw Error(parent.string() + ": cannot create directory: " + ec.message());
  const std::string stem = "." + dir.filename().string();
  const std::string pid = std::to_string(::getpid());
  TempPath tmp(parent / (stem + ".tmp." + pid));
  fs::remove_all(tmp.path(), ec);
  build_tree(tmp.path(), dir, files);
  swap_in(tmp.path(), dir, parent / (stem + ".old." + pid));
  tmp.release();
}

ReplaceCheck replace_if_contains(std::string marker, std::string what) {
  return [marker = std::move(marker), what = std::move(what)](const fs::path& dir) {
    std::error_code ec;
    if (fs::is_regular_file(dir / marker, ec)) return std::string{};
    return "it is not empty and holds no " + marker + " (not " + what + ")";
  };
}

}  // namespace normcore
