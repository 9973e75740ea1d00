// The run queue: the shared state behind a Run handle and the worker thread that executes runs
// in submission order.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "normcore/driver.hpp"

namespace normcore::detail {

// One submitted run: the job and its state, shared by every Run handle and the queue.
struct RunShared {
  std::mutex mu;
  std::condition_variable cv;
  RunState state = RunState::queued;
  std::string error;
  std::exception_ptr exc;
  RunStats stats;
  // The job; the worker drops the parameter and buffer references when it has finished.
  std::shared_ptr<const ParamsImpl> params;
  TensorView in;
  MutableTensorView out;
  JobShape shape;
  RunOptions opt;
  std::shared_ptr<BufferImpl> bin, bout;  // zero-copy
};

// FIFO of runs executed one at a time by a worker thread.
class JobQueue {
 public:
  using Executor = std::function<void(RunShared&)>;  // runs one job; throws on failure
  // Runs several jobs in order; errs[i] is job i's failure (null: it completed).
  using BatchExecutor =
      std::function<void(std::span<RunShared* const>, std::vector<std::exception_ptr>&)>;

  JobQueue() = default;
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;
  ~JobQueue();  // stop()

  void start(Executor exec);  // starts the worker
  // Starts a worker that takes every queued run (up to kMaxBatch) at once.
  void start_batched(BatchExecutor exec);
  static constexpr std::size_t kMaxBatch = 4096;
  void push(std::shared_ptr<RunShared> r);
  void stop();  // finishes every queued run, then joins the worker
  // runs, failed_runs and tiles (the other fields are zero).
  [[nodiscard]] DriverStats stats() const;

 private:
  void loop();
  void execute(RunShared& r);
  void execute_batch(std::vector<std::shared_ptr<RunShared>>& runs);
  void finish(RunShared& r, std::exception_ptr exc, double wall);

  Executor exec_;
  BatchExecutor batch_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<RunShared>> queue_;
  bool stop_ = false;
  DriverStats stats_;  // under mu_
  std::thread worker_;
};

}  // namespace normcore::detail
