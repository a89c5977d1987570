// The host thread pool of the extension packages (hybrid_torchrec, torchrec_embcache).
//
// A private pool instead of torch's intra-op threads: at::parallel_for inlines OpenMP into
// the caller, which would tie an extension to torch's OpenMP runtime; and the host work of a
// training step must not compete with the intra-op pool that runs the dense model.
//
// Callers keep results independent of the number of threads: they split work by data
// (partitions of an id hash, fixed-size chunks), never by thread count, and each piece of
// output is written by exactly one task.
//
// Each package compiles this file with RECSDK_EXT_THREADS_ENV set to the name of its own
// environment variable (setup.py), so the two packages' pools are sized independently.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace recsdk_ext {

class ThreadPool {
public:
    // Sized by the package's RECSDK_EXT_THREADS_ENV variable, else by the CPUs this process
    // may run on.
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

// The package's thread variable when it holds a whole number in [1, 4096], else the CPUs the
// process may use (its affinity mask, not the machine's count).
int default_num_threads();

// Runs fn(i) for i in [0, n) as separate tasks of the global pool. With `parallel` false they
// run inline: waking workers costs more than a small batch's work.
template <class F>
void parallel_tasks(int64_t n, F&& fn, bool parallel = true) {
    if (n <= 0)
        return;
    if (n == 1 || !parallel) {
        for (int64_t i = 0; i < n; ++i)
            fn(i);
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
        fn(c, lo, std::min(n, lo + chunk));
    });
}

// Splits [begin, end) into at most 4 chunks per thread of at least `grain` elements each and
// calls fn(lo, hi) on each: for work whose result does not depend on where chunks start.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& fn) {
    const int64_t n = end - begin;
    if (n <= 0)
        return;
    const int64_t max_chunks = static_cast<int64_t>(ThreadPool::global().num_threads()) * 4;
    const int64_t chunks =
        std::min(max_chunks, (n + std::max<int64_t>(grain, 1) - 1) / std::max<int64_t>(grain, 1));
    if (chunks <= 1) {
        fn(begin, end);
        return;
    }
    const int64_t step = (n + chunks - 1) / chunks;
    parallel_tasks(chunks, [&](int64_t c) {
        const int64_t lo = begin + c * step;
        const int64_t hi = std::min(end, lo + step);
        if (lo < hi)
            fn(lo, hi);
    });
}

}  // namespace recsdk_ext
