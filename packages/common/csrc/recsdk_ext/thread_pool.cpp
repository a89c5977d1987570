#include "recsdk_ext/thread_pool.h"

#ifndef RECSDK_EXT_THREADS_ENV
#error "RECSDK_EXT_THREADS_ENV must name the package's thread-count variable (set by setup.py)"
#endif

#include <pthread.h>
#include <sched.h>

#include <cstdlib>
#include <string>

namespace recsdk_ext {

namespace {

// Pool workers, and the caller while it works on its own job: their nested run() calls go
// inline, since every worker is already busy with the outer job.
thread_local bool tls_inside_job = false;

// A forked child (a DataLoader worker, say) has the pool's memory but none of its threads,
// and maybe a pool mutex locked by a thread that no longer exists: it must never wait on
// the pool again.
std::atomic<bool> g_forked{false};

void on_fork_child() {
    g_forked.store(true);
}

}  // namespace

int default_num_threads() {
    if (const char* env = std::getenv(RECSDK_EXT_THREADS_ENV)) {
        char* end = nullptr;
        const long n = std::strtol(env, &end, 10);
        if (end != env && *end == '\0' && n >= 1 && n <= 4096)
            return static_cast<int>(n);
    }
    // The CPUs the process may use, not the machine's: a container or a taskset'ed rank
    // gets as many threads as it has cores.
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n >= 1)
            return n;
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
}

ThreadPool& ThreadPool::global() {
    // Never destroyed: joining threads in a static destructor can hang when the interpreter
    // exits from a thread other than the main one.
    static ThreadPool* pool = [] {
        pthread_atfork(nullptr, nullptr, &on_fork_child);
        return new ThreadPool(default_num_threads());
    }();
    return *pool;
}

ThreadPool::ThreadPool(int num_threads) {
    start(num_threads > 1 ? num_threads - 1 : 0);
}

ThreadPool::~ThreadPool() {
    stop();
}

void ThreadPool::set_num_threads(int num_threads) {
    std::lock_guard<std::mutex> own(owner_mu_);
    stop();
    start(num_threads > 1 ? num_threads - 1 : 0);
}

void ThreadPool::start(int num_workers) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = false;
    }
    workers_.reserve(static_cast<size_t>(num_workers));
    for (int i = 0; i < num_workers; ++i)
        workers_.emplace_back([this] { worker_main(); });
}

void ThreadPool::stop() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_)
        t.join();
    workers_.clear();
}

void ThreadPool::drain(Job& job) {
    for (;;) {
        const int64_t i = job.next.fetch_add(1, std::memory_order_relaxed);
        if (i >= job.num_tasks)
            return;
        try {
            (*job.fn)(i);
        } catch (...) {
            std::lock_guard<std::mutex> lock(job.error_mu);
            if (!job.error)
                job.error = std::current_exception();
        }
        job.finished.fetch_add(1, std::memory_order_acq_rel);
    }
}

void ThreadPool::worker_main() {
    tls_inside_job = true;
    uint64_t seen = 0;
    for (;;) {
        Job* job = nullptr;
        {
            std::unique_lock<std::mutex> lock(mu_);
            wake_.wait(lock, [&] { return stop_ || epoch_ != seen; });
            if (stop_)
                return;
            seen = epoch_;
            if (job_ == nullptr)
                continue;  // the job ended before this worker woke up
            job = job_;
            ++busy_;
        }
        drain(*job);
        {
            std::lock_guard<std::mutex> lock(mu_);
            --busy_;
        }
        done_.notify_all();
    }
}

void ThreadPool::run(int64_t num_tasks, const std::function<void(int64_t)>& fn) {
    if (num_tasks <= 0)
        return;
    std::unique_lock<std::mutex> own(owner_mu_, std::try_to_lock);
    if (tls_inside_job || !own.owns_lock() || workers_.empty() || num_tasks == 1 ||
        g_forked.load()) {
        for (int64_t i = 0; i < num_tasks; ++i)
            fn(i);
        return;
    }
    Job job;
    job.fn = &fn;
    job.num_tasks = num_tasks;
    {
        std::lock_guard<std::mutex> lock(mu_);
        job_ = &job;
        ++epoch_;
    }
    wake_.notify_all();
    tls_inside_job = true;
    drain(job);
    tls_inside_job = false;
    {
        // `job` lives on this stack: no worker may still hold it when run() returns.
        std::unique_lock<std::mutex> lock(mu_);
        done_.wait(lock, [&] { return busy_ == 0 && job.finished.load() == job.num_tasks; });
        job_ = nullptr;
    }
    if (job.error)
        std::rethrow_exception(job.error);
}

}  // namespace recsdk_ext
