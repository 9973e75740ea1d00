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
    std::shared_ptr<RunShared> r;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop requested and nothing left
      r = queue_.front();
      queue_.pop_front();
    }
    execute(*r);
  }
}

void JobQueue::execute(RunShared& r) {
  {
    std::lock_guard lk(r.mu);
    r.state = RunState::running;
  }
  const auto t0 = Clock::now();
  std::exception_ptr exc;
  std::string err;
  try {
    exec_(r);
  } catch (const std::exception& e) {
    exc = std::current_exception();
    err = e.what();
  }
  {
    std::lock_guard lk(mu_);
    stats_.tiles += r.stats.tiles;
    if (exc) ++stats_.failed_runs;
  }
  {
    std::lock_guard lk(r.mu);
    r.stats.host_seconds = seconds(Clock::now() - t0) - r.stats.device_seconds;
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
