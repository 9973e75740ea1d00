// Output that is never half written and never replaces what it should not: a file or a whole
// directory is written beside its destination under a temporary name and renamed into place;
// every failure removes the temporary and leaves the destination as it was.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace normcore {

// Writes `bytes` to `path`, the one writer of every output file. A regular file (or a new one) is
// written through "<path>.tmp.<pid>" and rename(), keeping an existing file's mode; a symbolic
// link is followed to its target (the link stays a link); a character or block device, a pipe or
// a socket is written in place; "-" is standard output. Throws normcore::Error naming the path on
// failure (a missing directory, a directory at `path`, a write error): the temporary is removed
// and an existing file is untouched.
void write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);

struct DirFile {
  std::string name;     // path relative to the directory (no "..", may hold subdirectories)
  std::string content;  // bytes
};

// Decides whether an existing directory may be replaced; returns "" if so, else the reason.
using ReplaceCheck = std::function<std::string(const std::filesystem::path& dir)>;

// Writes `files` as the whole content of directory `dir` ("out", "out/", "." are all accepted;
// missing parents are created). An existing `dir` is replaced only if it is a directory that is
// empty or that `may_replace` accepts (default: only empty directories) and whose every directory
// is writable (checked first, so removing it cannot stop half-way), and then atomically (a
// symbolic link is followed to the directory it names):
// the new tree is built at ".<name>.tmp.<pid>", the old one moved to ".<name>.old.<pid>", the new
// one renamed into place and only then the old one removed. If the second rename fails the old
// directory is moved back. Throws normcore::Error naming the path and the reason; on every
// failure the destination is as it was and no temporary is left behind.
void write_dir_atomic(const std::filesystem::path& dir, const std::vector<DirFile>& files,
                      const ReplaceCheck& may_replace = {});

// A ReplaceCheck that accepts directories holding `marker` (e.g. "manifest.json", "plan.json":
// a previous output of the same command) and names `what` in its refusal.
ReplaceCheck replace_if_contains(std::string marker, std::string what);

}  // namespace normcore
