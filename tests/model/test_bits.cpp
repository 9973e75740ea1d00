// normcore/util/bits.hpp: LSB-first packing against a bit-by-bit reference, on bytes and 32-bit
// words, every width 1..64 at unaligned offsets; the sequential reader and writer; pack/unpack.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "normcore/util/bits.hpp"

namespace {

using namespace normcore;

// Reference: one bit at a time.
template <class Word>
void ref_put(std::vector<Word>& w, std::uint64_t lsb, int width, std::uint64_t v) {
  constexpr unsigned kW = sizeof(Word) * 8;
  for (int i = 0; i < width; ++i) {
    const std::uint64_t b = lsb + static_cast<std::uint64_t>(i);
    const auto bit = static_cast<Word>(Word{1} << (b % kW));
    if (((v >> i) & 1U) != 0) {
      w[b / kW] = static_cast<Word>(w[b / kW] | bit);
    } else {
      w[b / kW] = static_cast<Word>(w[b / kW] & ~bit);
    }
  }
}

TEST(Bits, MasksAndSignExtension) {
  EXPECT_EQ(bits::mask(0), 0U);
  EXPECT_EQ(bits::mask(1), 1U);
  EXPECT_EQ(bits::mask(12), 0xFFFU);
  EXPECT_EQ(bits::mask(64), ~std::uint64_t{0});
  EXPECT_EQ(bits::sign_extend(0x80, 8), -128);
  EXPECT_EQ(bits::sign_extend(0x7F, 8), 127);
  EXPECT_EQ(bits::sign_extend(1, 1), -1);
  EXPECT_EQ(bits::sign_extend(~std::uint64_t{0}, 64), -1);
  EXPECT_EQ(bits::to_int(0xFFF, 12, true), -1);
  EXPECT_EQ(bits::to_int(0xFFF, 12, false), 0xFFF);
  EXPECT_EQ(bits::truncate(-1, 5), 0x1FU);
  EXPECT_EQ(bits::truncate(-128, 8), 0x80U);
}

TEST(Bits, GetPutMatchTheReferenceOnBytesAndWords) {
  std::mt19937_64 rng(7);
  for (int width = 1; width <= 64; ++width) {
    for (int trial = 0; trial < 40; ++trial) {
      const std::uint64_t lsb = rng() % 200;
      const std::uint64_t v = rng();
      std::vector<std::uint8_t> b(40), rb;
      std::vector<std::uint32_t> w(10), rw;
      for (auto& x : b) x = static_cast<std::uint8_t>(rng());
      for (auto& x : w) x = static_cast<std::uint32_t>(rng());
      rb = b;
      rw = w;
      bits::put(b, lsb, width, v);
      bits::put(w, lsb, width, v);
      ref_put(rb, lsb, width, v);
      ref_put(rw, lsb, width, v);
      ASSERT_EQ(b, rb) << "width " << width << " lsb " << lsb;
      ASSERT_EQ(w, rw) << "width " << width << " lsb " << lsb;
      ASSERT_EQ(bits::get(b, lsb, width), v & bits::mask(width));
      ASSERT_EQ(bits::get(w, lsb, width), v & bits::mask(width));
    }
  }
  const std::vector<std::uint8_t> none(1, 0xFF);
  EXPECT_EQ(bits::get(none, 3, 0), 0U);
}

TEST(Bits, LittleEndianIntegers) {
  std::vector<std::uint8_t> b(12, 0xEE);
  bits::store_le(b, 1, 0x0102030405060708ULL, 8);
  EXPECT_EQ(b[0], 0xEE);
  EXPECT_EQ(b[1], 0x08);
  EXPECT_EQ(b[8], 0x01);
  EXPECT_EQ(b[9], 0xEE);
  EXPECT_EQ(bits::load_le(b, 1, 8), 0x0102030405060708ULL);
  EXPECT_EQ(bits::load_le(b, 1, 3), 0x060708U);
  bits::store_le(b, 9, 0xABCD, 2);
  EXPECT_EQ(b[9], 0xCD);
  EXPECT_EQ(b[10], 0xAB);
  EXPECT_EQ(b[11], 0xEE);
}

TEST(Bits, PackUnpackRoundTrip) {
  std::mt19937_64 rng(3);
  for (int width : {1, 3, 4, 7, 8, 10, 12, 16, 17, 31, 32, 33, 57, 63, 64}) {
    for (bool is_signed : {false, true}) {
      std::vector<std::int64_t> v(37);
      for (auto& x : v) x = bits::to_int(rng() & bits::mask(width), width, is_signed);
      const auto packed = bits::pack(v, width);
      ASSERT_EQ(packed.size(), (v.size() * static_cast<std::size_t>(width) + 7) / 8);
      ASSERT_EQ(bits::unpack(packed, v.size(), width, is_signed), v) << width;
      // Element i is at bits i * width (the layout the manifest describes).
      for (std::size_t i = 0; i < v.size(); ++i) {
        ASSERT_EQ(bits::get(packed, i * static_cast<std::uint64_t>(width), width),
                  bits::truncate(v[i], width));
      }
    }
  }
  // Padding bits of the last byte are zero.
  EXPECT_EQ(bits::pack(std::vector<std::int64_t>{-1, -1, -1}, 3),
            (std::vector<std::uint8_t>{0xFF, 0x01}));
}

TEST(Bits, SequentialReaderAndWriterMatchPack) {
  std::mt19937_64 rng(11);
  for (int width : {1, 2, 5, 8, 12, 16, 24, 31, 32, 40, 56, 57, 64}) {
    std::vector<std::int64_t> v(29);
    for (auto& x : v) x = static_cast<std::int64_t>(rng() & bits::mask(width));
    const auto packed = bits::pack(v, width);
    std::vector<std::uint8_t> out(packed.size() + 1, 0xAA);
    bits::Writer wr(out.data());
    for (auto x : v) wr.put(static_cast<std::uint64_t>(x), width);
    wr.flush();
    EXPECT_EQ(std::vector<std::uint8_t>(out.begin(), out.end() - 1), packed) << width;
    EXPECT_EQ(out.back(), 0xAA) << "writes past the stream, width " << width;
    bits::Reader rd(packed.data());
    for (auto x : v) ASSERT_EQ(rd.get(width), static_cast<std::uint64_t>(x)) << width;
  }
}

// The reader touches a byte only once the bits it asks for need it.
TEST(Bits, ReaderReadsLazily) {
  std::vector<std::uint8_t> b{0x21, 0x43};
  bits::Reader rd(b.data());
  EXPECT_EQ(rd.get(4), 0x1U);
  b[1] = 0x65;  // not read yet
  EXPECT_EQ(rd.get(4), 0x2U);
  EXPECT_EQ(rd.get(8), 0x65U);
}

}  // namespace
