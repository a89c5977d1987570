// Open-addressing hash map from int64 ids to int64 values (rows, or batch-local indices).
//
// Id and value share one 16-byte slot so that a hit costs one cache line. Every int64 is a
// valid id (negative ids included), so emptiness is marked in the value (-1), not in the key.
// Deletion shifts the rest of the probe run back instead of leaving tombstones, so tables
// that evict for months do not slow down.
#pragma once

#include <cstdint>
#include <vector>

#include "common.h"

namespace hybrid {

class FlatMap {
public:
    struct Slot {
        int64_t key;
        int64_t value;  // -1: empty
    };

    // Linear probing stays short below this load.
    static constexpr uint64_t kMaxLoadNum = 7;
    static constexpr uint64_t kMaxLoadDen = 10;

    int64_t size() const { return size_; }
    size_t memory_bytes() const { return slots_.capacity() * sizeof(Slot); }

    void clear() {
        std::vector<Slot>().swap(slots_);
        size_ = 0;
        mask_ = 0;
    }

    void reserve(int64_t n) {
        uint64_t cap = 16;
        while (cap * kMaxLoadNum < static_cast<uint64_t>(n) * kMaxLoadDen)
            cap <<= 1;
        if (cap > slots_.size())
            rehash(cap);
    }

    // The value of `key`, or -1. `h` is hash_for_map(key).
    int64_t find(int64_t key, uint64_t h) const {
        if (slots_.empty())
            return -1;
        for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.value < 0)
                return -1;
            if (s.key == key)
                return s.value;
        }
    }

    void prefetch(uint64_t h) const {
        if (!slots_.empty())
            __builtin_prefetch(slots_.data() + (h & mask_));
    }

    // Inserts a key known to be absent.
    void insert_new(int64_t key, uint64_t h, int64_t value) {
        if (static_cast<uint64_t>(size_ + 1) * kMaxLoadDen > slots_.size() * kMaxLoadNum) {
            rehash(slots_.empty() ? 16 : slots_.size() * 2);
        }
        uint64_t i = h & mask_;
        while (slots_[i].value >= 0)
            i = (i + 1) & mask_;
        slots_[i] = Slot{key, value};
        ++size_;
    }

    bool erase(int64_t key, uint64_t h) {
        if (slots_.empty())
            return false;
        uint64_t hole = h & mask_;
        for (;; hole = (hole + 1) & mask_) {
            const Slot& s = slots_[hole];
            if (s.value < 0)
                return false;
            if (s.key == key)
                break;
        }
        // Move each later entry of the run whose home is not inside (hole, j] into the hole,
        // so that every remaining key stays reachable from its home without tombstones.
        for (uint64_t j = (hole + 1) & mask_;; j = (j + 1) & mask_) {
            const Slot& s = slots_[j];
            if (s.value < 0)
                break;
            const uint64_t home = hash_for_map(s.key) & mask_;
            if (((j - home) & mask_) >= ((j - hole) & mask_)) {
                slots_[hole] = s;
                hole = j;
            }
        }
        slots_[hole].value = -1;
        --size_;
        return true;
    }

private:
    void rehash(uint64_t capacity) {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(capacity, Slot{0, -1});
        mask_ = capacity - 1;
        for (const Slot& s : old) {
            if (s.value < 0)
                continue;
            uint64_t i = hash_for_map(s.key) & mask_;
            while (slots_[i].value >= 0)
                i = (i + 1) & mask_;
            slots_[i] = s;
        }
    }

    std::vector<Slot> slots_;
    uint64_t mask_ = 0;
    int64_t size_ = 0;
};

}  // namespace hybrid
