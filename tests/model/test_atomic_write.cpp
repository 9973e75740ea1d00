// normcore::write_dir_atomic / write_file_atomic: whole-directory replacement, refusal to replace
// what is not ours, rollback on failure, no temporaries left behind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "normcore/bn_params.hpp"
#include "normcore/util/atomic_write.hpp"

namespace fs = std::filesystem;
using normcore::write_dir_atomic;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag)
      : path(fs::temp_directory_path() / ("nc_aw_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  [[nodiscard]] int entries() const {
    int n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(path)) ++n;
    return n;
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream is(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(is), {}};
}

const auto kOurs = normcore::replace_if_contains("manifest.json", "a normcore output");

}  // namespace

TEST(AtomicWrite, ReplacesAWholeDirectoryAndLeavesNoTemporaries) {
  TempDir t("replace");
  const fs::path out = t.path / "rtl";
  write_dir_atomic(out, {{"manifest.json", "{}"}, {"a.v", "one"}}, kOurs);
  write_dir_atomic(out, {{"manifest.json", "{}"}, {"sub/b.v", "two"}}, kOurs);
  EXPECT_FALSE(fs::exists(out / "a.v"));  // replaced as a whole
  EXPECT_EQ(slurp(out / "sub/b.v"), "two");
  EXPECT_EQ(t.entries(), 1);
}

TEST(AtomicWrite, TrailingSlashAndDotSegmentsNameTheSameDirectory) {
  TempDir t("slash");
  write_dir_atomic(t.path / "rtl/", {{"manifest.json", "1"}}, kOurs);
  write_dir_atomic(t.path / "x/../rtl", {{"manifest.json", "2"}}, kOurs);
  EXPECT_EQ(slurp(t.path / "rtl/manifest.json"), "2");
  EXPECT_EQ(t.entries(), 1);
}

TEST(AtomicWrite, NeverReplacesADirectoryThatIsNotOurs) {
  TempDir t("user");
  const fs::path out = t.path / "mine";
  fs::create_directories(out);
  std::ofstream(out / "thesis.tex") << "years of work";
  try {
    write_dir_atomic(out, {{"manifest.json", "{}"}}, kOurs);
    FAIL() << "replaced a user's directory";
  } catch (const normcore::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not replaced"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("manifest.json"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(out / "thesis.tex"), "years of work");
  EXPECT_FALSE(fs::exists(out / "manifest.json"));
  // Without a check only an empty directory may be replaced; a file is never replaced.
  EXPECT_THROW(write_dir_atomic(out, {{"a", "b"}}), normcore::Error);
  std::ofstream(t.path / "file") << "x";
  EXPECT_THROW(write_dir_atomic(t.path / "file", {{"a", "b"}}, kOurs), normcore::Error);
  EXPECT_EQ(slurp(t.path / "file"), "x");
  fs::create_directories(t.path / "empty");
  write_dir_atomic(t.path / "empty", {{"a", "b"}});
  EXPECT_EQ(slurp(t.path / "empty/a"), "b");
}

TEST(AtomicWrite, AFailureMidwayLeavesTheOldDirectory) {
  TempDir t("fail");
  const fs::path out = t.path / "rtl";
  write_dir_atomic(out, {{"manifest.json", "old"}}, kOurs);
  // "f" is a file, so "f/g" cannot be created: the write fails after the first file.
  EXPECT_THROW(write_dir_atomic(out, {{"manifest.json", "new"}, {"f", "1"}, {"f/g", "2"}}, kOurs),
               normcore::Error);
  EXPECT_EQ(slurp(out / "manifest.json"), "old");
  EXPECT_EQ(t.entries(), 1);
}

TEST(AtomicWrite, RejectsNamesOutsideTheDirectory) {
  TempDir t("names");
  EXPECT_THROW(write_dir_atomic(t.path / "o", {{"../escape", "x"}}), normcore::Error);
  EXPECT_THROW(write_dir_atomic(t.path / "o", {{"/abs", "x"}}), normcore::Error);
  EXPECT_FALSE(fs::exists(t.path / "escape"));
  EXPECT_EQ(t.entries(), 0);
}

TEST(AtomicWrite, UnwritableParentFailsCleanly) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  TempDir t("perm");
  fs::create_directories(t.path / "ro");
  fs::permissions(t.path / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_THROW(write_dir_atomic(t.path / "ro/out", {{"a", "b"}}), normcore::Error);
  EXPECT_FALSE(fs::exists(t.path / "ro/out"));
}

TEST(AtomicWrite, FileIsReplacedWholeOrNotAtAll) {
  TempDir t("file");
  const fs::path p = t.path / "y.bin";
  const std::uint8_t one[] = {1, 2, 3};
  normcore::write_file_atomic(p, one);
  EXPECT_EQ(slurp(p), std::string("\x01\x02\x03"));
  EXPECT_THROW(normcore::write_file_atomic(t.path / "no/such/dir/y.bin", one), normcore::Error);
  EXPECT_EQ(t.entries(), 1);
}

// Issue 15: outputs were replaced by rename even when the path was a symbolic link or a device
// (`run --output /dev/stdout` as root turned the link into a plain file).
TEST(AtomicWrite, SymlinkIsFollowedAndStaysALink) {
  TempDir t("link");
  fs::create_directories(t.path / "real");
  fs::create_symlink("real/y.bin", t.path / "y.bin");
  const std::uint8_t bytes[] = {7, 8};
  normcore::write_file_atomic(t.path / "y.bin", bytes);
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(t.path / "y.bin")));
  EXPECT_EQ(slurp(t.path / "real/y.bin"), std::string("\x07\x08"));
  EXPECT_EQ(t.entries(), 2);  // no temporary left beside the link or the target
}

TEST(AtomicWrite, DeviceAndPipeAreWrittenInPlace) {
  TempDir t("dev");
  const std::uint8_t bytes[] = {1, 2, 3, 4};
  // A node of its own as root (a writer that renames would replace it), else /dev/null.
  fs::path null = t.path / "null";
  if (::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) null = "/dev/null";
  normcore::write_file_atomic(null, bytes);
  EXPECT_TRUE(fs::is_character_file(null));
  const fs::path fifo = t.path / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = slurp(fifo); });
  normcore::write_file_atomic(fifo, bytes);
  reader.join();
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(got, std::string("\x01\x02\x03\x04"));
}

TEST(AtomicWrite, ReplacedFileKeepsItsMode) {
  TempDir t("mode");
  const fs::path p = t.path / "y.bin";
  const std::uint8_t bytes[] = {1};
  normcore::write_file_atomic(p, bytes);
  fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  normcore::write_file_atomic(p, bytes);
  EXPECT_EQ(fs::status(p).permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_THROW(normcore::write_file_atomic(t.path, bytes), normcore::Error);  // a directory
}

TEST(AtomicWrite, DirectoryWithAReadOnlySubdirectoryIsLeftAsItWas) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions (cli.safety covers it)";
  TempDir t("ro_sub");
  const fs::path out = t.path / "rtl";
  write_dir_atomic(out, {{"manifest.json", "old"}, {"sub/f", "keep"}}, kOurs);
  fs::permissions(out / "sub", fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_THROW(write_dir_atomic(out, {{"manifest.json", "new"}}, kOurs), normcore::Error);
  fs::permissions(out / "sub", fs::perms::owner_all);
  EXPECT_EQ(slurp(out / "manifest.json"), "old");
  EXPECT_EQ(slurp(out / "sub/f"), "keep");
  EXPECT_EQ(t.entries(), 1);
}
