// Open-addressing hash map from int64 ids to a small value, with linear probing: hybrid's id
// mapper partitions and embcache's host-table shards, device-cache slot map and batch
// de-duplication.
//
// Key and value share one slot (16 bytes for every value in use), so a successful probe
// usually costs one cache line: the probe is on the path of every lookup. Every int64 is a
// valid id (negative ids included), so emptiness is encoded in the value (Traits::is_empty),
// not in the key or a separate control array. Erasure shifts the rest of the probe run back
// instead of leaving tombstones, so tables that evict for months do not slow down.
//
// Traits says what a value is and where an id's probe starts (its home slot), given `h` =
// id_hash(id) (or any value with the same bits where the map reads them):
//   using Value = ...;
//   static constexpr Value empty();
//   static bool is_empty(const Value&);
//   static constexpr bool kHomeFromTopBits;
// kHomeFromTopBits: the top bits of h times the golden gamma, for callers that route or shard
// ids by some bits of h (on one rank or shard those bits are nearly constant, and a map indexed
// by them would pile every id into a few probe runs); otherwise h's low bits, for callers that
// keep only the low 32 bits of the hash (hybrid: a map holds at most 2^32 slots) and have
// already spent the top bits on the partition.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "recsdk_ext/id_hash.h"

namespace recsdk_ext {

template <class Traits>
class FlatMap {
public:
    using Value = typename Traits::Value;
    struct Slot {
        int64_t key;
        Value value;
    };
    static constexpr uint64_t kAbsent = ~uint64_t{0};

    // Grow when the load would exceed 7/10: linear probing stays short below that.
    static constexpr uint64_t kLoadNum = 7;
    static constexpr uint64_t kLoadDen = 10;

    int64_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    uint64_t capacity() const { return slots_.size(); }
    size_t memory_bytes() const { return slots_.capacity() * sizeof(Slot); }
    // Cache lines of the slot array.
    uint64_t lines() const { return slots_.size() * sizeof(Slot) / 64; }

    void clear() {
        std::vector<Slot>().swap(slots_);
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
        if (size_ == 0)
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

    // The value slot of `key`, inserting `init` if absent; `inserted` tells which. The pointer
    // is valid until the next insertion or erasure.
    Value* find_or_insert(int64_t key, uint64_t h, const Value& init, bool* inserted) {
        grow_for_one_more();
        for (uint64_t i = home(h);; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (Traits::is_empty(s.value)) {
                s = Slot{key, init};
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

    // Inserts a key known to be absent (no comparison of keys on the way).
    void insert_new(int64_t key, uint64_t h, const Value& value) {
        grow_for_one_more();
        uint64_t i = home(h);
        while (!Traits::is_empty(slots_[i].value))
            i = (i + 1) & mask_;
        slots_[i] = Slot{key, value};
        ++size_;
    }

    bool erase(int64_t key, uint64_t h) {
        if (size_ == 0)
            return false;
        uint64_t hole = home(h);
        for (;; hole = (hole + 1) & mask_) {
            const Slot& s = slots_[hole];
            if (Traits::is_empty(s.value))
                return false;
            if (s.key == key)
                break;
        }
        // Move each later entry of the run whose home is not inside (hole, j] into the hole,
        // so that every remaining key stays reachable from its home without tombstones.
        for (uint64_t j = (hole + 1) & mask_;; j = (j + 1) & mask_) {
            const Slot& s = slots_[j];
            if (Traits::is_empty(s.value))
                break;
            const uint64_t from = home(id_hash(s.key));
            if (((j - from) & mask_) >= ((j - hole) & mask_)) {
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

    // Address of the slot a probe for `h` starts at, for software prefetching.
    const void* probe_address(uint64_t h) const {
        return slots_.empty() ? nullptr : &slots_[home(h)];
    }

    // The slot array's bytes.
    std::pair<const char*, const char*> span() const {
        const char* p = reinterpret_cast<const char*>(slots_.data());
        return {p, p + slots_.size() * sizeof(Slot)};
    }

    // Starts loading the whole slot array, in address order, with the intent to write.
    void prefetch_all() const {
        const auto [begin, end] = span();
        for (const char* p = begin; p < end; p += 64)
            __builtin_prefetch(p, 1);
    }

    // The slots of a non-empty map, for loops that probe it many times without changing its
    // size: its fields stay in registers, where the map's own would be reloaded after every
    // store of a small value (which might alias them, as far as the compiler knows).
    class Probe {
    public:
        explicit Probe(FlatMap& m) : slots_(m.slots_.data()), mask_(m.mask_), shift_(m.shift_) {}
        // The index of `key`'s slot, or kAbsent. Indices stay valid until the next insertion
        // or erasure.
        uint64_t locate(int64_t key, uint64_t h) const {
            for (uint64_t i = home_of(h, mask_, shift_);; i = (i + 1) & mask_) {
                const Slot& s = slots_[i];
                if (Traits::is_empty(s.value))
                    return kAbsent;
                if (s.key == key)
                    return i;
            }
        }
        Value& value(uint64_t i) const { return slots_[i].value; }
        // Starts loading the slot a probe for `h` begins at, with the intent to write: the
        // probe may update the value, and a line fetched for reading would need a second
        // transaction to become writable.
        void prefetch_for_update(uint64_t h) const {
            __builtin_prefetch(slots_ + home_of(h, mask_, shift_), 1);
        }

    private:
        Slot* slots_;
        uint64_t mask_;
        unsigned shift_;
    };

private:
    static uint64_t home_of(uint64_t h, uint64_t mask, unsigned shift) {
        if constexpr (Traits::kHomeFromTopBits) {
            return (h * kGoldenGamma) >> shift;
        } else {
            return h & mask;
        }
    }
    uint64_t home(uint64_t h) const { return home_of(h, mask_, shift_); }

    void grow_for_one_more() {
        if ((static_cast<uint64_t>(size_) + 1) * kLoadDen > slots_.size() * kLoadNum)
            rehash(slots_.empty() ? 16 : slots_.size() * 2);
    }

    void rehash(uint64_t capacity) {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(capacity, Slot{0, Traits::empty()});
        mask_ = capacity - 1;
        shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
        for (const Slot& s : old) {
            if (Traits::is_empty(s.value))
                continue;
            uint64_t i = home(id_hash(s.key));
            while (!Traits::is_empty(slots_[i].value))
                i = (i + 1) & mask_;
            slots_[i] = s;
        }
    }

    std::vector<Slot> slots_;
    uint64_t mask_ = 0;
    unsigned shift_ = 63;  // 64 - log2(capacity); a shift by 64 would be undefined
    int64_t size_ = 0;
};

}  // namespace recsdk_ext
