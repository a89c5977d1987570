#include "thread_pool.h"

#include <pthread.h>

#include <cstdlib>
#include <string>

namespace embcache {

namespace {

// Set on pool workers so that a task which itself calls run() executes inline instead of
// waiting for workers that are all busy with the outer job.
thread_local bool tls_in_worker = false;

// A forked child (e.g. a DataLoader worker) inherits the pool's state but not its threads,
// possibly with a pool mutex taken by a thread that no longer exists: after a fork every
// job runs inline without touching that state.
std::atomic<bool> g_forked{false};
void mark_forked() {
    g_forked.store(true);
}

int default_threads() {
    if (const char* env = std::getenv("EMBCACHE_NUM_THREADS")) {
        try {
            const int n = std::stoi(env);
            if (n >= 1)
                return n;
        } catch (const std::exception&) {
            // An unparsable value falls back to the hardware count, like torch's OMP_NUM_THREADS.
        }
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace

ThreadPool& ThreadPool::global() {
    // Leaked on purpose: joining threads from a static destructor at interpreter exit can
    // deadlock when the process is torn down from a non-main thread.
    static ThreadPool* pool = [] {
        pthread_atfork(nullptr, nullptr, &mark_forked);
        return new ThreadPool(default_threads());
    }();
    return *pool;
}

ThreadPool::ThreadPool(int num_threads) {
    start(std::max(num_threads, 1) - 1);
}

ThreadPool::~ThreadPool() {
    stop();
}

void ThreadPool::set_num_threads(int num_threads) {
    std::lock_guard<std::mutex> own(run_mu_);
    stop();
    start(std::max(num_threads, 1) - 1);
}

void ThreadPool::start(int num_workers) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = false;
    }
    workers_.reserve(num_workers);
    for (int i = 0; i < num_workers; ++i)
        workers_.emplace_back([this] { worker_loop(); });
}

void ThreadPool::stop() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_)
        t.join();
    workers_.clear();
}

void ThreadPool::work_on(Job* job) {
    for (;;) {
        const int64_t task = job->next.fetch_add(1, std::memory_order_relaxed);
        if (task >= job->num_tasks)
            return;
        try {
            (*job->fn)(task);
        } catch (...) {
            std::lock_guard<std::mutex> lock(job->error_mu);
            if (!job->error)
                job->error = std::current_exception();
        }
        job->done.fetch_add(1, std::memory_order_acq_rel);
    }
}

void ThreadPool::worker_loop() {
    tls_in_worker = true;
    uint64_t seen = 0;
    for (;;) {
        Job* job = nullptr;
        {
            std::unique_lock<std::mutex> lock(mu_);
            wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
            if (stopping_)
                return;
            seen = generation_;
            if (job_ == nullptr)
                continue;  // woke after the job was already finished
            job = job_;
            ++active_;
        }
        work_on(job);
        {
            std::lock_guard<std::mutex> lock(mu_);
            --active_;
        }
        idle_.notify_all();
    }
}

void ThreadPool::run(int64_t num_tasks, const std::function<void(int64_t)>& fn) {
    if (num_tasks <= 0)
        return;
    std::unique_lock<std::mutex> own(run_mu_, std::try_to_lock);
    if (tls_in_worker || !own.owns_lock() || workers_.empty() || num_tasks == 1 ||
        g_forked.load()) {
        for (int64_t t = 0; t < num_tasks; ++t)
            fn(t);
        return;
    }
    Job job;
    job.fn = &fn;
    job.num_tasks = num_tasks;
    {
        std::lock_guard<std::mutex> lock(mu_);
        job_ = &job;
        ++generation_;
    }
    wake_.notify_all();
    // The caller works as well; it is marked as a worker meanwhile so that nested calls from
    // its tasks run inline like the workers' do.
    tls_in_worker = true;
    work_on(&job);
    tls_in_worker = false;
    {
        std::unique_lock<std::mutex> lock(mu_);
        idle_.wait(lock, [&] { return active_ == 0 && job.done.load() == job.num_tasks; });
        job_ = nullptr;
    }
    if (job.error)
        std::rethrow_exception(job.error);
}

}  // namespace embcache
