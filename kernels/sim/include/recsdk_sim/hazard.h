// Pipe-hazard checker: the emulation runs a core's instructions in program order, but on the
// device each pipe of a core (Scalar, Vector, the DMA queues MTE1/MTE2/MTE3, Cube, FixPipe)
// runs its own instruction queue, so two calls that touch the same local-memory bytes on
// different pipes race unless something orders them. This header tracks, per buffer and byte
// range, which pipe last wrote it and which pipes read it since, plus the ordering events
// between pipes, and fails a call whose access is not ordered after the conflicting one,
// naming both calls and their kernel lines.
//
// ---- API (for the emulated instructions; every function works on the calling core) --------
//   HzAccess(buf, ptr, bytes, pipe, Acc::kRead|kWrite, call, loc)
//       an instruction on `pipe` reads or writes [ptr, ptr + bytes) of the buffer whose tracker
//       is `buf` (BufSlot::hz: one per TBuf / queue buffer; set buf.base/mem/owner when the
//       buffer is carved so messages can say where the bytes are). Call it once per operand,
//       sources before the destination, before moving the data.
//   HzSetFlag(src, dst, id, call, loc) / HzWaitFlag(src, dst, id, call, loc)
//       SetFlag/WaitFlag<HardEvent::SRC_DST>(id) (queues use them too, with ids they allocate).
//   HzBarrier(pipe) / HzBarrierAll()      PipeBarrier<pipe> / PipeBarrier<PIPE_ALL> (SyncAll).
//   HzAllocEventID / HzFetchEventID / HzReleaseEventID(src, dst, ...)   TPipe's event ids.
//   HzOrder(q, p)   an ordering the toolchain inserts by itself (Q's work so far completes
//                   before P's next instruction).
// Memory spaces plug in by owning a HazardRanges per buffer: UB buffers get theirs from
// TPipe::InitBuffer; L1/L0A/L0B/L0C buffers (Cube) do the same with their own pipes
// (MTE2 GM->L1, MTE1 L1->L0A/L0B, M reading L0A/L0B and writing L0C, FIX reading L0C).
//
// ---- The model (vector clocks over epochs) ------------------------------------------------
// Each pipe P has an epoch counter; an access is recorded as (pipe, epoch). know[P][Q] is the
// newest epoch of Q whose accesses are known to be complete before P's next instruction starts.
//   SetFlag<Q_P>(id): "when Q's preceding instructions have all finished reading and writing,
//     set the flag" (核内同步/SetFlag_WaitFlag_ISASI.md) - the flag captures know[Q] plus
//     Q's current epoch, and Q moves to a new epoch.
//   WaitFlag<Q_P>(id): "P's following instructions wait for the flag" - know[P] absorbs it.
//     Knowledge is transitive: what Q knew when it set the flag was complete before.
//   PipeBarrier<P> (核内同步/PipeBarrier_ISASI.md): all of P's earlier instructions complete
//     before P's later ones - know[P][P] = epoch[P]. PipeBarrier<PIPE_ALL>: every pipe waits
//     for everything issued so far.
// An access by P to bytes last written by Q at epoch e (RAW, WAW), or read by Q at e (WAR), is
// ordered iff know[P][Q] >= e; otherwise it is a hazard, with these exceptions:
// - Q == P == S: "Scalar流水之间的同步由硬件自动保证" (PipeBarrier_ISASI.md).
// - Q == P, write after read: a pipe issues its instructions in order, and an instruction's
//   operands are read before a later instruction of the same queue writes (the reference only
//   asks for barriers within a pipe when destinations overlap or a result is consumed:
//   PipeBarrier_ISASI.md's DataCopy destination overlap and Add -> Mul examples).
// - Same pipe, RAW or WAW (V, MTE2, MTE3, and MTE1/M/FIX for the Cube): a hazard without
//   PipeBarrier<pipe> ("同一流水中虽然指令是顺序执行，但并不意味着后一条指令开始执行时前一条
//   指令执行结束", 核内同步能力概述.md), except what the compiler synchronises (below).
//
// ---- What the toolchain synchronises by itself (not flagged) -------------------------------
// 核内同步/关键特性说明.md, table 1 (AIV, TPipe-TQue programming): with the compiler's
// automatic synchronisation (--cce-auto-sync, on by default in custom-operator projects, which
// is how `recsdk-build ops --target cann` builds these kernels: kernels/cmake sets no
// --cce-auto-sync=off), the compiler inserts every synchronisation between PIPE_S and
// V/MTE2/MTE3 in both directions and the PipeBarrier<PIPE_V> between dependent vector
// instructions; V/MTE2/MTE3 among themselves are synchronised only by the TPipe-TQue framework
// (EnQue/DeQue, AllocTensor/FreeTensor), i.e. only for queue buffers, and same-pipe MTE2/MTE3
// overlaps need a manual PipeBarrier. So, with auto sync on (the default, LaunchState::
// cce_auto_sync), a conflict involving PIPE_S is not an error: the checker does what the
// compiler does at that point - a Set/Wait pair from the earlier pipe to the later one just
// before the instruction (the placement the page's --cce-auto-sync-log example shows) - and a
// V-after-V dependence gets the compiler's PipeBarrier<PIPE_V>. Since the compiler inserts these
// only where the instructions depend on each other, they order nothing else. With auto sync
// off (KernelRun::cce_auto_sync = false, or RECSDK_SIM_CCE_AUTO_SYNC=off in the environment),
// every pipe pair needs the kernel's own synchronisation. Cube pipes (M, MTE1, FIX) get no
// compiler synchronisation ("Cube侧编译器不支持自动插入任何类型的同步").
//
// ---- Granularity --------------------------------------------------------------------------
// Ranges are exact for V, MTE and Cube accesses (a DMA's unified-buffer side is counted in the
// 32-byte blocks it moves). Scalar accesses (GetValue/SetValue, one element each, often in long
// loops at scattered indices) mark the whole tracked segment they fall in instead of splitting
// it, which keeps the per-buffer lists short; the cost is that a scalar access may count as
// touching neighbouring bytes of the same segment (more implicit compiler synchronisation with
// auto sync; with auto sync off, possibly a report for bytes the scalar unit did not touch).
#ifndef RECSDK_SIM_HAZARD_H
#define RECSDK_SIM_HAZARD_H

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "recsdk_sim/runtime.h"

namespace recsdk::sim {

// The pipes of 核内同步能力概述.md, table 1.
enum class Pipe : uint8_t { S = 0, V, M, MTE1, MTE2, MTE3, FIX };
constexpr int kPipes = 7;
constexpr int kEventIds = 8;  // SetFlag_WaitFlag_ISASI.md: event ids 0-7 on Atlas A2/A3

inline const char* PipeShort(Pipe p) {
    static const char* const names[kPipes] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"};
    return names[static_cast<int>(p)];
}

enum class Acc : uint8_t { kRead, kWrite };

// One call's access: its pipe epoch and the call, for messages. epoch 0: none.
struct HzMark {
    uint32_t epoch = 0;
    int32_t line = 0;
    const char* file = nullptr;
    const char* call = nullptr;
    bool operator==(const HzMark& o) const {
        return epoch == o.epoch && line == o.line && file == o.file && call == o.call;
    }
    bool operator!=(const HzMark& o) const { return !(*this == o); }
    std::string Str() const {
        return std::string(call ? call : "?") + (line > 0 ? " at " : " ") + SrcLoc(file ? file : "", line).str();
    }
};

// A byte range [begin, end) with one history: the last write by a non-scalar pipe (exact), the
// last scalar write somewhere in the range (coarse, see above), the last read per pipe.
struct HzSeg {
    uintptr_t begin = 0;
    uintptr_t end = 0;
    Pipe wpipe = Pipe::S;
    HzMark w;
    HzMark sw;
    HzMark r[kPipes];
    bool SameHistory(const HzSeg& o) const {
        if (wpipe != o.wpipe || w != o.w || sw != o.sw) return false;
        for (int i = 0; i < kPipes; ++i) {
            if (r[i] != o.r[i]) return false;
        }
        return true;
    }
};

// The access history of one buffer (a TBuf, or one buffer of a queue), sorted and disjoint.
struct HazardRanges {
    std::vector<HzSeg> segs;
    uintptr_t base = 0;         // the buffer's first byte (for messages)
    uint64_t base_offset = 0;   // its offset in its memory
    const char* mem = "UB";
    const char* owner = "buffer";
    // Scalar fast path: the segment the last scalar access verified, valid while `version`
    // (bumped on every change of `segs`) stays the same.
    uint64_t version = 0;
    uint64_t s_version = ~uint64_t{0};
    size_t s_idx = 0;
};

using HzClock = std::array<uint32_t, kPipes>;

struct HzFlag {
    bool set = false;
    HzClock snap{};
    HzMark by;  // the SetFlag (or queue call) that set it
};

struct HazardState {
    explicit HazardState(bool auto_sync_) : auto_sync(auto_sync_) { epoch.fill(1); }
    bool auto_sync;
    HzClock epoch;
    std::array<HzClock, kPipes> know{};
    HzFlag flags[kPipes][kPipes][kEventIds];
    uint8_t held[kPipes][kPipes] = {};  // AllocEventID'd ids per event (bit i: id i)
};

inline HazardState& Hz() {
    CoreState& c = Core();
    if (!c.hazard) {
        c.hazard = HazardPtr(new HazardState(c.launch->cce_auto_sync), +[](HazardState* h) { delete h; });
    }
    return *c.hazard;
}

inline std::string EventName(Pipe src, Pipe dst) {
    return std::string(PipeShort(src)) + "_" + PipeShort(dst);
}

namespace hz_detail {

inline void Merge(HzClock& into, const HzClock& from) {
    for (int i = 0; i < kPipes; ++i) into[i] = into[i] < from[i] ? from[i] : into[i];
}

// Everything `q` issued so far (and everything it knew complete) becomes known to `p`:
// what one SetFlag<Q_P>/WaitFlag<Q_P> pair does.
inline HzClock Release(HazardState& h, Pipe q) {
    const int qi = static_cast<int>(q);
    HzClock snap = h.know[qi];
    snap[qi] = h.epoch[qi];
    ++h.epoch[qi];
    return snap;
}

inline HzMark MarkOf(HazardState& h, Pipe p, const char* call, const SrcLoc& loc) {
    return HzMark{h.epoch[static_cast<int>(p)], loc.line, loc.file, call};
}

enum class Kind : uint8_t { kRaw, kWaw, kWar };

inline std::string Where(const HazardRanges& r, uintptr_t a, uintptr_t b) {
    std::string s = "bytes [" + std::to_string(a - r.base) + ", " + std::to_string(b - r.base) + ") of a " +
                    r.owner + " buffer";
    if (r.base != 0) s += " at " + std::string(r.mem) + " offset " + std::to_string(r.base_offset);
    return s;
}

[[noreturn]] inline void Report(const HazardRanges& r, const HzSeg& s, uintptr_t a, uintptr_t b, Pipe p, Kind k,
                                Pipe q, const HzMark& earlier, const char* call, const SrcLoc& loc) {
    static const char* const kinds[] = {"read-after-write", "write-after-write", "write-after-read"};
    const uintptr_t lo = a > s.begin ? a : s.begin;
    const uintptr_t hi = b < s.end ? b : s.end;
    const char* verb = k == Kind::kWar ? "read" : "wrote";
    std::string how;
    if (q == p) {
        how = "both on PIPE_" + std::string(PipeShort(p)) +
              ", and a pipe's instructions may overlap: nothing orders them (PipeBarrier<PIPE_" + PipeShort(p) +
              ">() between them, or PipeBarrier<PIPE_ALL>())";
    } else {
        how = "on PIPE_" + std::string(PipeShort(q)) + ", and nothing orders PIPE_" + PipeShort(q) +
              " before PIPE_" + PipeShort(p) + " since (SetFlag/WaitFlag<HardEvent::" + EventName(q, p) +
              ">, a queue's EnQue/DeQue or FreeTensor/AllocTensor, PipeBarrier<PIPE_ALL>() or SyncAll())";
    }
    Fail(call, loc,
         std::string(kinds[static_cast<int>(k)]) + " hazard on " + Where(r, lo, hi) + ": " + earlier.Str() + " " +
             verb + " them " + how);
}

// Is P's access ordered after `m` (an access by Q of kind `k`)? Applies the toolchain's own
// synchronisation where it would insert it; fails otherwise.
inline void Order(HazardState& h, const HazardRanges& r, const HzSeg& s, uintptr_t a, uintptr_t b, Pipe p, Kind k,
                  Pipe q, const HzMark& m, const char* call, const SrcLoc& loc) {
    if (m.epoch == 0) return;
    const int pi = static_cast<int>(p);
    if (h.know[pi][static_cast<int>(q)] >= m.epoch) return;
    if (q == p) {
        if (p == Pipe::S || k == Kind::kWar) return;
        if (p == Pipe::V && h.auto_sync) {  // the compiler's PipeBarrier<PIPE_V>
            h.know[pi][pi] = h.epoch[pi];
            ++h.epoch[pi];
            return;
        }
        Report(r, s, a, b, p, k, q, m, call, loc);
    }
    if (h.auto_sync && (p == Pipe::S || q == Pipe::S)) {  // the compiler's Set/Wait pair
        Merge(h.know[pi], Release(h, q));
        return;
    }
    Report(r, s, a, b, p, k, q, m, call, loc);
}

inline void Check(HazardState& h, const HazardRanges& r, const HzSeg& s, uintptr_t a, uintptr_t b, Pipe p, Acc acc,
                  const char* call, const SrcLoc& loc) {
    // Scalar history first: with auto sync the compiler's S->P synchronisation also carries
    // what the scalar unit had learnt (e.g. that the DMA it waited for finished).
    if (acc == Acc::kRead) {
        if (p != Pipe::S) Order(h, r, s, a, b, p, Kind::kRaw, Pipe::S, s.sw, call, loc);
        Order(h, r, s, a, b, p, Kind::kRaw, s.wpipe, s.w, call, loc);
        return;
    }
    if (p != Pipe::S) {
        Order(h, r, s, a, b, p, Kind::kWaw, Pipe::S, s.sw, call, loc);
        Order(h, r, s, a, b, p, Kind::kWar, Pipe::S, s.r[0], call, loc);
    }
    // Readers before the writer: ordering after a reader usually orders after the write it read
    // too, so the missing reader -> writer synchronisation is the one to report.
    for (int q = 1; q < kPipes; ++q) Order(h, r, s, a, b, p, Kind::kWar, static_cast<Pipe>(q), s.r[q], call, loc);
    Order(h, r, s, a, b, p, Kind::kWaw, s.wpipe, s.w, call, loc);
}

// Records the access on segment `s` (which lies inside the accessed range, or for a scalar
// access overlaps it). Returns whether the history changed.
inline bool Apply(HzSeg& s, Pipe p, Acc acc, const HzMark& m) {
    if (p == Pipe::S) {
        HzMark& slot = acc == Acc::kRead ? s.r[0] : s.sw;
        if (slot == m) return false;
        slot = m;
        return true;
    }
    if (acc == Acc::kRead) {
        HzMark& slot = s.r[static_cast<int>(p)];
        if (slot == m) return false;
        slot = m;
        return true;
    }
    s.wpipe = p;
    s.w = m;
    s.sw = HzMark{};
    for (auto& rd : s.r) rd = HzMark{};
    return true;
}

// Index of the first segment ending after `a`.
inline size_t FirstAfter(const std::vector<HzSeg>& v, uintptr_t a) {
    size_t lo = 0, hi = v.size();
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (v[mid].end <= a) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

inline void MergeAround(std::vector<HzSeg>& v, size_t from, size_t to) {
    if (v.empty()) return;
    size_t k = from > 0 ? from - 1 : 0;
    size_t last = to < v.size() ? to : v.size() - 1;
    while (k < last && k + 1 < v.size()) {
        if (v[k].end == v[k + 1].begin && v[k].SameHistory(v[k + 1])) {
            v[k].end = v[k + 1].end;
            v.erase(v.begin() + static_cast<std::ptrdiff_t>(k) + 1);
            --last;
        } else {
            ++k;
        }
    }
}

}  // namespace hz_detail

// See the API list at the top.
inline void HzAccess(HazardRanges& r, const void* ptr, uint64_t bytes, Pipe p, Acc acc, const char* call,
                     const SrcLoc& loc) {
    using namespace hz_detail;
    if (bytes == 0) return;
    HazardState& h = Hz();
    const uintptr_t a = reinterpret_cast<uintptr_t>(ptr);
    const uintptr_t b = a + bytes;
    std::vector<HzSeg>& v = r.segs;
    const HzMark m = MarkOf(h, p, call, loc);
    if (p == Pipe::S && r.s_version == r.version && r.s_idx < v.size()) {
        const HzSeg& s = v[r.s_idx];
        // The segment's history is what the last scalar check left, and the epoch is the same:
        // the same check would pass again (knowledge only grows).
        if (s.begin <= a && b <= s.end && (acc == Acc::kRead ? s.r[0] : s.sw) == m) return;
    }
    size_t i = FirstAfter(v, a);
    for (size_t k = i; k < v.size() && v[k].begin < b; ++k) Check(h, r, v[k], a, b, p, acc, call, loc);
    const HzMark rec = MarkOf(h, p, call, loc);  // the checks may have moved p to a new epoch
    bool changed = false;
    if (p != Pipe::S) {
        if (i < v.size() && v[i].begin < a) {  // split the segment `a` falls in
            HzSeg right = v[i];
            right.begin = a;
            v[i].end = a;
            v.insert(v.begin() + static_cast<std::ptrdiff_t>(i) + 1, right);
            ++i;
            changed = true;
        }
    }
    const size_t first = i;
    uintptr_t cur = a;
    while (cur < b) {
        if (i < v.size() && v[i].begin <= cur) {
            if (p != Pipe::S && v[i].end > b) {  // split at `b`
                HzSeg right = v[i];
                right.begin = b;
                v[i].end = b;
                v.insert(v.begin() + static_cast<std::ptrdiff_t>(i) + 1, right);
                changed = true;
            }
            changed = Apply(v[i], p, acc, rec) || changed;
            cur = v[i].end;
            ++i;
        } else {  // bytes nothing touched yet
            const uintptr_t gap_end = i < v.size() && v[i].begin < b ? v[i].begin : b;
            HzSeg s;
            s.begin = cur;
            s.end = gap_end;
            Apply(s, p, acc, rec);
            v.insert(v.begin() + static_cast<std::ptrdiff_t>(i), s);
            ++i;
            cur = gap_end;
            changed = true;
        }
    }
    if (changed) {
        MergeAround(v, first, i);
        ++r.version;
    }
    if (p == Pipe::S) {
        const size_t k = FirstAfter(v, a);
        r.s_idx = k;
        r.s_version = r.version;
    }
}

inline void HzSetFlag(Pipe src, Pipe dst, int32_t id, const char* call, const SrcLoc& loc) {
    HazardState& h = Hz();
    HzFlag& f = h.flags[static_cast<int>(src)][static_cast<int>(dst)][id];
    if (f.set) {
        Fail(call, loc,
             "SetFlag<HardEvent::" + EventName(src, dst) + ">(" + std::to_string(id) + ") while the flag is still set by " +
                 f.by.Str() + " with no WaitFlag since: two SetFlag on one event id in a row are undefined "
                 "(SetFlag_WaitFlag_ISASI.md); use another id (TPipe::AllocEventID)");
    }
    f.set = true;
    f.snap = hz_detail::Release(h, src);
    f.by = HzMark{1, loc.line, loc.file, call};
}

inline void HzWaitFlag(Pipe src, Pipe dst, int32_t id, const char* call, const SrcLoc& loc) {
    HazardState& h = Hz();
    HzFlag& f = h.flags[static_cast<int>(src)][static_cast<int>(dst)][id];
    if (!f.set) {
        Fail(call, loc,
             "WaitFlag<HardEvent::" + EventName(src, dst) + "> for event id " + std::to_string(id) +
                 " with no SetFlag before it: the pipe would wait forever");
    }
    f.set = false;
    hz_detail::Merge(h.know[static_cast<int>(dst)], f.snap);
}

inline void HzBarrier(Pipe p) {
    HazardState& h = Hz();
    const int pi = static_cast<int>(p);
    h.know[pi][pi] = h.epoch[pi];
    ++h.epoch[pi];
}

inline void HzBarrierAll() {
    HazardState& h = Hz();
    for (auto& k : h.know) k = h.epoch;
    for (auto& e : h.epoch) ++e;
}

inline void HzOrder(Pipe q, Pipe p) {
    HazardState& h = Hz();
    hz_detail::Merge(h.know[static_cast<int>(p)], hz_detail::Release(h, q));
}

// TPipe teardown, which also runs while an exception unwinds: the WaitFlag and ReleaseEventID
// of an event a queue buffer still holds, and the PIPE_ALL barrier of TPipe::Destroy, without
// checks (nothing may throw there).
inline void HzDrainNoThrow(CoreState& c, Pipe src, Pipe dst, int32_t id) noexcept {
    if (!c.hazard || id < 0 || id >= kEventIds) return;
    HazardState& h = *c.hazard;
    HzFlag& f = h.flags[static_cast<int>(src)][static_cast<int>(dst)][id];
    if (f.set) {
        hz_detail::Merge(h.know[static_cast<int>(dst)], f.snap);
        f.set = false;
    }
    uint8_t& held = h.held[static_cast<int>(src)][static_cast<int>(dst)];
    held = static_cast<uint8_t>(held & ~(1u << id));
}

inline void HzBarrierAllNoThrow(CoreState& c) noexcept {
    if (!c.hazard) return;
    HazardState& h = *c.hazard;
    for (auto& k : h.know) k = h.epoch;
    for (auto& e : h.epoch) ++e;
}

// TPipe/FetchEventID.md: the lowest id not held by AllocEventID; it is not taken.
inline int32_t HzFetchEventID(Pipe src, Pipe dst, const char* call, const SrcLoc& loc) {
    const uint8_t held = Hz().held[static_cast<int>(src)][static_cast<int>(dst)];
    for (int32_t id = 0; id < kEventIds; ++id) {
        if ((held & (1u << id)) == 0) return id;
    }
    Fail(call, loc,
         "all " + std::to_string(kEventIds) + " event ids of HardEvent::" + EventName(src, dst) +
             " are held (AllocEventID without ReleaseEventID, or queue buffers waiting for their events)");
}

// TPipe/AllocEventID.md: takes the id until ReleaseEventID.
inline int32_t HzAllocEventID(Pipe src, Pipe dst, const char* call, const SrcLoc& loc) {
    const int32_t id = HzFetchEventID(src, dst, call, loc);
    Hz().held[static_cast<int>(src)][static_cast<int>(dst)] |= static_cast<uint8_t>(1u << id);
    return id;
}

// TPipe/ReleaseEventID.md: "ReleaseEventID传入的TEventID需由对应的AllocEventID申请而来".
inline void HzReleaseEventID(Pipe src, Pipe dst, int32_t id, const char* call, const SrcLoc& loc) {
    uint8_t& held = Hz().held[static_cast<int>(src)][static_cast<int>(dst)];
    if (id < 0 || id >= kEventIds || (held & (1u << id)) == 0) {
        Fail(call, loc,
             "ReleaseEventID<HardEvent::" + EventName(src, dst) + ">(" + std::to_string(id) +
                 ") of an id AllocEventID did not hand out");
    }
    held = static_cast<uint8_t>(held & ~(1u << id));
}

}  // namespace recsdk::sim

#endif  // RECSDK_SIM_HAZARD_H
