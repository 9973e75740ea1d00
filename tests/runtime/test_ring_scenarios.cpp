// The descriptor ring's scenarios (ring_scenarios.hpp) on ref: (nc_ring and nc_wide_ring); the
// sim: and tlm: devices run the same ones in ring_tests (sim/test_ring.cpp). Then what only ref:
// does (RefRing, the same fixture): descriptors run inside the RING_HEAD write (TAIL == HEAD right
// after it, each status and output there at once) and a descriptor that cannot be read (no
// buffer there: a read error, no status).
#include "ring_scenarios.hpp"
#include "test_paths.hpp"

namespace normcore::test::ring {

std::string manifest_path(const std::string& device_name) {
  return devices_dir() + "/" + device_name + "/rtl/manifest.json";
}
bool tlm_built() {
  return false;
}

namespace {

INSTANTIATE_TEST_SUITE_P(Backends, Ring, ::testing::Values("ref", "ref_wide"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

class RefRing : public Ring {};

TEST_P(RefRing, RandomStreamsWrapAndAppendBitExact) {
  setup(2);  // 4 slots: 23 descriptors wrap five times
  std::vector<MemJob> jobs;
  std::vector<bool> shared;
  for (int i = 0; i < 23; ++i) {
    shared.push_back(!jobs.empty() && uni(0, 1) == 0);
    jobs.push_back(make_job(shared.back() ? &jobs.back() : nullptr));
  }
  std::uint32_t head = 0;
  std::size_t next = 0;
  while (next < jobs.size()) {  // appends of 1..4 descriptors (never more than the ring)
    const auto n = std::min<std::size_t>(static_cast<std::size_t>(uni(1, 4)), jobs.size() - next);
    for (std::size_t i = 0; i < n; ++i) {
      describe(head + static_cast<std::uint32_t>(i), jobs[next + i],
               shared[next + i] ? kSameParams : 0);
    }
    head += static_cast<std::uint32_t>(n);
    wr("RING_HEAD", head);
    EXPECT_EQ(get("RING_TAIL", "index"), head);
    for (std::size_t i = 0; i < n; ++i) {
      const MemJob& j = jobs[next + i];
      const std::uint32_t index = head - static_cast<std::uint32_t>(n - i);
      EXPECT_EQ(status_of(index), 1u) << "descriptor " << next + i;
      EXPECT_EQ(status_word(index, 52, 4), j.x.size());
      EXPECT_EQ(j.result(), j.golden()) << "descriptor " << next + i;
    }
    next += n;
  }
  EXPECT_EQ(get("IRQ_STATUS", "ring"), 1u);
  EXPECT_EQ(get("IRQ_STATUS", "done"), 0u) << "ring jobs do not raise IRQ_STATUS.done";
  EXPECT_EQ(get("STATUS", "done"), 1u);
  EXPECT_EQ(get("RING_STATUS", "stopped"), 0u);
  EXPECT_TRUE(d->wait_irq(std::chrono::milliseconds(0)));
}

TEST_P(RefRing, UnreadableDescriptorStopsWithAReadError) {
  setup(2);
  const std::uint64_t base = ring->device_address();
  ring.reset();  // the ring's memory is gone
  wr("RING_HEAD", 1);
  EXPECT_EQ(get("RING_STATUS", "stopped"), 1u);
  EXPECT_EQ(get("RING_TAIL", "index"), 0u);
  EXPECT_EQ(get("ERR_CODE", "code"), code("read"));
  EXPECT_EQ(rd("ERR_ADDR_LO") | static_cast<std::uint64_t>(rd("ERR_ADDR_HI")) << 32, base);
}

INSTANTIATE_TEST_SUITE_P(Ref, RefRing, ::testing::Values("ref", "ref_wide"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace normcore::test::ring
