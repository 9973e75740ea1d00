// The run queue: Run handles, and the worker thread that executes runs in submission order and
// publishes their state, statistics and errors.
#include "detail/driver_queue.hpp"

#include "detail/driver_util.hpp"

namespace normcore {

std::string_view to_string(RunState s) {
  switch (s) {
    case RunState::queued:
      return "queued";
    case RunState::running:
      return "running";
    case RunState::completed:
      return "completed";
    case RunState::failed:
      return "failed";
  }
  return "?";
}

namespace {

detail::RunShared& shared_of(const std::shared_ptr<detail::RunShared>& s, const char* what) {
  if (!s) throw DeviceError(std::string(what) + " on an empty run handle");
  return *s;
}

bool finished(const detail::RunShared& s) {
  return s.state == RunState::completed || s.state == RunState::failed;
}

}  // namespace

bool Run::wait(std::chrono::milliseconds timeout) const {
  detail::RunShared& s = shared_of(s_, "Run::wait");
  std::unique_lock lk(s.mu);
  return s.cv.wait_for(lk, timeout, [&] { return finished(s); });
}

void Run::get() const {
  detail::RunShared& s = shared_of(s_, "Run::get");
  std::unique_lock lk(s.mu);
  s.cv.wait(lk, [&] { return finished(s); });
  if (s.exc) std::rethrow_exception(s.exc);
}

RunState Run::state() const {
  detail::RunShared& s = shared_of(s_, "Run::state");
  std::lock_guard lk(s.mu);
  return s.state;
}
std::string Run::error() const {
  detail::RunShared& s = shared_of(s_, "Run::error");
  std::lock_guard lk(s.mu);
  return s.error;
}
RunStats Run::stats() const {
  detail::RunShared& s = shared_of(s_, "Run::stats");
  std::lock_guard lk(s.mu);
  return s.stats;
}

namespace detail {

JobQueue::~JobQueue() {
  stop();
}

void JobQueue::start(Executor exec) {
  exec_ = std::move(exec);
  worker_ = std::thread([this] { loop(); });
}

void JobQueue::start_batched(BatchExecutor exec) {
  batch_ = std::move(exec);
  worker_ = std::thread([this] { loop(); });
}

void JobQueue::push(std::shared_ptr<RunShared> r) {
  {
    std::lock_guard lk(mu_);
    queue_.push_back(std::move(r));
    ++stats_.runs;
  }
  cv_.notify_all();
}

void JobQueue::stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

DriverStats JobQueue::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

void JobQueue::loop() {
  for (;;) {
    std::vector<std::shared_ptr<RunShared>> runs;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop requested and nothing left
      const std::size_t n = batch_ ? std::min(queue_.size(), kMaxBatch) : 1;
      for (std::size_t i = 0; i < n; ++i) {
        runs.push_back(queue_.front());
        queue_.pop_front();
      }
    }
    if (batch_) {
      execute_batch(runs);
    } else {
      execute(*runs.front());
    }
  }
}

void JobQueue::execute_batch(std::vector<std::shared_ptr<RunShared>>& runs) {
  std::vector<RunShared*> ptrs;
  for (auto& r : runs) {
    std::lock_guard lk(r->mu);
    r->state = RunState::running;
    ptrs.push_back(r.get());
  }
  const auto t0 = Clock::now();
  std::vector<std::exception_ptr> errs;
  try {
    batch_(ptrs, errs);
  } catch (...) {
    errs.assign(ptrs.size(), std::current_exception());
  }
  errs.resize(ptrs.size());
  const double wall = seconds(Clock::now() - t0) / static_cast<double>(ptrs.size());
  for (std::size_t i = 0; i < ptrs.size(); ++i) finish(*ptrs[i], errs[i], wall);
}

void JobQueue::execute(RunShared& r) {
  {
    std::lock_guard lk(r.mu);
    r.state = RunState::running;
  }
  const auto t0 = Clock::now();
  std::exception_ptr exc;
  try {
    exec_(r);
  } catch (const std::exception&) {
    exc = std::current_exception();
  }
  finish(r, exc, seconds(Clock::now() - t0));
}

// Publishes a run's end: its state, error text and statistics (wall: its share of the time).
void JobQueue::finish(RunShared& r, std::exception_ptr exc, double wall) {
  std::string err;
  if (exc) {
    try {
      std::rethrow_exception(exc);
    } catch (const std::exception& e) {
      err = e.what();
    } catch (...) {
      err = "unknown error";
    }
  }
  {
    std::lock_guard lk(mu_);
    stats_.tiles += r.stats.tiles;
    if (exc) ++stats_.failed_runs;
  }
  {
    std::lock_guard lk(r.mu);
    r.stats.host_seconds = wall - r.stats.device_seconds;
    r.state = exc ? RunState::failed : RunState::completed;
    r.exc = exc;
    r.error = err;
    r.params.reset();
    r.bin.reset();
    r.bout.reset();
  }
  r.cv.notify_all();
}

}  // namespace detail

}  // namespace normcore
