// A small fork-join pool for the batched table operations.
//
// torch's own intra-op pool (OpenMP in the registry build) is only reachable through
// at::parallel_for, whose OpenMP body is inlined into the caller and so would need this
// extension compiled and linked with a second OpenMP runtime. A private pool avoids mixing
// runtimes and keeps the core free of torch.
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

namespace embcache {

class ThreadPool {
public:
    static ThreadPool& global();

    explicit ThreadPool(int num_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    // Total threads working on a job, the caller included.
    int num_threads() const { return static_cast<int>(workers_.size()) + 1; }
    void set_num_threads(int num_threads);

    // Runs fn(task) for every task in [0, num_tasks) and returns when all are done; the first
    // exception thrown by a task is rethrown here. Calls made from inside a task, or while
    // another thread's job occupies the pool, run inline on the calling thread: nested or
    // concurrent use is therefore always safe, just not parallel.
    void run(int64_t num_tasks, const std::function<void(int64_t)>& fn);

private:
    struct Job {
        const std::function<void(int64_t)>* fn = nullptr;
        int64_t num_tasks = 0;
        std::atomic<int64_t> next{0};
        std::atomic<int64_t> done{0};
        std::mutex error_mu;
        std::exception_ptr error;
    };

    void start(int num_workers);
    void stop();
    void worker_loop();
    static void work_on(Job* job);

    std::mutex run_mu_;  // held by the thread that owns the pool for a job
    std::mutex mu_;
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::vector<std::thread> workers_;
    Job* job_ = nullptr;
    uint64_t generation_ = 0;
    int active_ = 0;
    bool stopping_ = false;
};

// Splits [begin, end) into chunks of at least `grain` elements and calls fn(lo, hi) on each,
// in parallel on the global pool.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& fn) {
    const int64_t n = end - begin;
    if (n <= 0)
        return;
    ThreadPool& pool = ThreadPool::global();
    grain = std::max<int64_t>(grain, 1);
    const int64_t max_chunks = static_cast<int64_t>(pool.num_threads()) * 4;
    const int64_t chunks = std::min<int64_t>(max_chunks, (n + grain - 1) / grain);
    if (chunks <= 1) {
        fn(begin, end);
        return;
    }
    const int64_t step = (n + chunks - 1) / chunks;
    pool.run(chunks, [&](int64_t c) {
        const int64_t lo = begin + c * step;
        const int64_t hi = std::min(end, lo + step);
        if (lo < hi)
            fn(lo, hi);
    });
}

// Runs fn(i) for each i in [0, n) as separate tasks (used for per-shard work). With
// `parallel` false they run inline: waking workers costs more than a small batch's work.
template <class F>
void parallel_tasks(int64_t n, F&& fn, bool parallel = true) {
    if (n <= 0)
        return;
    if (n == 1 || !parallel) {
        for (int64_t i = 0; i < n; ++i)
            fn(i);
        return;
    }
    ThreadPool::global().run(n, [&](int64_t i) { fn(i); });
}

}  // namespace embcache
