// The pool that runs the core's batched work.
//
// A private pool instead of torch's intra-op threads: at::parallel_for inlines OpenMP into
// the caller, which would tie this extension to torch's OpenMP runtime; and the host work of
// a training step must not compete with the intra-op pool that runs the dense model.
//
// Results never depend on the number of threads: every parallel algorithm of the core splits
// its work by data (partitions of the id hash, fixed-size chunks), never by thread count,
// and each piece of output is written by exactly one task.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hybrid {

class ThreadPool {
public:
    // Sized by HYBRID_TORCHREC_NUM_THREADS, else by the CPUs this process may run on.
    static ThreadPool& global();

    explicit ThreadPool(int num_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    // Threads that work on a job, the calling thread included.
    int num_threads() const { return static_cast<int>(workers_.size()) + 1; }
    void set_num_threads(int num_threads);

    // Calls fn(i) for every i in [0, num_tasks), returns when all have finished and rethrows
    // the first exception a task threw. A call from inside a task, or while another thread's
    // job holds the pool, runs its tasks inline: nesting and concurrent callers are safe.
    void run(int64_t num_tasks, const std::function<void(int64_t)>& fn);

private:
    struct Job {
        const std::function<void(int64_t)>* fn = nullptr;
        int64_t num_tasks = 0;
        std::atomic<int64_t> next{0};
        std::atomic<int64_t> finished{0};
        std::mutex error_mu;
        std::exception_ptr error;
    };

    void start(int num_workers);
    void stop();
    void worker_main();
    static void drain(Job& job);

    std::mutex owner_mu_;  // held by the thread whose job occupies the pool
    std::mutex mu_;
    std::condition_variable wake_;
    std::condition_variable done_;
    std::vector<std::thread> workers_;
    Job* job_ = nullptr;
    uint64_t epoch_ = 0;
    int busy_ = 0;
    bool stop_ = false;
};

int default_num_threads();

// Runs fn(i) for i in [0, n) as separate tasks of the global pool.
template <class F>
void parallel_tasks(int64_t n, F&& fn) {
    if (n <= 0)
        return;
    if (n == 1) {
        fn(int64_t{0});
        return;
    }
    const std::function<void(int64_t)> task = [&fn](int64_t i) { fn(i); };
    ThreadPool::global().run(n, task);
}

// Splits [0, n) into fixed chunks of `chunk` elements and runs fn(chunk_index, lo, hi) on
// each; the split depends on n and chunk only.
template <class F>
void parallel_chunks(int64_t n, int64_t chunk, F&& fn) {
    if (n <= 0)
        return;
    const int64_t chunks = (n + chunk - 1) / chunk;
    parallel_tasks(chunks, [&](int64_t c) {
        const int64_t lo = c * chunk;
        const int64_t hi = lo + chunk < n ? lo + chunk : n;
        fn(c, lo, hi);
    });
}

}  // namespace hybrid
