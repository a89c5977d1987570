// Checkpoint files of a host table.
//
// Layout (little-endian):
//   header   128 bytes: magic "EMBCKPT1", format version, kind (full/incremental), this
//            checkpoint's id, the id it applies on (incremental), geometry (dim, row width,
//            optimiser), table step, optimiser step, record counts, row dtype (version 2;
//            version 1 files hold float32 rows and zeros there); CRC-32C of the header.
//   sections [tag u32][reserved u32][length u64][payload][CRC-32C of all preceding fields]
//            DELS: ids deleted since the base (incremental only), written before rows;
//            ROWS: records {id i64, last_seen u32, count u32, row u32[row_width]}: the row's
//            embedding in its dtype (16-bit values in pairs), then float32 state;
//            PEND: admission counters {id i64, count u32, last_seen u32} (always complete).
//   trailer  an END section holding the number of sections and a CRC over their CRCs; the
//            file must end right after it.
//
// Writing goes to a temporary file in the same directory, which is fsync'ed and renamed
// over the target, then the directory is fsync'ed: a crash leaves the old file or the new
// one, never a mix. Loading reads every file of the chain twice: a first pass verifies all
// checksums, counts and the chain of ids without changing anything, the second pass builds
// a new table (re-checking each section as it goes). The caller swaps the new table in only
// if everything succeeded, so a bad file is refused, never half-loaded.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "crc32c.h"
#include "host_table.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the checkpoint format is little-endian");

namespace embcache {

namespace {

constexpr char kMagic[8] = {'E', 'M', 'B', 'C', 'K', 'P', 'T', '1'};
// Version 2 added the row dtype; version 1 files (float32 rows) are still read.
constexpr uint32_t kFormatVersion = 2;
constexpr uint32_t kOldestVersion = 1;
constexpr uint32_t kKindFull = 1;
constexpr uint32_t kKindIncremental = 2;
constexpr size_t kHeaderBytes = 128;
constexpr size_t kFrameBytes = 16;  // tag, reserved, length
constexpr size_t kSectionTarget = size_t{4} << 20;

constexpr uint32_t tag(const char (&s)[5]) {
    return static_cast<uint32_t>(static_cast<unsigned char>(s[0])) |
           static_cast<uint32_t>(static_cast<unsigned char>(s[1])) << 8 |
           static_cast<uint32_t>(static_cast<unsigned char>(s[2])) << 16 |
           static_cast<uint32_t>(static_cast<unsigned char>(s[3])) << 24;
}
constexpr uint32_t kTagRows = tag("ROWS");
constexpr uint32_t kTagDeleted = tag("DELS");
constexpr uint32_t kTagPending = tag("PEND");
constexpr uint32_t kTagEnd = tag("END.");

constexpr size_t kPendingRecord = 16;

struct Header {
    uint32_t version = kFormatVersion;
    uint32_t kind = kKindFull;
    uint64_t id = 0;
    uint64_t base_id = 0;
    int64_t dim = 0;
    int64_t row_width = 0;
    uint32_t optim_kind = 0;
    int64_t step = 0;
    int64_t optimizer_step = 0;
    uint64_t n_rows = 0;
    uint64_t n_deleted = 0;
    uint64_t n_pending = 0;
    uint32_t dtype = 0;  // RowDtype
};

template <class T>
void put(std::vector<char>& b, size_t off, T v) {
    std::memcpy(b.data() + off, &v, sizeof(T));
}
template <class T>
T get(const char* p, size_t off) {
    T v;
    std::memcpy(&v, p + off, sizeof(T));
    return v;
}

// The header's layout, one list for writing and reading: calls fn(byte offset, field) for
// every field. The magic bytes come first (offset 0), the checksum last (kHeaderBytes - 4).
template <class H, class Fn>
void header_fields(H& h, Fn&& fn) {
    fn(8, h.version);
    fn(12, h.kind);
    fn(16, h.id);
    fn(24, h.base_id);
    fn(32, h.dim);
    fn(40, h.row_width);
    fn(48, h.optim_kind);
    fn(56, h.step);
    fn(64, h.optimizer_step);
    fn(72, h.n_rows);
    fn(80, h.n_deleted);
    fn(88, h.n_pending);
    fn(96, h.dtype);  // from version 2 on
}

std::vector<char> encode_header(const Header& h) {
    std::vector<char> b(kHeaderBytes, 0);
    std::memcpy(b.data(), kMagic, 8);
    header_fields(h, [&](size_t off, const auto& field) { put(b, off, field); });
    put(b, kHeaderBytes - 4, crc32c(b.data(), kHeaderBytes - 4));
    return b;
}

std::string errno_text() {
    return std::strerror(errno);
}

uint64_t new_checkpoint_id() {
    std::random_device rd;
    const uint64_t t =
        static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    uint64_t id = splitmix64_mix((static_cast<uint64_t>(rd()) << 32 | rd()) ^ t ^
                                 static_cast<uint64_t>(getpid()));
    return id == 0 ? 1 : id;
}

// A file written under a temporary name and renamed over the target on commit().
class AtomicFile {
public:
    explicit AtomicFile(std::string path) : path_(std::move(path)) {
        tmp_ = path_ + ".tmp." + std::to_string(getpid()) + "." +
               std::to_string(new_checkpoint_id() & 0xffffff);
        fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd_ < 0)
            fail("cannot create " + tmp_);
    }
    ~AtomicFile() {
        if (fd_ >= 0)
            ::close(fd_);
        if (!committed_)
            ::unlink(tmp_.c_str());
    }
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(const void* data, size_t n) {
        const char* p = static_cast<const char*>(data);
        while (n > 0) {
            const ssize_t w = ::write(fd_, p, n);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                fail("cannot write");
            }
            p += w;
            n -= static_cast<size_t>(w);
        }
    }

    void commit() {
        if (::fsync(fd_) != 0)
            fail("cannot flush to disk");
        if (::close(fd_) != 0) {
            fd_ = -1;
            fail("cannot close");
        }
        fd_ = -1;
        if (::rename(tmp_.c_str(), path_.c_str()) != 0)
            fail("cannot rename " + tmp_ + " to it");
        committed_ = true;
        // The rename itself must reach the disk, or a crash could bring back the old entry.
        const size_t slash = path_.find_last_of('/');
        const std::string dir =
            slash == std::string::npos ? "." : (slash == 0 ? "/" : path_.substr(0, slash));
        const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            ::fsync(dfd);
            ::close(dfd);
        }
    }

private:
    [[noreturn]] void fail(const std::string& what) {
        throw CheckpointError("checkpoint " + path_ + ": " + what + ": " + errno_text());
    }
    std::string path_, tmp_;
    int fd_ = -1;
    bool committed_ = false;
};

class SectionWriter {
public:
    explicit SectionWriter(AtomicFile& f) : f_(f) {}
    void write(uint32_t t, const std::vector<char>& payload) {
        std::vector<char> frame(kFrameBytes, 0);
        put(frame, 0, t);
        put(frame, 4, uint32_t{0});
        put(frame, 8, static_cast<uint64_t>(payload.size()));
        uint32_t crc = crc32c(frame.data(), frame.size());
        crc = crc32c_extend(crc, payload.data(), payload.size());
        f_.write(frame.data(), frame.size());
        f_.write(payload.data(), payload.size());
        f_.write(&crc, 4);
        if (t != kTagEnd) {
            crcs_.push_back(crc);
            ++sections_;
        }
    }
    void finish() {
        std::vector<char> end(12, 0);
        put(end, 0, sections_);
        put(end, 8, crc32c(crcs_.data(), crcs_.size() * sizeof(uint32_t)));
        write(kTagEnd, end);
    }

private:
    AtomicFile& f_;
    std::vector<uint32_t> crcs_;
    uint64_t sections_ = 0;
};

// Sequential reader that names the file and offset in every error.
class Reader {
public:
    explicit Reader(const std::string& path) : path_(path) {
        fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd_ < 0)
            throw CheckpointError("cannot open checkpoint " + path + ": " + errno_text());
        struct stat st;
        if (::fstat(fd_, &st) != 0) {
            ::close(fd_);
            throw CheckpointError("cannot stat checkpoint " + path + ": " + errno_text());
        }
        size_ = static_cast<uint64_t>(st.st_size);
    }
    ~Reader() {
        if (fd_ >= 0)
            ::close(fd_);
    }
    uint64_t offset() const { return off_; }
    uint64_t size() const { return size_; }
    uint64_t remaining() const { return size_ - off_; }

    void read(void* dst, size_t n, const char* what) {
        if (n > remaining()) {
            fail("truncated: " + std::string(what) + " at offset " + std::to_string(off_) +
                 " needs " + std::to_string(n) + " bytes but the file ends after " +
                 std::to_string(remaining()));
        }
        char* p = static_cast<char*>(dst);
        size_t left = n;
        while (left > 0) {
            const ssize_t r = ::read(fd_, p, left);
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                fail(std::string("read error: ") + errno_text());
            }
            if (r == 0)
                fail("truncated while reading " + std::string(what) +
                     " (file shrank while being read)");
            p += r;
            left -= static_cast<size_t>(r);
        }
        off_ += n;
    }

    [[noreturn]] void fail(const std::string& what) const {
        throw CheckpointError("checkpoint " + path_ + " is invalid: " + what);
    }

private:
    std::string path_;
    int fd_ = -1;
    uint64_t size_ = 0;
    uint64_t off_ = 0;
};

using SectionFn = std::function<void(uint32_t tag, const char* payload, uint64_t len)>;

// Reads and checks a whole file; calls on_section for each data section (if given).
Header scan(const std::string& path, const SectionFn& on_section) {
    Reader r(path);
    std::vector<char> hb(kHeaderBytes);
    r.read(hb.data(), kHeaderBytes, "the header");
    if (std::memcmp(hb.data(), kMagic, 8) != 0)
        r.fail("not an embcache checkpoint (bad magic bytes)");
    if (get<uint32_t>(hb.data(), kHeaderBytes - 4) != crc32c(hb.data(), kHeaderBytes - 4)) {
        r.fail("header checksum mismatch (the header is corrupted)");
    }
    Header h;
    h.version = get<uint32_t>(hb.data(), 8);
    if (h.version < kOldestVersion || h.version > kFormatVersion) {
        r.fail("format version " + std::to_string(h.version) +
               " is not supported (this build reads versions " + std::to_string(kOldestVersion) +
               " to " + std::to_string(kFormatVersion) + ")");
    }
    header_fields(h, [&](size_t off, auto& field) {
        field = get<std::remove_reference_t<decltype(field)>>(hb.data(), off);
    });
    if (h.version < 2)
        h.dtype = 0;  // version 1 has no dtype field: its rows are float32
    if (h.dtype > static_cast<uint32_t>(RowDtype::BF16))
        r.fail("unknown row dtype " + std::to_string(h.dtype) + " in the header");
    if (h.kind != kKindFull && h.kind != kKindIncremental)
        r.fail("unknown checkpoint kind " + std::to_string(h.kind));
    if (h.dim <= 0 || h.row_width < h.dim)
        r.fail("impossible geometry in the header");

    const uint64_t row_record = 16 + static_cast<uint64_t>(h.row_width) * 4;
    uint64_t rows = 0, deleted = 0, pending = 0, sections = 0;
    std::vector<uint32_t> crcs;
    std::vector<char> payload;
    for (;;) {
        const uint64_t at = r.offset();
        char frame[kFrameBytes];
        r.read(frame, kFrameBytes, "a section header (the end marker is missing)");
        const uint32_t t = get<uint32_t>(frame, 0);
        const uint64_t len = get<uint64_t>(frame, 8);
        if (t != kTagRows && t != kTagDeleted && t != kTagPending && t != kTagEnd) {
            r.fail("unknown section tag at offset " + std::to_string(at) + " (corrupted data)");
        }
        if (len + 4 > r.remaining()) {
            r.fail("truncated: the section at offset " + std::to_string(at) + " declares " +
                   std::to_string(len) + " bytes but only " + std::to_string(r.remaining()) +
                   " remain");
        }
        payload.resize(len);
        r.read(payload.data(), len, "section data");
        uint32_t stored;
        r.read(&stored, 4, "a section checksum");
        uint32_t crc = crc32c(frame, kFrameBytes);
        crc = crc32c_extend(crc, payload.data(), len);
        if (crc != stored)
            r.fail("checksum mismatch in the section at offset " + std::to_string(at));
        if (t == kTagEnd) {
            if (len != 12)
                r.fail("malformed end marker");
            if (get<uint64_t>(payload.data(), 0) != sections ||
                get<uint32_t>(payload.data(), 8) != crc32c(crcs.data(), crcs.size() * 4)) {
                r.fail("sections are missing or out of order (end marker does not match)");
            }
            if (r.remaining() != 0)
                r.fail(std::to_string(r.remaining()) + " unexpected bytes after the end marker");
            break;
        }
        crcs.push_back(crc);
        ++sections;
        const uint64_t record =
            t == kTagRows ? row_record : (t == kTagDeleted ? 8 : kPendingRecord);
        if (len % record != 0)
            r.fail("section at offset " + std::to_string(at) + " has a partial record");
        (t == kTagRows ? rows : (t == kTagDeleted ? deleted : pending)) += len / record;
        if (on_section)
            on_section(t, payload.data(), len);
    }
    if (rows != h.n_rows || deleted != h.n_deleted || pending != h.n_pending) {
        r.fail("record counts do not match the header (rows " + std::to_string(rows) + "/" +
               std::to_string(h.n_rows) + ", deleted " + std::to_string(deleted) + "/" +
               std::to_string(h.n_deleted) + ", pending " + std::to_string(pending) + "/" +
               std::to_string(h.n_pending) + ")");
    }
    return h;
}

}  // namespace

// Friend of HostTable: reads and writes its shards directly.
class CheckpointIO {
public:
    using Sink = std::function<void(uint32_t tag, std::vector<char>& payload)>;

    static uint64_t save(HostTable& t, const std::string& path, bool incremental) {
        std::unique_lock<std::shared_mutex> lock(t.mu_);
        AtomicFile file(path);
        SectionWriter w(file);
        const uint64_t id = encode(
            t, incremental, path,
            [&](const std::vector<char>& hb) { file.write(hb.data(), hb.size()); },
            [&](uint32_t tg, std::vector<char>& payload) { w.write(tg, payload); });
        w.finish();
        file.commit();
        // Only now is the new checkpoint the base of the next incremental one.
        mark_saved(t, id);
        return id;
    }

    static std::shared_ptr<CheckpointSnapshot> snapshot(HostTable& t, bool incremental) {
        std::unique_lock<std::shared_mutex> lock(t.mu_);
        auto snap = std::make_shared<CheckpointSnapshot>();
        snap->label = incremental ? "incremental snapshot" : "full snapshot";
        snap->id = encode(
            t, incremental, snap->label, [&](const std::vector<char>& hb) { snap->header = hb; },
            [&](uint32_t tg, std::vector<char>& payload) {
                snap->sections.emplace_back(tg, std::move(payload));
            });
        // Rows changed from here on belong to the next checkpoint, however the write goes.
        mark_saved(t, snap->id);
        return snap;
    }

private:
    // Encodes t's checkpoint (the caller holds its lock): the header, then the sections in
    // payloads of about kSectionTarget bytes; returns the new checkpoint id.
    static uint64_t encode(const HostTable& t, bool incremental, const std::string& what,
                           const std::function<void(const std::vector<char>&)>& header,
                           const Sink& section) {
        if (incremental && t.checkpoint_id_ == 0) {
            throw CheckpointError(
                "cannot write incremental checkpoint " + what +
                ": this table has no full checkpoint (saved or loaded) to build on");
        }
        Header h;
        h.kind = incremental ? kKindIncremental : kKindFull;
        h.id = new_checkpoint_id();
        h.base_id = incremental ? t.checkpoint_id_ : 0;
        h.dim = t.cfg_.dim;
        h.row_width = t.row_width_;
        h.optim_kind = static_cast<uint32_t>(t.cfg_.optim.kind);
        h.dtype = static_cast<uint32_t>(t.cfg_.dtype);
        h.step = t.step_;
        h.optimizer_step = t.optimizer_step_;
        for (const Shard& s : t.shards_) {
            s.rows.for_each_live([&](uint32_t r) {
                if (!incremental || s.rows.modified(r))
                    ++h.n_rows;
            });
            if (incremental)
                h.n_deleted += s.deleted.size();
            h.n_pending += static_cast<uint64_t>(s.pending.size());
        }
        header(encode_header(h));
        std::vector<char> buf;
        buf.reserve(kSectionTarget + 4096);
        auto flush = [&](uint32_t tg) {
            if (!buf.empty())
                section(tg, buf);
            buf.clear();
            buf.reserve(kSectionTarget + 4096);
        };
        auto append = [&](const void* p, size_t n) {
            const char* c = static_cast<const char*>(p);
            buf.insert(buf.end(), c, c + n);
        };
        if (incremental) {
            for (const Shard& s : t.shards_) {
                for (int64_t key : s.deleted) {
                    append(&key, 8);
                    if (buf.size() >= kSectionTarget)
                        flush(kTagDeleted);
                }
            }
            flush(kTagDeleted);
        }
        const size_t row_bytes = static_cast<size_t>(t.row_width_) * 4;
        for (const Shard& s : t.shards_) {
            s.rows.for_each_live([&](uint32_t r) {
                if (incremental && !s.rows.modified(r))
                    return;
                const RowHeader& hdr = s.rows.header(r);
                append(&hdr.key, 8);
                append(&hdr.last_seen, 4);
                append(&hdr.count, 4);
                append(s.rows.data(r), row_bytes);
                if (buf.size() >= kSectionTarget)
                    flush(kTagRows);
            });
        }
        flush(kTagRows);
        for (const Shard& s : t.shards_) {
            s.pending.for_each([&](int64_t key, const PendingTraits::Value& v) {
                append(&key, 8);
                append(&v.count, 4);
                append(&v.last_seen, 4);
                if (buf.size() >= kSectionTarget)
                    flush(kTagPending);
            });
        }
        flush(kTagPending);
        return h.id;
    }

    static void mark_saved(HostTable& t, uint64_t id) {
        t.checkpoint_id_ = id;
        for (Shard& s : t.shards_) {
            s.rows.clear_modified();
            std::vector<int64_t>().swap(s.deleted);
        }
    }

public:
    static std::unique_ptr<HostTable> load(const TableConfig& cfg,
                                           const std::vector<std::string>& paths) {
        if (paths.empty())
            throw std::invalid_argument("no checkpoint files given");
        auto table = std::make_unique<HostTable>(cfg);
        // Pass 1: every file is complete, uncorrupted, fits this table and the chain links up.
        std::vector<Header> headers;
        for (size_t i = 0; i < paths.size(); ++i) {
            const Header h = scan(paths[i], nullptr);
            const std::string name = "checkpoint " + paths[i];
            if (i == 0 && h.kind != kKindFull) {
                throw CheckpointError(name +
                                      " is incremental; loading must start from a full checkpoint");
            }
            if (i > 0 && h.kind != kKindIncremental) {
                throw CheckpointError(
                    name +
                    " is a full checkpoint; only incremental ones may follow the first file");
            }
            if (i > 0 && h.base_id != headers.back().id) {
                throw CheckpointError(name + " does not follow " + paths[i - 1] +
                                      " (it was written on top of a different checkpoint)");
            }
            if (h.dtype != static_cast<uint32_t>(cfg.dtype)) {
                throw CheckpointError(
                    name + " holds " + dtype_name(static_cast<RowDtype>(h.dtype)) +
                    " rows but the table stores " + dtype_name(cfg.dtype) +
                    " rows; create the table with the checkpoint's dtype (rows are never "
                    "converted on load)");
            }
            if (h.dim != cfg.dim || h.row_width != table->row_width_ ||
                h.optim_kind != static_cast<uint32_t>(cfg.optim.kind)) {
                static const char* names[] = {"SGD", "Adagrad", "Adam"};
                auto optim_name = [](uint32_t k) { return k < 3 ? names[k] : "unknown"; };
                throw CheckpointError(name + " holds rows of dim " + std::to_string(h.dim) +
                                      " with " + optim_name(h.optim_kind) +
                                      " state, but the table has dim " + std::to_string(cfg.dim) +
                                      " with " + optim_name(static_cast<uint32_t>(cfg.optim.kind)) +
                                      " state");
            }
            headers.push_back(h);
        }
        // Pass 2: build the new table. The files are re-checked as they are read, in case they
        // changed in between; any error discards the new table.
        HostTable& t = *table;
        const size_t row_record = 16 + static_cast<size_t>(t.row_width_) * 4;
        for (size_t i = 0; i < paths.size(); ++i) {
            for (Shard& s : t.shards_)
                s.pending.clear();
            const Header h = scan(paths[i], [&](uint32_t tg, const char* p, uint64_t len) {
                if (tg == kTagDeleted) {
                    for (uint64_t off = 0; off < len; off += 8) {
                        const int64_t key = get<int64_t>(p, off);
                        const uint64_t hk = id_hash(key);
                        Shard& s = t.shards_[t.shard_of(hk)];
                        const uint32_t* r = s.index.find(key, hk);
                        if (r != nullptr) {
                            const uint32_t row = *r;
                            s.index.erase(key, hk);
                            s.rows.release(row);
                        }
                    }
                } else if (tg == kTagRows) {
                    for (uint64_t off = 0; off < len; off += row_record) {
                        const int64_t key = get<int64_t>(p, off);
                        const uint64_t hk = id_hash(key);
                        Shard& s = t.shards_[t.shard_of(hk)];
                        bool inserted = false;
                        uint32_t* slot = s.index.find_or_insert(key, hk, 0, &inserted);
                        if (inserted)
                            *slot = s.rows.allocate();
                        const uint32_t r = *slot;
                        RowHeader& hdr = s.rows.header(r);
                        hdr.key = key;
                        hdr.last_seen = get<uint32_t>(p, off + 8);
                        hdr.count = get<uint32_t>(p, off + 12);
                        std::memcpy(s.rows.data(r), p + off + 16, row_record - 16);
                    }
                } else if (tg == kTagPending) {
                    for (uint64_t off = 0; off < len; off += kPendingRecord) {
                        const int64_t key = get<int64_t>(p, off);
                        const uint64_t hk = id_hash(key);
                        PendingTraits::Value v{get<uint32_t>(p, off + 8),
                                               get<uint32_t>(p, off + 12)};
                        if (v.count == 0)
                            throw CheckpointError("checkpoint " + paths[i] +
                                                  " is invalid: zero admission count");
                        bool inserted = false;
                        *t.shards_[t.shard_of(hk)].pending.find_or_insert(key, hk, v, &inserted) =
                            v;
                    }
                }
            });
            if (h.id != headers[i].id) {
                throw CheckpointError("checkpoint " + paths[i] +
                                      " changed while it was being loaded");
            }
        }
        for (Shard& s : t.shards_)
            s.rows.clear_modified();
        t.rebuild_orders();
        t.step_ = headers.back().step;
        t.optimizer_step_ = headers.back().optimizer_step;
        t.checkpoint_id_ = headers.back().id;
        return table;
    }
};

uint64_t HostTable::save(const std::string& path, bool incremental) {
    return CheckpointIO::save(*this, path, incremental);
}

std::shared_ptr<CheckpointSnapshot> HostTable::snapshot(bool incremental) {
    return CheckpointIO::snapshot(*this, incremental);
}

uint64_t CheckpointSnapshot::bytes() const {
    uint64_t n = header.size();
    for (const auto& sec : sections)
        n += kFrameBytes + sec.second.size() + 4;
    return n;
}

uint64_t CheckpointSnapshot::write(const std::string& path) const {
    AtomicFile file(path);
    file.write(header.data(), header.size());
    SectionWriter w(file);
    for (const auto& sec : sections)
        w.write(sec.first, sec.second);
    w.finish();
    file.commit();
    return id;
}

std::unique_ptr<HostTable> HostTable::load(const TableConfig& cfg,
                                           const std::vector<std::string>& paths) {
    return CheckpointIO::load(cfg, paths);
}

}  // namespace embcache
