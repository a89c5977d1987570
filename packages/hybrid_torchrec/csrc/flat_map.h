// Open-addressing hash map from int64 ids to table rows, one per partition of a mapper.
//
// Id, row and a 32-bit scratch word share one 16-byte slot so that a hit costs one cache
// line. Every int64 is a valid id (negative ids included), so emptiness is marked in the row
// (-1), not in the key. Deletion shifts the rest of the probe run back instead of leaving
// tombstones, so tables that evict for months do not slow down. A map holds at most 2^32
// slots, so the low 32 bits of an id's hash address it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "common.h"

namespace hybrid {

// What addresses an id's slot in the core's hash tables (FlatMap, BatchTable): the low 32
// bits of id_hash(id). Its top bits pick the partition, which all keys of a table
// share; the low bits still spread them over the slots.
inline uint32_t hash_for_slot(int64_t id) {
    return static_cast<uint32_t>(id_hash(id));
}

class FlatMap {
public:
    struct Slot {
        int64_t key;
        int32_t row;     // -1: empty
        uint32_t batch;  // scratch of the current batch; kNoBatch between batches
    };
    static constexpr uint32_t kNoBatch = 0xffffffffu;
    static constexpr uint64_t kAbsent = ~uint64_t{0};

    // Linear probing stays short below this load.
    static constexpr uint64_t kMaxLoadNum = 7;
    static constexpr uint64_t kMaxLoadDen = 10;

    int64_t size() const { return size_; }
    size_t memory_bytes() const { return slots_.capacity() * sizeof(Slot); }
    // Cache lines of the slot array.
    uint64_t lines() const { return slots_.size() * sizeof(Slot) / 64; }

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

    // The slots of a non-empty map, for loops that probe it many times without changing its
    // size: its fields stay in registers, where the map's own would be reloaded after every
    // store of a 32-bit value (which might alias them, as far as the compiler knows).
    class Probe {
    public:
        explicit Probe(FlatMap& m) : slots_(m.slots_.data()), mask_(m.mask_) {}
        // The index of `key`'s slot, or kAbsent. `h` is hash_for_slot(key). Indices stay
        // valid until the next insertion or erasure.
        uint64_t locate(int64_t key, uint32_t h) const {
            for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
                const Slot& s = slots_[i];
                if (s.row < 0)
                    return kAbsent;
                if (s.key == key)
                    return i;
            }
        }
        int32_t row(uint64_t i) const { return slots_[i].row; }
        // Callers that set a scratch word during a batch put kNoBatch back before it ends.
        uint32_t& batch(uint64_t i) const { return slots_[i].batch; }
        // Starts loading the slot a probe for `h` begins at, with the intent to write: the
        // probe may update the slot's scratch word, and a line fetched for reading would need
        // a second transaction to become writable.
        void prefetch_for_update(uint32_t h) const { __builtin_prefetch(slots_ + (h & mask_), 1); }

    private:
        Slot* slots_;
        uint64_t mask_;
    };

    bool empty() const { return size_ == 0; }

    // The row of `key`, or -1. `h` is hash_for_slot(key).
    int64_t find(int64_t key, uint32_t h) const {
        if (size_ == 0)
            return -1;
        for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.row < 0)
                return -1;
            if (s.key == key)
                return s.row;
        }
    }

    // The slot array's bytes.
    std::pair<const char*, const char*> span() const {
        const char* p = reinterpret_cast<const char*>(slots_.data());
        return {p, p + slots_.size() * sizeof(Slot)};
    }

    // Starts loading the whole slot array, in address order.
    void prefetch_all() const {
        const char* p = reinterpret_cast<const char*>(slots_.data());
        const char* end = p + slots_.size() * sizeof(Slot);
        for (; p < end; p += 64)
            __builtin_prefetch(p, 1);
    }

    // Sets every scratch word to kNoBatch.
    void reset_scratch() {
        for (Slot& s : slots_)
            s.batch = kNoBatch;
    }

    // Inserts a key known to be absent.
    void insert_new(int64_t key, uint32_t h, int64_t row) {
        if (static_cast<uint64_t>(size_ + 1) * kMaxLoadDen > slots_.size() * kMaxLoadNum) {
            rehash(slots_.empty() ? 16 : slots_.size() * 2);
        }
        uint64_t i = h & mask_;
        while (slots_[i].row >= 0)
            i = (i + 1) & mask_;
        slots_[i] = Slot{key, static_cast<int32_t>(row), kNoBatch};
        ++size_;
    }

    bool erase(int64_t key, uint32_t h) {
        if (size_ == 0)
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
            const uint64_t from = hash_for_slot(s.key) & mask_;
            if (((j - from) & mask_) >= ((j - hole) & mask_)) {
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
            uint64_t i = hash_for_slot(s.key) & mask_;
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
