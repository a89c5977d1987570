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
// TPipe::InitBuffer (BufSlot::hz), and so do the L1/L0A/L0B/L0C buffers of the low-level Cube API
// (cube_basic.h: MTE2 GM->L1, MTE1 L1->L0A/L0B, M reading L0A/L0B and writing L0C, FIX reading
// L0C; queue events for those positions are in pipe.h QueueEvent). A HazardRanges belongs to the
// core that carved its buffer (it caches that core's state). The Matmul emulation records only its
// unified-buffer accesses (GetTensorC into VECIN, MTE2) and its TSCM operand reads (MTE1): its own
// L1/L0 traffic is the library's. Global memory across cores (a Cube result read by another core)
// is checked apart, in mix.h (XcoreGmAccess).
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
// V-after-V dependence gets the compiler's PipeBarrier<PIPE_V> (which needs no record: with auto
// sync no vector access depends on what the vector pipe knows of itself). Since the compiler
// inserts these only where the instructions depend on each other, they order nothing else. With
// auto sync off (KernelRun::cce_auto_sync = false, or RECSDK_SIM_CCE_AUTO_SYNC=off in the
// environment), every pipe pair needs the kernel's own synchronisation. Cube pipes (M, MTE1, FIX)
// get no compiler synchronisation ("Cube侧编译器不支持自动插入任何类型的同步").
//
// ---- Where the reference is silent ----------------------------------------------------------
// - Which events a queue issues: asc-devkit's implementation (see pipe.h).
// - SyncAll: a PipeBarrier<PIPE_ALL> of the core (sync.h; dav_c220 SyncAllImpl starts with one).
// - TPipe destruction (and Destroy): PipeBarrier<PIPE_ALL> after waiting for the queue buffers'
//   free events (kernel_tpipe_impl.h ~TPipe -> Destroy); Reset only waits for those events.
// - Write after read on one pipe: ordered (above).
// - Global memory is not tracked: a core's own GM accesses (MTE3 writing what MTE2 reads back,
//   overlapping MTE3 destinations) would need every DMA's GM range kept until both DMA pipes are
//   known past it, and kernels issue millions of scattered DMAs with no MTE3 -> MTE2 ordering in
//   between (invert_permute), so the cost has no bound here.
//
// ---- Granularity --------------------------------------------------------------------------
// Ranges are tracked in whole 32-byte blocks: the unit the unified buffer is addressed in (DMA
// and vector operands start 32-byte aligned, SIMD计算说明/连续计算.md,
// DataCopy_GMAndUB_continuous.md), and a DMA into UB writes whole blocks (DataCopyPad's padding and
// dummy bytes), so two pipes touching one block do conflict. It also keeps a buffer's list short
// when accesses are many and small. Scalar accesses (GetValue/SetValue, one element each, often in
// long loops at scattered indices) go further and mark the whole tracked segment they fall in
// instead of splitting it; the cost is that a scalar access may count as touching neighbouring
// bytes of the same segment (more implicit compiler synchronisation with auto sync; with auto sync
// off, possibly a report for bytes the scalar unit did not touch).
#ifndef RECSDK_SIM_HAZARD_H
#define RECSDK_SIM_HAZARD_H

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "recsdk_sim/runtime.h"

namespace recsdk::sim {

// The pipes of 核内同步能力概述.md, table 1.
enum class Pipe : uint8_t { S = 0, V, M, MTE1, MTE2, MTE3, FIX };
constexpr int kPipes = 7;
constexpr int kEventIds = 8;        // SetFlag_WaitFlag_ISASI.md: event ids 0-7 on Atlas A2/A3
constexpr uintptr_t kHzBlock = 32;  // ranges are tracked in whole blocks of this many bytes

inline const char* PipeShort(Pipe p) {
    static const char* const names[kPipes] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"};
    return names[static_cast<int>(p)];
}

enum class Acc : uint8_t { kRead, kWrite };

// A call site: the API call and the kernel line (messages name both racing calls).
struct HzSite {
    const char* file;
    int32_t line;
    const char* call;
};

// One access: the pipe's epoch and the call site (an index into HazardState::sites). epoch 0:
// none. Eight bytes, so that a buffer's history list stays cheap to splice.
struct HzMark {
    uint32_t epoch = 0;
    uint32_t site = 0;
    bool operator==(const HzMark& o) const { return epoch == o.epoch && site == o.site; }
    bool operator!=(const HzMark& o) const { return !(*this == o); }
};

// A byte range [begin, end) with one history: the last write by a non-scalar pipe (exact), the
// last scalar write somewhere in the range (coarse, see above), the last read per pipe.
struct HzSeg {
    uintptr_t begin = 0;
    uintptr_t end = 0;
    HzMark w;
    HzMark sw;
    HzMark r[kPipes];
    Pipe wpipe = Pipe::S;
    bool SameHistory(const HzSeg& o) const {
        if (wpipe != o.wpipe || w != o.w || sw != o.sw)
            return false;
        for (int i = 0; i < kPipes; ++i) {
            if (r[i] != o.r[i])
                return false;
        }
        return true;
    }
};

struct HazardState;

// The access history of one buffer (a TBuf, or one buffer of a queue), sorted and disjoint.
struct HazardRanges {
    std::vector<HzSeg> segs;
    uintptr_t base = 0;        // the buffer's first byte (for messages)
    uint64_t base_offset = 0;  // its offset in its memory
    const char* mem = "UB";
    const char* owner = "buffer";
    HazardState* state = nullptr;  // the core the buffer belongs to (set on first access)
    // Fast path: per pipe and kind of access, the last one recorded (see HzAccess), valid while
    // `version` (bumped on every change of `segs`) stays the same.
    struct Hint {
        uint64_t version = 0;
        uintptr_t begin = 0;  // the segment it was recorded in
        uintptr_t end = 0;
        uint32_t epoch = 0;
    };
    uint64_t version = 1;
    Hint hint[kPipes][2];
};

using HzClock = std::array<uint32_t, kPipes>;

struct HzFlag {
    bool set = false;
    HzClock snap{};
    double t = 0;     // modelled time (cycles) the source pipe had reached at the set (model.h)
    uint32_t by = 0;  // the site of the SetFlag (or queue call) that set it
};

struct HazardState {
    explicit HazardState(bool auto_sync_) : auto_sync(auto_sync_) {
        epoch.fill(1);
        sites.push_back(HzSite{"", 0, "?"});
        slots.assign(256, 0);
    }
    bool auto_sync;
    HzClock epoch;
    std::array<HzClock, kPipes> know{};
    HzFlag flags[kPipes][kPipes][kEventIds];
    uint8_t held[kPipes][kPipes] = {};  // AllocEventID'd ids per event (bit i: id i)
    std::vector<HzSite> sites;          // interned call sites
    std::vector<uint32_t> slots;        // open-addressing index into sites (0: empty)
    // The cost model's pipe timelines (recsdk_sim/model.h): when each pipe's issued work completes
    // (cycles); every ordering below also orders these times.
    double t[kPipes] = {};

    struct Recent {
        const char* file = nullptr;
        const char* call = nullptr;
        int32_t line = 0;
        uint32_t id = 0;
    };
    Recent recent[64];  // direct-mapped cache in front of the table below

    uint32_t Site(const char* call, const SrcLoc& loc) {
        Recent& c =
            recent[(static_cast<uint32_t>(loc.line) ^ (reinterpret_cast<uintptr_t>(call) >> 4)) &
                   63u];
        if (c.line == loc.line && c.file == loc.file && c.call == call)
            return c.id;
        c = Recent{loc.file, call, loc.line, Intern(call, loc)};
        return c.id;
    }

    uint32_t Intern(const char* call, const SrcLoc& loc) {
        const uintptr_t key = reinterpret_cast<uintptr_t>(loc.file) * 31u +
                              static_cast<uintptr_t>(loc.line) * 131u +
                              reinterpret_cast<uintptr_t>(call);
        size_t mask = slots.size() - 1;
        for (size_t i = (key ^ (key >> 17)) & mask;; i = (i + 1) & mask) {
            const uint32_t at = slots[i];
            if (at == 0)
                break;
            const HzSite& s = sites[at];
            if (s.file == loc.file && s.line == loc.line && s.call == call)
                return at;
        }
        sites.push_back(HzSite{loc.file, loc.line, call});
        const uint32_t id = static_cast<uint32_t>(sites.size() - 1);
        if (sites.size() * 2 > slots.size()) {  // rehash at half load
            slots.assign(slots.size() * 2, 0);
            for (uint32_t k = 1; k < sites.size(); ++k)
                Place(k);
        } else {
            Place(id);
        }
        return id;
    }
    void Place(uint32_t id) {
        const HzSite& s = sites[id];
        const uintptr_t key = reinterpret_cast<uintptr_t>(s.file) * 31u +
                              static_cast<uintptr_t>(s.line) * 131u +
                              reinterpret_cast<uintptr_t>(s.call);
        const size_t mask = slots.size() - 1;
        size_t i = (key ^ (key >> 17)) & mask;
        while (slots[i] != 0)
            i = (i + 1) & mask;
        slots[i] = id;
    }
    std::string Str(uint32_t site) const {
        const HzSite& s = sites[site < sites.size() ? site : 0];
        return std::string(s.call ? s.call : "?") + (s.line > 0 ? " at " : " ") +
               SrcLoc(s.file ? s.file : "", s.line).str();
    }
};

inline HazardState& Hz(CoreState& c) {
    if (!c.hazard) {
        c.hazard =
            HazardPtr(new HazardState(c.launch->cce_auto_sync), +[](HazardState* h) { delete h; });
    }
    return *c.hazard;
}
inline HazardState& Hz() {
    return Hz(Core());
}

inline std::string EventName(Pipe src, Pipe dst) {
    return std::string(PipeShort(src)) + "_" + PipeShort(dst);
}

namespace hz_detail {

inline void Merge(HzClock& into, const HzClock& from) {
    for (int i = 0; i < kPipes; ++i)
        into[i] = into[i] < from[i] ? from[i] : into[i];
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

enum class Kind : uint8_t { kRaw, kWaw, kWar };

inline std::string Where(const HazardRanges& r, uintptr_t a, uintptr_t b) {
    std::string s = "bytes [" + std::to_string(a - r.base) + ", " + std::to_string(b - r.base) +
                    ") of a " + r.owner + " buffer";
    if (r.base != 0)
        s += " at " + std::string(r.mem) + " offset " + std::to_string(r.base_offset);
    return s;
}

[[noreturn]] inline void Report(const HazardState& h, const HazardRanges& r, const HzSeg& s,
                                uintptr_t a, uintptr_t b, Pipe p, Kind k, Pipe q,
                                const HzMark& earlier, const char* call, const SrcLoc& loc) {
    static const char* const kinds[] = {"read-after-write", "write-after-write",
                                        "write-after-read"};
    const uintptr_t lo = a > s.begin ? a : s.begin;
    const uintptr_t hi = b < s.end ? b : s.end;
    const char* verb = k == Kind::kWar ? "read" : "wrote";
    std::string how;
    if (q == p) {
        how = "both on PIPE_" + std::string(PipeShort(p)) +
              ", and a pipe's instructions may overlap: nothing orders them (PipeBarrier<PIPE_" +
              PipeShort(p) + ">() between them, or PipeBarrier<PIPE_ALL>())";
    } else {
        how = "on PIPE_" + std::string(PipeShort(q)) + ", and nothing orders PIPE_" + PipeShort(q) +
              " before PIPE_" + PipeShort(p) +
              " since (SetFlag/WaitFlag<HardEvent::" + EventName(q, p) +
              ">, a queue's EnQue/DeQue or FreeTensor/AllocTensor, PipeBarrier<PIPE_ALL>() or "
              "SyncAll())";
    }
    Fail(call, loc,
         std::string(kinds[static_cast<int>(k)]) + " hazard on " + Where(r, lo, hi) + ": " +
             h.Str(earlier.site) + " " + verb + " them " + how);
}

// P's access is not known to come after `m` (an access by Q of kind `k`): applies the
// toolchain's own synchronisation where it would insert it; fails otherwise.
[[gnu::noinline]] inline void Unordered(HazardState& h, const HazardRanges& r, const HzSeg& s,
                                        uintptr_t a, uintptr_t b, Pipe p, Kind k, Pipe q,
                                        const HzMark& m, const char* call, const SrcLoc& loc) {
    const int pi = static_cast<int>(p);
    if (q == p) {
        if (p == Pipe::S || k == Kind::kWar)
            return;
        // The compiler's PipeBarrier<PIPE_V>. With auto sync on, a vector access never depends on
        // what the vector pipe knows of itself, so the barrier needs no record (and the vector
        // pipe keeps its epoch, which keeps the histories of consecutive vector ops mergeable).
        if (p == Pipe::V && h.auto_sync)
            return;
        Report(h, r, s, a, b, p, k, q, m, call, loc);
    }
    if (h.auto_sync && (p == Pipe::S || q == Pipe::S)) {  // the compiler's Set/Wait pair
        Merge(h.know[pi], Release(h, q));
        h.t[pi] = std::max(h.t[pi], h.t[static_cast<int>(q)]);
        return;
    }
    Report(h, r, s, a, b, p, k, q, m, call, loc);
}

// Is P's access ordered after `m`? (The common answer, yes, without a call.) The scalar unit
// issues every pipe's instructions in program order, so what it has waited for (a WaitFlag to
// PIPE_S, the compiler's V->S pair before a GetValue) is finished for every later instruction of
// any pipe.
inline void Order(HazardState& h, const HazardRanges& r, const HzSeg& s, uintptr_t a, uintptr_t b,
                  Pipe p, Kind k, Pipe q, const HzMark& m, const char* call, const SrcLoc& loc) {
    const int qi = static_cast<int>(q);
    if (m.epoch == 0 || h.know[static_cast<int>(p)][qi] >= m.epoch ||
        h.know[static_cast<int>(Pipe::S)][qi] >= m.epoch)
        return;
    Unordered(h, r, s, a, b, p, k, q, m, call, loc);
}

inline void Check(HazardState& h, const HazardRanges& r, const HzSeg& s, uintptr_t a, uintptr_t b,
                  Pipe p, Acc acc, const char* call, const SrcLoc& loc) {
    // Scalar history first: with auto sync the compiler's S->P synchronisation also carries
    // what the scalar unit had learnt (e.g. that the DMA it waited for finished).
    if (acc == Acc::kRead) {
        if (p != Pipe::S)
            Order(h, r, s, a, b, p, Kind::kRaw, Pipe::S, s.sw, call, loc);
        Order(h, r, s, a, b, p, Kind::kRaw, s.wpipe, s.w, call, loc);
        return;
    }
    if (p != Pipe::S) {
        Order(h, r, s, a, b, p, Kind::kWaw, Pipe::S, s.sw, call, loc);
        Order(h, r, s, a, b, p, Kind::kWar, Pipe::S, s.r[0], call, loc);
    }
    // Readers before the writer: ordering after a reader usually orders after the write it read
    // too, so the missing reader -> writer synchronisation is the one to report.
    for (int q = 1; q < kPipes; ++q)
        Order(h, r, s, a, b, p, Kind::kWar, static_cast<Pipe>(q), s.r[q], call, loc);
    Order(h, r, s, a, b, p, Kind::kWaw, s.wpipe, s.w, call, loc);
}

// The mark a segment keeps of this kind of access by `p`.
inline HzMark& MarkSlot(HzSeg& s, Pipe p, Acc acc) {
    if (acc == Acc::kRead)
        return s.r[static_cast<int>(p)];
    return s.sw;  // only scalar writes are recorded as marks; other writes replace the history
}

inline void SetWrite(HzSeg& s, Pipe p, const HzMark& m) {
    s.wpipe = p;
    s.w = m;
    s.sw = HzMark{};
    for (auto& rd : s.r)
        rd = HzMark{};
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

// Merges equal neighbours among v[from - 1 .. to]; returns how many segments went.
inline size_t MergeAround(std::vector<HzSeg>& v, size_t from, size_t to) {
    if (v.empty())
        return 0;
    size_t k = from > 0 ? from - 1 : 0;
    size_t last = to < v.size() ? to : v.size() - 1;
    size_t w = k;  // compact in place: v[w] is the segment being grown
    size_t gone = 0;
    for (size_t i = k + 1; i <= last; ++i) {
        if (v[w].end == v[i].begin && v[w].SameHistory(v[i])) {
            v[w].end = v[i].end;
            ++gone;
        } else {
            ++w;
            if (w != i)
                v[w] = v[i];
        }
    }
    if (gone != 0)
        v.erase(v.begin() + static_cast<std::ptrdiff_t>(last + 1 - gone),
                v.begin() + static_cast<std::ptrdiff_t>(last + 1));
    return gone;
}

// A write by a non-scalar pipe: [a, b) gets one fresh history; the segments it covers go.
inline void RecordWrite(std::vector<HzSeg>& v, size_t i, uintptr_t a, uintptr_t b, Pipe p,
                        const HzMark& m) {
    // Exactly one segment: its history is replaced in place.
    if (i < v.size() && v[i].begin == a && v[i].end == b) {
        SetWrite(v[i], p, m);
        MergeAround(v, i, i + 1);
        return;
    }
    // Writing on from where the same write left off, inside one segment: move the boundary.
    if (i > 0 && i < v.size() && v[i].begin == a && v[i - 1].end == a && b < v[i].end &&
        v[i - 1].wpipe == p && v[i - 1].w == m && v[i - 1].sw.epoch == 0) {
        bool clean = true;
        for (const auto& rd : v[i - 1].r)
            clean = clean && rd.epoch == 0;
        if (clean) {
            v[i - 1].end = b;
            v[i].begin = b;
            return;
        }
    }
    size_t j = i;
    while (j < v.size() && v[j].begin < b)
        ++j;
    HzSeg nw;
    nw.begin = a;
    nw.end = b;
    SetWrite(nw, p, m);
    HzSeg parts[3];
    size_t n = 0;
    if (i < j && v[i].begin < a) {
        parts[n] = v[i];
        parts[n++].end = a;
    }
    parts[n++] = nw;
    if (i < j && v[j - 1].end > b) {
        parts[n] = v[j - 1];
        parts[n++].begin = b;
    }
    const size_t old = j - i;
    const auto at = v.begin() + static_cast<std::ptrdiff_t>(i);
    if (n <= old) {
        std::copy(parts, parts + n, at);
        v.erase(at + static_cast<std::ptrdiff_t>(n), at + static_cast<std::ptrdiff_t>(old));
    } else {
        std::copy(parts, parts + old, at);
        v.insert(at + static_cast<std::ptrdiff_t>(old), parts + old, parts + n);
    }
    MergeAround(v, i, i + n);
}

// A read by a non-scalar pipe: its mark on exactly [a, b), splitting the segments at the ends
// and filling bytes nothing touched yet.
inline void RecordRead(std::vector<HzSeg>& v, size_t i, uintptr_t a, uintptr_t b, Pipe p,
                       const HzMark& m) {
    const int pi = static_cast<int>(p);
    // Reading on from where the same read left off (consecutive DMAs out of one buffer): move the
    // boundary between the two segments instead of splitting and merging.
    if (i > 0 && i < v.size() && v[i].begin == a && v[i - 1].end == a && b < v[i].end &&
        v[i - 1].r[pi] == m) {
        HzSeg probe = v[i];
        probe.r[pi] = m;
        if (probe.SameHistory(v[i - 1])) {
            v[i - 1].end = b;
            v[i].begin = b;
            return;
        }
    }
    if (i < v.size() && v[i].begin < a) {
        HzSeg right = v[i];
        right.begin = a;
        v[i].end = a;
        v.insert(v.begin() + static_cast<std::ptrdiff_t>(i) + 1, right);
        ++i;
    }
    const size_t first = i;
    uintptr_t cur = a;
    while (cur < b) {
        if (i < v.size() && v[i].begin <= cur) {
            if (v[i].end > b) {
                HzSeg right = v[i];
                right.begin = b;
                v[i].end = b;
                v.insert(v.begin() + static_cast<std::ptrdiff_t>(i) + 1, right);
            }
            v[i].r[static_cast<int>(p)] = m;
            cur = v[i].end;
            ++i;
        } else {
            const uintptr_t gap_end = i < v.size() && v[i].begin < b ? v[i].begin : b;
            HzSeg s;
            s.begin = cur;
            s.end = gap_end;
            s.r[static_cast<int>(p)] = m;
            v.insert(v.begin() + static_cast<std::ptrdiff_t>(i), s);
            ++i;
            cur = gap_end;
        }
    }
    MergeAround(v, first, i);
}

// A scalar access: its mark on every segment [a, b) overlaps (no splitting), and on the bytes
// in between nothing touched yet.
// Returns whether the history changed.
inline bool RecordScalar(std::vector<HzSeg>& v, size_t i, uintptr_t a, uintptr_t b, Acc acc,
                         const HzMark& m) {
    const size_t first = i;
    bool changed = false;
    uintptr_t cur = a;
    while (cur < b) {
        if (i < v.size() && v[i].begin <= cur) {
            HzMark& slot = MarkSlot(v[i], Pipe::S, acc);
            changed = changed || slot != m;
            slot = m;
            cur = v[i].end;
            ++i;
        } else {
            changed = true;
            const uintptr_t gap_end = i < v.size() && v[i].begin < b ? v[i].begin : b;
            HzSeg s;
            s.begin = cur;
            s.end = gap_end;
            MarkSlot(s, Pipe::S, acc) = m;
            v.insert(v.begin() + static_cast<std::ptrdiff_t>(i), s);
            ++i;
            cur = gap_end;
        }
    }
    if (changed)
        MergeAround(v, first, i);
    return changed;
}

}  // namespace hz_detail

namespace hz_detail {

inline void AccessSlow(HazardState& h, HazardRanges& r, uintptr_t a, uintptr_t b, Pipe p, Acc acc,
                       const char* call, const SrcLoc& loc) {
    std::vector<HzSeg>& v = r.segs;
    const int pi = static_cast<int>(p);
    size_t i = FirstAfter(v, a);
    // Inside one segment this pipe already read (or the scalar unit wrote) in this epoch: a write
    // since would have cleared that mark, so a read needs nothing; a scalar write still checks
    // the readers that may have come since. The record would not change.
    if ((acc == Acc::kRead || p == Pipe::S) && i < v.size() && v[i].begin <= a && b <= v[i].end &&
        MarkSlot(v[i], p, acc).epoch == h.epoch[pi]) {
        if (acc == Acc::kWrite)
            Check(h, r, v[i], a, b, p, acc, call, loc);
        if (MarkSlot(v[i], p, acc).epoch == h.epoch[pi]) {  // the check started no new epoch
            r.hint[pi][static_cast<int>(acc)] =
                HazardRanges::Hint{r.version, v[i].begin, v[i].end, h.epoch[pi]};
            return;
        }
    }
    for (size_t k = i; k < v.size() && v[k].begin < b; ++k)
        Check(h, r, v[k], a, b, p, acc, call, loc);
    const HzMark m{h.epoch[pi], h.Site(call, loc)};  // after the checks: they may start a new epoch
    bool changed = true;
    if (p == Pipe::S) {
        changed = RecordScalar(v, i, a, b, acc, m);
    } else if (acc == Acc::kRead) {
        RecordRead(v, i, a, b, p, m);
    } else {
        RecordWrite(v, i, a, b, p, m);
    }
    if (changed)
        ++r.version;  // unchanged, the other fast-path hints stay valid
    if (acc == Acc::kRead || p == Pipe::S) {
        const HzSeg& s = v[FirstAfter(v, a)];
        r.hint[pi][static_cast<int>(acc)] = HazardRanges::Hint{r.version, s.begin, s.end, m.epoch};
    }
}

}  // namespace hz_detail

// See the API list at the top.
inline void HzAccess(HazardRanges& r, const void* ptr, uint64_t bytes, Pipe p, Acc acc,
                     const char* call, const SrcLoc& loc) {
    if (bytes == 0)
        return;
    // A buffer belongs to one core (TPipe::InitBuffer carves it there), so its core's state can
    // be remembered instead of looked up through the thread-local current core every time.
    HazardState& h = r.state != nullptr ? *r.state : *(r.state = &Hz());
    // Whole 32-byte blocks (see Granularity above).
    const uintptr_t a = reinterpret_cast<uintptr_t>(ptr) & ~uintptr_t{kHzBlock - 1};
    const uintptr_t b =
        (reinterpret_cast<uintptr_t>(ptr) + bytes + kHzBlock - 1) & ~uintptr_t{kHzBlock - 1};
    // A read, or a scalar write (the hardware keeps the scalar pipe in order), by the pipe and kind
    // of access that last recorded one in the segment holding [a, b), in the same epoch, with the
    // buffer's history unchanged since: the same checks would pass again (knowledge only grows),
    // and the segment already says this pipe accessed all of it in this epoch (from the call site
    // it names, which a report would name). This is most scalar loops and repeated DMAs.
    const int pi = static_cast<int>(p);
    const HazardRanges::Hint& t = r.hint[pi][static_cast<int>(acc)];
    if (t.version == r.version && t.begin <= a && b <= t.end && t.epoch == h.epoch[pi])
        return;
    hz_detail::AccessSlow(h, r, a, b, p, acc, call, loc);
}

inline void HzSetFlag(Pipe src, Pipe dst, int32_t id, const char* call, const SrcLoc& loc) {
    HazardState& h = Hz();
    HzFlag& f = h.flags[static_cast<int>(src)][static_cast<int>(dst)][id];
    if (f.set) {
        Fail(call, loc,
             "SetFlag<HardEvent::" + EventName(src, dst) + ">(" + std::to_string(id) +
                 ") while the flag is still set by " + h.Str(f.by) +
                 " with no WaitFlag since: two SetFlag on one event id in a row are undefined "
                 "(SetFlag_WaitFlag_ISASI.md); use another id (TPipe::AllocEventID)");
    }
    f.set = true;
    f.snap = hz_detail::Release(h, src);
    f.t = h.t[static_cast<int>(src)];
    f.by = h.Site(call, loc);
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
    h.t[static_cast<int>(dst)] = std::max(h.t[static_cast<int>(dst)], f.t);
}

inline void HzBarrier(Pipe p) {
    HazardState& h = Hz();
    const int pi = static_cast<int>(p);
    h.know[pi][pi] = h.epoch[pi];
    ++h.epoch[pi];
}

inline void HzBarrierAll() {
    HazardState& h = Hz();
    for (auto& k : h.know)
        k = h.epoch;
    std::fill(std::begin(h.t), std::end(h.t), *std::max_element(std::begin(h.t), std::end(h.t)));
    for (auto& e : h.epoch)
        ++e;
}

inline void HzOrder(Pipe q, Pipe p) {
    HazardState& h = Hz();
    hz_detail::Merge(h.know[static_cast<int>(p)], hz_detail::Release(h, q));
    h.t[static_cast<int>(p)] = std::max(h.t[static_cast<int>(p)], h.t[static_cast<int>(q)]);
}

// TPipe teardown, which also runs while an exception unwinds: the WaitFlag and ReleaseEventID
// of an event a queue buffer still holds, and the PIPE_ALL barrier of TPipe::Destroy, without
// checks (nothing may throw there).
inline void HzDrainNoThrow(CoreState& c, Pipe src, Pipe dst, int32_t id) noexcept {
    if (!c.hazard || id < 0 || id >= kEventIds)
        return;
    HazardState& h = *c.hazard;
    HzFlag& f = h.flags[static_cast<int>(src)][static_cast<int>(dst)][id];
    if (f.set) {
        hz_detail::Merge(h.know[static_cast<int>(dst)], f.snap);
        h.t[static_cast<int>(dst)] = std::max(h.t[static_cast<int>(dst)], f.t);
        f.set = false;
    }
    uint8_t& held = h.held[static_cast<int>(src)][static_cast<int>(dst)];
    held = static_cast<uint8_t>(held & ~(1u << id));
}

inline void HzBarrierAllNoThrow(CoreState& c) noexcept {
    if (!c.hazard)
        return;
    HazardState& h = *c.hazard;
    for (auto& k : h.know)
        k = h.epoch;
    std::fill(std::begin(h.t), std::end(h.t), *std::max_element(std::begin(h.t), std::end(h.t)));
    for (auto& e : h.epoch)
        ++e;
}

// TPipe/FetchEventID.md: the lowest id not held by AllocEventID; it is not taken.
inline int32_t HzFetchEventID(Pipe src, Pipe dst, const char* call, const SrcLoc& loc) {
    const uint8_t held = Hz().held[static_cast<int>(src)][static_cast<int>(dst)];
    for (int32_t id = 0; id < kEventIds; ++id) {
        if ((held & (1u << id)) == 0)
            return id;
    }
    Fail(call, loc,
         "all " + std::to_string(kEventIds) + " event ids of HardEvent::" + EventName(src, dst) +
             " are held (AllocEventID without ReleaseEventID, or queue buffers waiting for their "
             "events)");
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
