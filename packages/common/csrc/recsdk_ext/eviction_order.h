// The order in which a table gives up rows, shared by both cores (hybrid's mapper, embcache's
// host-table shards): a list of rows grouped into buckets by key, buckets ascending by key,
// rows within a bucket in the order they took that key.
//
// The key is the policy. LRU uses one key for every row (hybrid) or the step a row was last
// seen at (embcache, whose TTL pass reads the expired rows off the front), so the list is
// plain recency order. LFU keys a row by its frequency; a row that occurs again moves to the
// end of its new key's bucket. A frequency that grows by one finds that bucket as the current
// one's neighbour (or inserts it there): the update is O(1). A jump by k walks at most k
// buckets. Victims are read from the front without a scan, and the order is exact (no
// sampling), so it can be tested against a reference and rebuilt from a checkpoint exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace recsdk_ext {

class EvictionOrder {
public:
    static constexpr int32_t kNone = -1;

    void clear();
    void ensure_rows(int64_t rows);

    // Adds `row` at the end of the bucket of `key`; `key` must be <= the smallest key present
    // (new rows get the lowest frequency).
    void add_first(int32_t row, uint32_t key);
    // Adds `row` at the very end; `key` must be >= the largest key present (used to rebuild
    // the order from a list already in eviction order).
    void add_last(int32_t row, uint32_t key);
    // Adds `row` at the end of the bucket of `key`, wherever that is; walks the buckets below
    // `key`, so it is cheap when few keys are smaller (new rows of a frequency order).
    void insert(int32_t row, uint32_t key);
    // Moves `row` to the end of the bucket of `key` (>= its current key).
    void touch(int32_t row, uint32_t key);
    // Moves `row` to the very end under `key` (>= the largest key present): a recency order
    // keyed by step.
    void move_last(int32_t row, uint32_t key) {
        unlink(row);
        add_last(row, key);
    }
    bool contains(int32_t row) const {
        return row < static_cast<int32_t>(bucket_of_.size()) && bucket_of_[row] != kNone;
    }
    void unlink(int32_t row);

    int32_t first_bucket() const { return first_; }
    int32_t next_bucket(int32_t b) const { return buckets_[b].next; }
    int32_t bucket_head(int32_t b) const { return buckets_[b].head; }
    uint32_t bucket_key(int32_t b) const { return buckets_[b].key; }
    int32_t next_row(int32_t row) const { return next_[row]; }

    size_t memory_bytes() const;

private:
    struct Bucket {
        uint32_t key;
        int32_t head, tail, prev, next;
    };

    int32_t new_bucket(uint32_t key, int32_t prev, int32_t next);
    void free_bucket(int32_t b);
    void append(int32_t b, int32_t row);
    // Removes `row` from its bucket; returns whether the bucket is now empty.
    bool detach(int32_t row);

    std::vector<int32_t> prev_, next_, bucket_of_;
    std::vector<Bucket> buckets_;
    std::vector<int32_t> free_buckets_;
    int32_t first_ = kNone, last_ = kNone;
};

}  // namespace recsdk_ext
