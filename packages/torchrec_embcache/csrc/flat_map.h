// Open-addressing hash map from int64 ids to a small value, with linear probing.
//
// Key and value share one 16-byte slot, so a successful probe usually costs a single cache
// line: the probe is on the path of every lookup and must stay cheaper than the row copy
// that follows it. Emptiness is encoded in the value (Traits::is_empty) rather than in a
// separate control array for the same reason. Erasure shifts later entries back instead of
// leaving tombstones, so long-running tables with eviction do not degrade.
//
// The home slot comes from the top bits of the hash times the golden gamma, not from its low
// bits: the sharded collections route ids to ranks by the hash's low bits and the host table to
// its shards by the top bits, so on one rank or shard those bits are (nearly) constant and a map
// indexed by them piles every id into a few probe runs.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "common.h"

namespace embcache {

template <class Traits>
class FlatMap {
public:
    using Value = typename Traits::Value;
    struct Slot {
        int64_t key;
        Value value;
    };

    // Grow when the load would exceed 7/10: linear probing stays short below that.
    static constexpr uint64_t kLoadNum = 7;
    static constexpr uint64_t kLoadDen = 10;

    FlatMap() = default;

    int64_t size() const { return size_; }
    uint64_t capacity() const { return slots_.size(); }
    size_t memory_bytes() const { return slots_.capacity() * sizeof(Slot); }

    void clear() {
        slots_.clear();
        slots_.shrink_to_fit();
        size_ = 0;
        mask_ = 0;
        shift_ = 63;
    }

    // Makes room for `n` entries without further rehashing.
    void reserve(int64_t n) {
        uint64_t cap = 16;
        while (cap * kLoadNum < static_cast<uint64_t>(n) * kLoadDen)
            cap <<= 1;
        if (cap > slots_.size())
            rehash(cap);
    }

    const Value* find(int64_t key, uint64_t h) const {
        if (slots_.empty())
            return nullptr;
        for (uint64_t i = home(h);; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (Traits::is_empty(s.value))
                return nullptr;
            if (s.key == key)
                return &s.value;
        }
    }

    Value* find(int64_t key, uint64_t h) {
        return const_cast<Value*>(static_cast<const FlatMap*>(this)->find(key, h));
    }

    // Address of the slot a probe for `h` starts at, for software prefetching.
    const void* probe_address(uint64_t h) const {
        return slots_.empty() ? nullptr : &slots_[home(h)];
    }

    // Returns the value slot for `key`, inserting `init` if absent; `inserted` tells which.
    // The pointer is valid until the next insertion or erasure.
    Value* find_or_insert(int64_t key, uint64_t h, const Value& init, bool* inserted) {
        if ((static_cast<uint64_t>(size_) + 1) * kLoadDen > slots_.size() * kLoadNum) {
            rehash(slots_.empty() ? 16 : slots_.size() * 2);
        }
        for (uint64_t i = home(h);; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (Traits::is_empty(s.value)) {
                s.key = key;
                s.value = init;
                ++size_;
                *inserted = true;
                return &s.value;
            }
            if (s.key == key) {
                *inserted = false;
                return &s.value;
            }
        }
    }

    bool erase(int64_t key, uint64_t h) {
        if (slots_.empty())
            return false;
        uint64_t i = home(h);
        for (;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (Traits::is_empty(s.value))
                return false;
            if (s.key == key)
                break;
        }
        // Backward-shift: move every later entry of the probe run whose home lies at or before
        // the hole into it, so that lookups never need tombstones.
        uint64_t hole = i;
        for (uint64_t j = (hole + 1) & mask_;; j = (j + 1) & mask_) {
            Slot& s = slots_[j];
            if (Traits::is_empty(s.value))
                break;
            const uint64_t start = home(id_hash(s.key));
            const uint64_t dist_hole = (hole - start) & mask_;
            const uint64_t dist_j = (j - start) & mask_;
            if (dist_hole <= dist_j) {
                slots_[hole] = s;
                hole = j;
            }
        }
        slots_[hole].value = Traits::empty();
        --size_;
        return true;
    }

    template <class F>
    void for_each(F&& fn) const {
        for (const Slot& s : slots_) {
            if (!Traits::is_empty(s.value))
                fn(s.key, s.value);
        }
    }

    template <class F>
    void for_each_mut(F&& fn) {
        for (Slot& s : slots_) {
            if (!Traits::is_empty(s.value))
                fn(s.key, s.value);
        }
    }

private:
    uint64_t home(uint64_t h) const { return (h * kGoldenGamma) >> shift_; }

    void rehash(uint64_t new_cap) {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(new_cap, Slot{0, Traits::empty()});
        mask_ = new_cap - 1;
        shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(new_cap));
        for (const Slot& s : old) {
            if (Traits::is_empty(s.value))
                continue;
            for (uint64_t i = home(id_hash(s.key));; i = (i + 1) & mask_) {
                if (Traits::is_empty(slots_[i].value)) {
                    slots_[i] = s;
                    break;
                }
            }
        }
    }

    std::vector<Slot> slots_;
    uint64_t mask_ = 0;
    unsigned shift_ = 63;  // 64 - log2(capacity); a shift by 64 would be undefined
    int64_t size_ = 0;
};

// id -> row number inside a shard's row store.
struct RowIndexTraits {
    using Value = uint32_t;
    static constexpr Value empty() { return 0xffffffffu; }
    static bool is_empty(Value v) { return v == 0xffffffffu; }
};

// id -> sightings of an id that has not been admitted yet.
struct PendingTraits {
    struct Value {
        uint32_t count;  // 0 marks an empty slot: a pending id has been seen at least once
        uint32_t last_seen;
    };
    static constexpr Value empty() { return Value{0, 0}; }
    static bool is_empty(const Value& v) { return v.count == 0; }
};

// id -> position, for de-duplicating a batch and for the device cache's slot map.
struct PositionTraits {
    using Value = int64_t;
    static constexpr Value empty() { return -1; }
    static bool is_empty(Value v) { return v < 0; }
};

}  // namespace embcache
