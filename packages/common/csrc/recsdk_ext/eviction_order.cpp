#include "recsdk_ext/eviction_order.h"

namespace recsdk_ext {

void EvictionOrder::clear() {
    prev_.clear();
    next_.clear();
    bucket_of_.clear();
    buckets_.clear();
    free_buckets_.clear();
    first_ = last_ = kNone;
}

void EvictionOrder::ensure_rows(int64_t rows) {
    if (static_cast<int64_t>(prev_.size()) >= rows)
        return;
    prev_.resize(static_cast<size_t>(rows), kNone);
    next_.resize(static_cast<size_t>(rows), kNone);
    bucket_of_.resize(static_cast<size_t>(rows), kNone);
}

size_t EvictionOrder::memory_bytes() const {
    return (prev_.capacity() + next_.capacity() + bucket_of_.capacity()) * sizeof(int32_t) +
           buckets_.capacity() * sizeof(Bucket) + free_buckets_.capacity() * sizeof(int32_t);
}

int32_t EvictionOrder::new_bucket(uint32_t key, int32_t prev, int32_t next) {
    int32_t b;
    if (!free_buckets_.empty()) {
        b = free_buckets_.back();
        free_buckets_.pop_back();
    } else {
        b = static_cast<int32_t>(buckets_.size());
        buckets_.push_back({});
    }
    buckets_[b] = Bucket{key, kNone, kNone, prev, next};
    if (prev == kNone) {
        first_ = b;
    } else {
        buckets_[prev].next = b;
    }
    if (next == kNone) {
        last_ = b;
    } else {
        buckets_[next].prev = b;
    }
    return b;
}

void EvictionOrder::free_bucket(int32_t b) {
    const Bucket& k = buckets_[b];
    if (k.prev == kNone) {
        first_ = k.next;
    } else {
        buckets_[k.prev].next = k.next;
    }
    if (k.next == kNone) {
        last_ = k.prev;
    } else {
        buckets_[k.next].prev = k.prev;
    }
    free_buckets_.push_back(b);
}

void EvictionOrder::append(int32_t b, int32_t row) {
    Bucket& k = buckets_[b];
    prev_[row] = k.tail;
    next_[row] = kNone;
    if (k.tail == kNone) {
        k.head = row;
    } else {
        next_[k.tail] = row;
    }
    k.tail = row;
    bucket_of_[row] = b;
}

bool EvictionOrder::detach(int32_t row) {
    Bucket& k = buckets_[bucket_of_[row]];
    if (prev_[row] == kNone) {
        k.head = next_[row];
    } else {
        next_[prev_[row]] = next_[row];
    }
    if (next_[row] == kNone) {
        k.tail = prev_[row];
    } else {
        prev_[next_[row]] = prev_[row];
    }
    bucket_of_[row] = kNone;
    return k.head == kNone;
}

void EvictionOrder::add_first(int32_t row, uint32_t key) {
    int32_t b = first_;
    if (b == kNone || buckets_[b].key != key)
        b = new_bucket(key, kNone, first_);
    append(b, row);
}

void EvictionOrder::add_last(int32_t row, uint32_t key) {
    int32_t b = last_;
    if (b == kNone || buckets_[b].key != key)
        b = new_bucket(key, last_, kNone);
    append(b, row);
}

void EvictionOrder::insert(int32_t row, uint32_t key) {
    int32_t prev = kNone;
    int32_t b = first_;
    while (b != kNone && buckets_[b].key < key) {
        prev = b;
        b = buckets_[b].next;
    }
    if (b == kNone || buckets_[b].key != key)
        b = new_bucket(key, prev, b);
    append(b, row);
}

void EvictionOrder::touch(int32_t row, uint32_t key) {
    const int32_t b = bucket_of_[row];
    int32_t to = b;
    if (buckets_[b].key != key) {
        int32_t prev = b;
        to = buckets_[b].next;
        while (to != kNone && buckets_[to].key < key) {
            prev = to;
            to = buckets_[to].next;
        }
        if (to == kNone || buckets_[to].key != key)
            to = new_bucket(key, prev, to);
    }
    // Detach after the target exists: `b` may be freed, and the target was linked after it.
    if (detach(row) && to != b)
        free_bucket(b);
    append(to, row);
}

void EvictionOrder::unlink(int32_t row) {
    const int32_t b = bucket_of_[row];
    if (detach(row))
        free_bucket(b);
}

}  // namespace recsdk_ext
