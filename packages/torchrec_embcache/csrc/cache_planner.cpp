#include "cache_planner.h"

#include <stdexcept>

#include <string>
#include <unordered_set>

namespace embcache {

namespace {
constexpr int64_t kNoKey = -1;  // slot_used_ says whether slot_key_ is meaningful
}

// ---------------------------------------------------------------------------------------
// PlanHandle

std::shared_ptr<SwapPlan> PlanHandle::wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    if (error_)
        std::rethrow_exception(error_);
    return plan_;
}

bool PlanHandle::ready() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
}

void PlanHandle::finish(std::shared_ptr<SwapPlan> plan, std::exception_ptr error) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        plan_ = std::move(plan);
        error_ = error;
        done_ = true;
    }
    cv_.notify_all();
}

// ---------------------------------------------------------------------------------------
// CachePlanner

CachePlanner::CachePlanner(std::shared_ptr<HostTable> table, int64_t num_slots)
    : table_(std::move(table)),
      num_slots_(num_slots),
      first_slot_(table_->config().admit_threshold > 1 ? 1 : 0) {
    if (num_slots_ <= first_slot_) {
        throw std::invalid_argument("the device cache needs at least " +
                                    std::to_string(first_slot_ + 1) + " slots, got " +
                                    std::to_string(num_slots_));
    }
    slot_of_.reserve(num_slots_);
    slot_key_.assign(num_slots_, kNoKey);
    slot_used_.assign(num_slots_, 0);
    dirty_.assign(num_slots_, 0);
    prev_.assign(num_slots_ + 1, num_slots_);
    next_.assign(num_slots_ + 1, num_slots_);
    // Free slots are taken from the tail; queue them so that they fill in ascending order.
    for (int64_t s = first_slot_; s < num_slots_; ++s)
        lru_push_front(s);
}

CachePlanner::~CachePlanner() {
    {
        std::lock_guard<std::mutex> lock(seq_mu_);
        stopping_ = true;
    }
    seq_cv_.notify_all();
    if (worker_.joinable())
        worker_.join();
}

void CachePlanner::lru_unlink(int64_t s) {
    next_[prev_[s]] = next_[s];
    prev_[next_[s]] = prev_[s];
}

// The list is circular through the sentinel num_slots_: the front follows it, the back precedes it.
void CachePlanner::lru_push_front(int64_t s) {
    lru_insert_after(num_slots_, s);
}

void CachePlanner::lru_push_back(int64_t s) {
    lru_insert_after(prev_[num_slots_], s);
}

void CachePlanner::lru_insert_after(int64_t after, int64_t s) {
    prev_[s] = after;
    next_[s] = next_[after];
    prev_[next_[after]] = s;
    next_[after] = s;
}

void CachePlanner::free_slot(int64_t s) {
    slot_of_.erase(slot_key_[s], id_hash(slot_key_[s]));
    slot_key_[s] = kNoKey;
    slot_used_[s] = 0;
    dirty_[s] = 0;
    lru_unlink(s);
    lru_push_back(s);
}

std::shared_ptr<PlanHandle> CachePlanner::submit(std::vector<int64_t> ids) {
    auto handle = std::make_shared<PlanHandle>();
    {
        std::lock_guard<std::mutex> lock(seq_mu_);
        if (!worker_.joinable())
            worker_ = std::thread([this] { worker_loop(); });
        queue_.push_back(Request{++submitted_, std::move(ids), handle});
    }
    seq_cv_.notify_all();
    return handle;
}

void CachePlanner::written_back(int64_t seq) {
    {
        std::lock_guard<std::mutex> lock(seq_mu_);
        if (seq != written_back_ + 1) {
            throw StateError("swap plans must be executed in order: plan " + std::to_string(seq) +
                             " reported after plan " + std::to_string(written_back_));
        }
        written_back_ = seq;
    }
    seq_cv_.notify_all();
}

int64_t CachePlanner::outstanding() const {
    std::lock_guard<std::mutex> lock(seq_mu_);
    return submitted_ - written_back_;
}

void CachePlanner::require_idle(const char* what) const {
    const int64_t n = outstanding();
    if (n != 0) {
        throw StateError(std::string(what) +
                         " needs every submitted training batch to have run, but " +
                         std::to_string(n) +
                         " prefetched batch(es) are still pending; run their forward passes first");
    }
}

void CachePlanner::worker_loop() {
    for (;;) {
        Request req;
        {
            std::unique_lock<std::mutex> lock(seq_mu_);
            seq_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (stopping_)
                return;
            req = std::move(queue_.front());
            queue_.pop_front();
        }
        process(req);
    }
}

void CachePlanner::process(Request& req) {
    std::shared_ptr<SwapPlan> plan;
    std::exception_ptr error;
    try {
        plan = compute(req);
    } catch (...) {
        error = std::current_exception();
    }
    // Incoming rows are read only after the previous plan's victims reached the host.
    {
        std::unique_lock<std::mutex> lock(seq_mu_);
        seq_cv_.wait(lock, [&] { return stopping_ || written_back_ >= req.seq - 1; });
        if (stopping_) {
            req.handle->finish(
                nullptr, std::make_exception_ptr(StateError("the device cache was destroyed")));
            return;
        }
        if (error) {
            // A failed plan changed nothing and has nothing to write back: let later plans proceed.
            written_back_ = req.seq;
        }
    }
    if (error) {
        seq_cv_.notify_all();
        req.handle->finish(nullptr, error);
        return;
    }
    try {
        plan->in_rows.resize(plan->in_ids.size() * static_cast<size_t>(table_->row_width()));
        table_->read_rows(plan->in_ids.data(), static_cast<int64_t>(plan->in_ids.size()),
                          plan->in_rows.data());
    } catch (...) {
        error = std::current_exception();
    }
    req.handle->finish(error ? nullptr : plan, error);
}

std::shared_ptr<SwapPlan> CachePlanner::compute(const Request& req) {
    std::lock_guard<std::mutex> lock(state_mu_);
    PreparedBatch prep = table_->prepare(req.ids.data(), static_cast<int64_t>(req.ids.size()),
                                         /*train=*/true, /*gather=*/false, usable_slots());
    auto plan = std::make_shared<SwapPlan>();
    plan->seq = req.seq;
    plan->step = prep.step;
    plan->evicted = std::move(prep.evicted);

    // Rows evicted from the host table lose their slot without a write-back.
    for (int64_t key : plan->evicted) {
        const int64_t* s = slot_of_.find(key, id_hash(key));
        if (s != nullptr)
            free_slot(*s);
    }

    const int64_t U = static_cast<int64_t>(prep.unique_ids.size());
    plan->unique_slots.assign(U, first_slot_ > 0 ? 0 : -1);
    // Hits move to the front first, so the victims taken from the tail below can never be a
    // row of this batch (the batch fits: prepare() checked U <= usable slots).
    std::vector<int64_t> misses;
    for (int64_t u = 0; u < U; ++u) {
        if (!prep.has_row[u])
            continue;
        const int64_t key = prep.unique_ids[u];
        const int64_t* s = slot_of_.find(key, id_hash(key));
        if (s == nullptr) {
            misses.push_back(u);
            continue;
        }
        plan->unique_slots[u] = *s;
        dirty_[*s] = 1;  // a training batch updates it
        lru_unlink(*s);
        lru_push_front(*s);
    }
    for (int64_t u : misses) {
        const int64_t key = prep.unique_ids[u];
        const int64_t v = prev_[num_slots_];  // least recently used
        if (slot_used_[v]) {
            if (dirty_[v]) {
                plan->out_ids.push_back(slot_key_[v]);
                plan->out_slots.push_back(v);
            }
            slot_of_.erase(slot_key_[v], id_hash(slot_key_[v]));
        }
        slot_key_[v] = key;
        slot_used_[v] = 1;
        dirty_[v] = 1;
        bool inserted = false;
        *slot_of_.find_or_insert(key, id_hash(key), v, &inserted) = v;
        lru_unlink(v);
        lru_push_front(v);
        plan->unique_slots[u] = v;
        plan->in_ids.push_back(key);
        plan->in_slots.push_back(v);
    }
    // The batch's rows end up most recent in ascending id order (the largest id first), hits
    // and misses alike. The recency order then does not depend on the number of slots, so a
    // cache of S slots holds exactly the S most recent rows of one order for every S: what
    // lets the sizing helper (torchrec_embcache.sizing) compute hit rates for all sizes at once.
    for (int64_t u = 0; u < U; ++u) {
        if (!prep.has_row[u])
            continue;
        lru_unlink(plan->unique_slots[u]);
        lru_push_front(plan->unique_slots[u]);
    }
    plan->unique_ids = std::move(prep.unique_ids);
    plan->inverse = std::move(prep.inverse);
    plan->has_row = std::move(prep.has_row);
    return plan;
}

EvalLookup CachePlanner::lookup_eval(const int64_t* ids, int64_t n) {
    require_idle("an evaluation lookup through the device cache");
    std::lock_guard<std::mutex> lock(state_mu_);
    PreparedBatch prep = table_->prepare(ids, n, /*train=*/false, /*gather=*/true);
    EvalLookup out;
    const int64_t U = static_cast<int64_t>(prep.unique_ids.size());
    out.slots.assign(U, -1);
    for (int64_t u = 0; u < U; ++u) {
        const int64_t* s = slot_of_.find(prep.unique_ids[u], id_hash(prep.unique_ids[u]));
        if (s != nullptr)
            out.slots[u] = *s;
    }
    out.unique_ids = std::move(prep.unique_ids);
    out.inverse = std::move(prep.inverse);
    out.rows = std::move(prep.rows);
    return out;
}

void CachePlanner::dirty_rows(std::vector<int64_t>* ids, std::vector<int64_t>* slots) {
    require_idle("writing the device cache back");
    std::lock_guard<std::mutex> lock(state_mu_);
    for (int64_t s = first_slot_; s < num_slots_; ++s) {
        if (slot_used_[s] && dirty_[s]) {
            ids->push_back(slot_key_[s]);
            slots->push_back(s);
        }
    }
}

void CachePlanner::mark_clean() {
    std::lock_guard<std::mutex> lock(state_mu_);
    std::fill(dirty_.begin(), dirty_.end(), 0);
}

void CachePlanner::reset() {
    require_idle("resetting the device cache");
    std::lock_guard<std::mutex> lock(state_mu_);
    for (int64_t s = first_slot_; s < num_slots_; ++s) {
        if (slot_used_[s])
            free_slot(s);
    }
}

void CachePlanner::forget(const int64_t* ids, int64_t n) {
    require_idle("dropping rows from the device cache");
    std::lock_guard<std::mutex> lock(state_mu_);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t* s = slot_of_.find(ids[i], id_hash(ids[i]));
        if (s != nullptr)
            free_slot(*s);
    }
}

std::vector<int64_t> CachePlanner::slots_of(const int64_t* ids, int64_t n) {
    std::lock_guard<std::mutex> lock(state_mu_);
    std::vector<int64_t> out(n, -1);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t* s = slot_of_.find(ids[i], id_hash(ids[i]));
        if (s != nullptr)
            out[i] = *s;
    }
    return out;
}

int64_t CachePlanner::resident_count() {
    std::lock_guard<std::mutex> lock(state_mu_);
    return slot_of_.size();
}

std::vector<int64_t> CachePlanner::resident_ids() {
    require_idle("listing the device cache's rows");
    std::lock_guard<std::mutex> lock(state_mu_);
    std::vector<int64_t> out;
    out.reserve(slot_of_.size());
    // The list runs from the most recent (next_ of the sentinel) to the least recent.
    for (int64_t s = prev_[num_slots_]; s != num_slots_; s = prev_[s]) {
        if (slot_used_[s])
            out.push_back(slot_key_[s]);
    }
    return out;
}

void CachePlanner::restore(const int64_t* ids, int64_t n, std::vector<int64_t>* kept,
                           std::vector<int64_t>* slots) {
    require_idle("restoring the device cache");
    const std::vector<uint8_t> held = table_->contains(ids, n);
    std::lock_guard<std::mutex> lock(state_mu_);
    if (slot_of_.size() != 0)
        throw std::runtime_error("restoring the device cache needs an empty cache");
    // From the most recent back, so that of too many ids the most recent stay; a repeated id
    // counts once (at its most recent place).
    std::vector<int64_t> chosen;
    std::unordered_set<int64_t> taken;
    for (int64_t i = n - 1; i >= 0 && static_cast<int64_t>(chosen.size()) < usable_slots(); --i) {
        if (held[i] && taken.insert(ids[i]).second)
            chosen.push_back(ids[i]);
    }
    // Least recent first again: each pushed to the front ends up behind the ones after it.
    for (auto it = chosen.rbegin(); it != chosen.rend(); ++it) {
        const int64_t key = *it;
        const int64_t v = prev_[num_slots_];  // a free slot: the cache started empty
        slot_key_[v] = key;
        slot_used_[v] = 1;
        dirty_[v] = 0;  // the host copy is current
        bool inserted = false;
        *slot_of_.find_or_insert(key, id_hash(key), v, &inserted) = v;
        lru_unlink(v);
        lru_push_front(v);
        kept->push_back(key);
        slots->push_back(v);
    }
}

}  // namespace embcache
