// Swap planning for a fixed-size row cache on the compute device.
//
// The device holds `num_slots` rows (embedding + optimiser state). For each training batch
// the planner decides, on the host: the slot of every distinct id, which resident rows
// leave (victims, least recently used first, never a row of the same batch) and which rows
// come in. The device work is then three tensor operations done by the caller:
//   1. rows of out_slots -> host, written back with HostTable::write_rows, then
//      written_back(seq);
//   2. in_rows (gathered here from the host table) -> rows of in_slots;
//   3. lookups and the optimiser update on the batch's slots.
//
// Plans are computed in submission order by a worker thread, so the plan of batch t+1 can
// be computed while batch t trains. The only dependency between batches is handled here:
// plan t+1 reads its incoming rows from the host only after plan t's victims have been
// written back (a row evicted at t and needed again at t+1 must come back with its update).
//
// Host-side state (who is resident, dirty flags) always reflects all submitted plans; the
// device catches up as the caller executes them in order.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common.h"
#include "host_table.h"

namespace embcache {

struct SwapPlan {
    int64_t seq = 0;
    int64_t step = 0;
    std::vector<int64_t> unique_ids;
    std::vector<int64_t> inverse;
    std::vector<int64_t> unique_slots;  // slot per distinct id; the default slot if not admitted
    std::vector<uint8_t> has_row;       // per distinct id: admitted (has a row)
    std::vector<int64_t> out_ids, out_slots;
    std::vector<int64_t> in_ids, in_slots;
    std::vector<float> in_rows;  // [in_ids.size(), row_width]
    std::vector<int64_t> evicted;
};

class PlanHandle {
public:
    // Blocks until the plan is computed; rethrows the planning error, if any.
    std::shared_ptr<SwapPlan> wait();
    bool ready();

private:
    friend class CachePlanner;
    void finish(std::shared_ptr<SwapPlan> plan, std::exception_ptr error);

    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;
    std::shared_ptr<SwapPlan> plan_;
    std::exception_ptr error_;
};

struct EvalLookup {
    std::vector<int64_t> unique_ids;
    std::vector<int64_t> inverse;
    std::vector<float> rows;     // [unique, dim] host values (stale for resident ids)
    std::vector<int64_t> slots;  // resident slot, or -1
};

class CachePlanner {
public:
    CachePlanner(std::shared_ptr<HostTable> table, int64_t num_slots);
    ~CachePlanner();
    CachePlanner(const CachePlanner&) = delete;
    CachePlanner& operator=(const CachePlanner&) = delete;

    int64_t num_slots() const { return num_slots_; }
    const HostTable& table() const { return *table_; }
    // Slot 0 holds the admission default when an admission policy exists; it is never
    // assigned to an id, never written back and never updated.
    int64_t default_slot() const { return first_slot_ > 0 ? 0 : -1; }
    int64_t usable_slots() const { return num_slots_ - first_slot_; }

    // Queues the plan of the next training batch; plans are computed in submission order.
    std::shared_ptr<PlanHandle> submit(std::vector<int64_t> ids);
    // Called once the victims of plan `seq` have been written back to the host table.
    void written_back(int64_t seq);
    // Plans submitted whose write-back has not been reported yet.
    int64_t outstanding() const;

    // Read-only lookup for evaluation; refused while plans are outstanding, because the host
    // copies of their victims are not current yet.
    EvalLookup lookup_eval(const int64_t* ids, int64_t n);
    // Resident rows changed since they were last written back (for flush / checkpoints).
    void dirty_rows(std::vector<int64_t>* ids, std::vector<int64_t>* slots);
    void mark_clean();
    // Forgets every resident row (their host copies must be current or no longer wanted).
    void reset();
    // Forgets the given ids' resident rows, without writing them back (rows deleted from the
    // host table outside a plan).
    void forget(const int64_t* ids, int64_t n);
    // Slot of each id, or -1 if not resident.
    std::vector<int64_t> slots_of(const int64_t* ids, int64_t n);
    int64_t resident_count();
    // The resident ids, least recently used first: what a checkpoint keeps of the cache.
    std::vector<int64_t> resident_ids();
    // Makes ids (least recently used first) resident in an empty cache, clean, in that recency
    // order, so that later plans choose the same victims as before the checkpoint. Ids the host
    // table does not hold are skipped, and of more ids than usable slots only the most recent
    // are kept. Returns the kept ids and their slots; the caller copies their rows in. No
    // sighting, step or admission counter changes.
    void restore(const int64_t* ids, int64_t n, std::vector<int64_t>* kept,
                 std::vector<int64_t>* slots);

private:
    struct Request {
        int64_t seq;
        std::vector<int64_t> ids;
        std::shared_ptr<PlanHandle> handle;
    };

    void worker_loop();
    void process(Request& req);
    std::shared_ptr<SwapPlan> compute(const Request& req);
    void require_idle(const char* what) const;
    void lru_unlink(int64_t s);
    void lru_push_front(int64_t s);
    void lru_push_back(int64_t s);
    void lru_insert_after(int64_t after, int64_t s);
    void free_slot(int64_t s);

    std::shared_ptr<HostTable> table_;
    const int64_t num_slots_;
    const int64_t first_slot_;

    // Resident state, guarded by state_mu_.
    std::mutex state_mu_;
    FlatMap<PositionTraits> slot_of_;
    std::vector<int64_t> slot_key_;
    std::vector<uint8_t> slot_used_;
    std::vector<uint8_t> dirty_;
    std::vector<int64_t> prev_, next_;  // LRU list over slots; index num_slots_ is the sentinel

    // Sequencing, guarded by seq_mu_.
    mutable std::mutex seq_mu_;
    std::condition_variable seq_cv_;
    std::deque<Request> queue_;
    int64_t submitted_ = 0;
    int64_t written_back_ = 0;
    bool stopping_ = false;
    std::thread worker_;
};

}  // namespace embcache
