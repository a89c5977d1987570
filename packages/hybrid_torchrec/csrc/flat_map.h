// Open-addressing hash map from int64 ids to table rows, one per partition of a mapper.
//
// Id, row and a 32-bit scratch word share one 16-byte slot so that a hit costs one cache
// line. Every int64 is a valid id (negative ids included), so emptiness is marked in the row
// (-1), not in the key. Deletion shifts the rest of the probe run back instead of leaving
// tombstones, so tables that evict for months do not slow down. A map holds at most 2^32
// slots, so the low 32 bits of an id's hash address it.
#pragma once

#include <cstdint>
#include <vector>

#include "common.h"

namespace hybrid {

class FlatMap {
public:
    struct Slot {
        int64_t key;
        int32_t row;     // -1: empty
        uint32_t batch;  // scratch of the current batch (the id's distinct index in it)
    };
    static constexpr uint32_t kNoBatch = 0xffffffffu;

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

    // The slot of `key`, or null. `h` is (the low bits of) hash_for_map(key).
    Slot* find_slot(int64_t key, uint64_t h) {
        if (slots_.empty())
            return nullptr;
        for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.row < 0)
                return nullptr;
            if (s.key == key)
                return &s;
        }
    }

    // The row of `key`, or -1.
    int64_t find(int64_t key, uint64_t h) const {
        if (slots_.empty())
            return -1;
        for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.row < 0)
                return -1;
            if (s.key == key)
                return s.row;
        }
    }

    // Starts loading the slot a probe for `h` begins at, with the intent to write: the probe
    // may update the slot's scratch word, and a line fetched for reading would need a second
    // transaction to become writable.
    void prefetch_for_update(uint64_t h) const {
        if (!slots_.empty())
            __builtin_prefetch(slots_.data() + (h & mask_), 1);
    }

    // Inserts a key known to be absent.
    void insert_new(int64_t key, uint64_t h, int64_t row) {
        if (static_cast<uint64_t>(size_ + 1) * kMaxLoadDen > slots_.size() * kMaxLoadNum) {
            rehash(slots_.empty() ? 16 : slots_.size() * 2);
        }
        uint64_t i = h & mask_;
        while (slots_[i].row >= 0)
            i = (i + 1) & mask_;
        slots_[i] = Slot{key, static_cast<int32_t>(row), kNoBatch};
        ++size_;
    }

    bool erase(int64_t key, uint64_t h) {
        if (slots_.empty())
            return false;
        uint64_t hole = h & mask_;
        for (;; hole = (hole + 1) & mask_) {
            const Slot& s = slots_[hole];
            if (s.row < 0)
                return false;
            if (s.key == key)
                break;
        }
        // Move each later entry of the run whose home is not inside (hole, j] into the hole,
        // so that every remaining key stays reachable from its home without tombstones.
        for (uint64_t j = (hole + 1) & mask_;; j = (j + 1) & mask_) {
            const Slot& s = slots_[j];
            if (s.row < 0)
                break;
            const uint64_t home = hash_for_map(s.key) & mask_;
            if (((j - home) & mask_) >= ((j - hole) & mask_)) {
                slots_[hole] = s;
                hole = j;
            }
        }
        slots_[hole].row = -1;
        --size_;
        return true;
    }

private:
    void rehash(uint64_t capacity) {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(capacity, Slot{0, -1, kNoBatch});
        mask_ = capacity - 1;
        for (const Slot& s : old) {
            if (s.row < 0)
                continue;
            uint64_t i = hash_for_map(s.key) & mask_;
            while (slots_[i].row >= 0)
                i = (i + 1) & mask_;
            slots_[i] = s;
        }
    }

    std::vector<Slot> slots_;
    uint64_t mask_ = 0;
    int64_t size_ = 0;
};

}  // namespace hybrid
