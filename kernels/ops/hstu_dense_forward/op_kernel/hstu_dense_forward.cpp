// HstuDenseForward: HSTU attention, O = (silu(Q K^T + bias) * s * M) V per batch b and head h
// (shared/research/hstu.md §2; the mask M is causal with the diagonal, none, or a custom
// multiplicative tensor).
//
// A mixed kernel (KERNEL_TYPE_MIX_AIC_1_2) in the Matmul API's MIX mode: each vector core (AIV)
// drives the Cube of its AI core through four Matmul objects, and the AIC only serves them
// (REGIST_MATMUL_OBJ sends it back). Each AIV takes its range of the work (tiling: rows of
// (batch, head, query block), balanced by cost) and, per piece of query rows [r0, r1), runs key
// blocks of at most blockK keys:
//   1. Cube: S = Q K^T into the AIV's workspace slot, in q's dtype (rounding point 1). Q and K
//      rows are strided by N * D (SetOrgShape), K transposed.
//   2. Vector, in chunks of score rows, float32 (point 2): S (+ bias) -> silu -> * s and the
//      mask (causal: a ramp clamped to 0/1 where the block crosses the diagonal; custom: the
//      mask tensor times s) -> P in q's dtype (point 3, round to nearest even), written back
//      over S in the slot.
//   3. Cube: O += P V into the AIV's float32 accumulator (enAtomic 1 after the first key block:
//      point 4).
// and then casts the accumulator rows once to q's dtype into O (point 5).
//
// Causal, tiled (tileRows > 0; the tiling's L1 plan): the key blocks cover only the keys left of
// the piece, [0, r0), in calls of up to kHstuTiledBlockK keys (each reads its K and V once and
// the piece's Q once); the diagonal square [r0, r1) x [r0, r1) runs in tiles of tileRows rows and
// keys, the same three steps per tile (t, c) with t >= c on operands in L1 (TSCM): the piece's Q
// tiles are copied there once, each column's K and V tile once, so the diagonal reads Q, K and V
// from global memory once and the Cube skips every tile above it. Untiled (mask types 2 and 3,
// or D too large for L1) a piece's key blocks run to HstuKeyEnd with Q, K and V from global
// memory.
//
// silu(z) = z / (1 + exp(-z)) with the vector unit's Exp (kernels/common/hstu_kernel.h HstuSilu).
//
// Synchronisation: score, bias, mask and O rows pass through queues (MTE2 -> V -> MTE3); the
// float32 work buffers are vector-only; the L1 tiles pass through TSCM queues (MTE2 -> MTE1, the
// Cube's reads, then FreeTensor before the next copy). The Cube reads P from global memory, so the
// MTE3 writes of P complete before the Matmul call that reads them (MTE3_S). Synchronous IterateAll
// returns once the Cube's result is in global memory.
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "hstu_common.h"
#include "hstu_kernel.h"
#include "hstu_dense_forward_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T>
class HstuDenseForward {
public:
    using AType = MatmulType<TPosition::GM, CubeFormat::ND, T, false>;
    using BTransType = MatmulType<TPosition::GM, CubeFormat::ND, T, true>;
    using BType = MatmulType<TPosition::GM, CubeFormat::ND, T, false>;
    using ScoreType = MatmulType<TPosition::GM, CubeFormat::ND, T>;
    using AccType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    using BiasType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    static constexpr int64_t kBlockElems = 32 / sizeof(T);

    // Operands in L1 (TSCM, NZ): the diagonal tiles of the causal forward.
    using AL1Type = MatmulType<TPosition::TSCM, CubeFormat::NZ, T, false>;
    using BL1TransType = MatmulType<TPosition::TSCM, CubeFormat::NZ, T, true>;
    using BL1Type = MatmulType<TPosition::TSCM, CubeFormat::NZ, T, false>;

    Matmul<AType, BTransType, ScoreType, BiasType> qk;        // S = Q K^T
    Matmul<AType, BType, AccType, BiasType> sv;               // O += P V
    Matmul<AL1Type, BL1TransType, ScoreType, BiasType> qkL1;  // a diagonal tile's S
    Matmul<AType, BL1Type, AccType, BiasType> svL1;           // its O += P V

    __aicore__ inline void Init(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR mask, GM_ADDR bias,
                                GM_ADDR offsets, GM_ADDR out, GM_ADDR workspace,
                                const HstuDenseForwardTilingData& td, TPipe* pipe) {
        td_ = &td;
        nd_ = td.heads * td.dim;
        const int64_t elems = td.rows * nd_;
        qGm_.SetGlobalBuffer((__gm__ T*)q, elems);
        kGm_.SetGlobalBuffer((__gm__ T*)k, elems);
        vGm_.SetGlobalBuffer((__gm__ T*)v, elems);
        outGm_.SetGlobalBuffer((__gm__ T*)out, elems);
        const int64_t square = td.squareBatch * td.heads * td.seqLen * td.seqLen;
        if (td.maskType == 3)
            maskGm_.SetGlobalBuffer((__gm__ T*)mask, square);
        if (td.hasBias)
            biasGm_.SetGlobalBuffer((__gm__ T*)bias, square);
        seq_.Init(td, offsets);
        worker_ = GetBlockIdx();
        GM_ADDR ws = GetUserWorkspace(workspace);
        slotGm_.SetGlobalBuffer((__gm__ T*)(ws + worker_ * td.slotBytes), td.blockQ * td.blockK);
        accGm_.SetGlobalBuffer(
            (__gm__ float*)(ws + td.workers * td.slotBytes + worker_ * td.accBytes),
            td.blockQ * td.dimPad);
        // Two buffers per queue: a chunk's copy in and P's copy out overlap the vector work of
        // the next and previous chunks.
        pipe->InitBuffer(scoreQue_, 2, td.scoreInBytes);
        if (td.hasBias)
            pipe->InitBuffer(biasQue_, 2, td.scoreInBytes);
        if (td.maskType == 3)
            pipe->InitBuffer(maskQue_, 2, td.scoreInBytes);
        pipe->InitBuffer(pQue_, 2, td.scoreOutBytes);
        if (sizeof(T) != 4)
            pipe->InitBuffer(zBuf_, td.tempBytes);
        pipe->InitBuffer(t0Buf_, td.tempBytes);
        pipe->InitBuffer(t1Buf_, td.tempBytes);
        pipe->InitBuffer(accInQue_, 1, td.accInBytes);
        pipe->InitBuffer(accOutQue_, 1, td.accOutBytes);
        if (td.tileRows > 0) {
            pipe->InitBuffer(qL1_, 1, td.qL1Bytes);
            pipe->InitBuffer(kL1_, 1, td.kvL1Bytes);
            pipe->InitBuffer(vL1_, 1, td.kvL1Bytes);
        }
        if (td.maskType == 0) {
            pipe->InitBuffer(rampBuf_, td.rampBytes);
            LocalTensor<float> ramp = rampBuf_.Get<float>();
            for (int64_t j = 0; j < td.blockK; ++j) {
                ramp.SetValue(static_cast<uint32_t>(j), -static_cast<float>(j));
            }
        }
    }

    __aicore__ inline void Process() {
        if (worker_ >= td_->workers)
            return;
        if (td_->jagged && worker_ == 0)
            seq_.CheckOffsets();
        mxrec::HstuForEachPiece(seq_, td_->start[worker_], td_->start[worker_ + 1], td_->blockQ,
                                *this);
    }

public:  // Piece is called by mxrec::HstuForEachPiece
    // Query rows [r0, r1) of the current sequence (length len) and head h.
    __aicore__ inline void Piece(int64_t h, int64_t r0, int64_t r1, int64_t len) {
        const int64_t m = r1 - r0;
        // Tiled (causal): the keys left of the piece in blocks, then its diagonal square in tiles.
        const int64_t keyEnd =
            td_->tileRows > 0 ? r0 : mxrec::HstuKeyEnd(td_->maskType == 0, r1, len);
        for (int64_t k0 = 0; k0 < keyEnd; k0 += td_->blockK)
            KeyBlock(h, r0, m, k0, mxrec::Min64(td_->blockK, keyEnd - k0));
        if (td_->tileRows > 0)
            Diagonal(h, r0, m);
        WriteOut(h, r0, m);
    }

private:
    // Query rows [r0, r0 + m) against keys [k0, k0 + kn), Q, K and V from global memory.
    __aicore__ inline void KeyBlock(int64_t h, int64_t r0, int64_t m, int64_t k0, int64_t kn) {
        const int64_t qOff = (seq_.row + r0) * nd_ + h * td_->dim;
        const int64_t kp = mxrec::AlignUp(kn, kBlockElems);  // row stride of S / P
        const int64_t kvOff = (seq_.row + k0) * nd_ + h * td_->dim;
        qk.SetOrgShape(static_cast<int>(m), static_cast<int>(kp), static_cast<int>(nd_),
                       static_cast<int>(nd_), static_cast<int>(kp));
        qk.SetTail(static_cast<int>(m), static_cast<int>(kn), static_cast<int>(td_->dim));
        qk.SetTensorA(qGm_[qOff]);
        qk.SetTensorB(kGm_[kvOff], true);
        qk.IterateAll(slotGm_);
        qk.End();
        ScoresToP(h, r0, m, k0, kn, kp);
        mxrec::PipeSync<HardEvent::MTE3_S>();  // P is in global memory before the Cube reads it
        sv.SetOrgShape(static_cast<int>(m), static_cast<int>(nd_), static_cast<int>(kp),
                       static_cast<int>(kp), static_cast<int>(td_->dimPad));
        sv.SetTail(static_cast<int>(m), static_cast<int>(td_->dim), static_cast<int>(kn));
        sv.SetTensorA(slotGm_);
        sv.SetTensorB(vGm_[kvOff]);
        sv.IterateAll(accGm_, k0 > 0 ? 1 : 0);
        sv.End();
    }

    // The diagonal square of rows [r0, r0 + m) in tiles of tileRows: the piece's Q tiles reach L1
    // once, each column c's K and V tile once, and tile (t, c), t >= c, is one call of each
    // product on L1 operands. The accumulator rows of tile t are written first by the key block
    // at 0 (r0 > 0) or by column 0.
    __aicore__ inline void Diagonal(int64_t h, int64_t r0, int64_t m) {
        const int64_t ht = td_->tileRows;
        const int64_t tiles = mxrec::CeilDiv(m, ht);
        const int64_t tileElems = ht * mxrec::AlignUp(td_->dim, kBlockElems);
        const int64_t first = (seq_.row + r0) * nd_ + h * td_->dim;
        LocalTensor<T> qL = qL1_.AllocTensor<T>();
        for (int64_t t = 0; t < tiles; ++t)
            ToL1(qL[static_cast<uint32_t>(t * tileElems)], qGm_[first + t * ht * nd_],
                 mxrec::Min64(ht, m - t * ht));
        qL1_.EnQue(qL);
        qL = qL1_.DeQue<T>();
        for (int64_t c = 0; c < tiles; ++c) {
            const int64_t kn = mxrec::Min64(ht, m - c * ht);
            const int64_t kp = mxrec::AlignUp(kn, kBlockElems);
            LocalTensor<T> kL = kL1_.AllocTensor<T>();
            LocalTensor<T> vL = vL1_.AllocTensor<T>();
            ToL1(kL, kGm_[first + c * ht * nd_], kn);
            ToL1(vL, vGm_[first + c * ht * nd_], kn);
            kL1_.EnQue(kL);
            vL1_.EnQue(vL);
            kL = kL1_.DeQue<T>();
            vL = vL1_.DeQue<T>();
            for (int64_t t = c; t < tiles; ++t) {
                const int64_t rows = mxrec::Min64(ht, m - t * ht);
                qkL1.SetOrgShape(static_cast<int>(rows), static_cast<int>(kp),
                                 static_cast<int>(td_->dim));
                qkL1.SetTail(static_cast<int>(rows), static_cast<int>(kn),
                             static_cast<int>(td_->dim));
                qkL1.SetTensorA(qL[static_cast<uint32_t>(t * tileElems)]);
                qkL1.SetTensorB(kL, true);
                qkL1.IterateAll(slotGm_);
                qkL1.End();
                ScoresToP(h, r0 + t * ht, rows, r0 + c * ht, kn, kp);
                mxrec::PipeSync<HardEvent::MTE3_S>();
                svL1.SetOrgShape(static_cast<int>(rows), static_cast<int>(td_->dim),
                                 static_cast<int>(kp), static_cast<int>(kp),
                                 static_cast<int>(td_->dimPad));
                svL1.SetTail(static_cast<int>(rows), static_cast<int>(td_->dim),
                             static_cast<int>(kn));
                svL1.SetTensorA(slotGm_);
                svL1.SetTensorB(vL);
                svL1.IterateAll(accGm_[t * ht * td_->dimPad], r0 > 0 || c > 0 ? 1 : 0);
                svL1.End();
            }
            kL1_.FreeTensor(kL);
            vL1_.FreeTensor(vL);
        }
        qL1_.FreeTensor(qL);
    }

    // rows x D of a head (row stride N * D) into L1 as NZ, column groups AlignUp(rows, 16) apart:
    // the layout the Matmul API reads an operand in TSCM in.
    __aicore__ inline void ToL1(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                                int64_t rows) {
        Nd2NzParams p;
        p.ndNum = 1;
        p.nValue = static_cast<uint16_t>(rows);
        p.dValue = static_cast<uint16_t>(td_->dim);
        p.srcDValue = static_cast<uint16_t>(nd_);
        p.dstNzC0Stride = static_cast<uint16_t>(mxrec::AlignUp(rows, 16));
        p.dstNzNStride = 1;
        DataCopy(dst, src, p);
    }

    // S rows of the slot -> P (in place), chunk by chunk.
    __aicore__ inline void ScoresToP(int64_t h, int64_t r0, int64_t m, int64_t k0, int64_t kn,
                                     int64_t kp) {
        // Bias and mask exist for the first squareBatch sequences (the others are empty).
        if ((td_->hasBias || td_->maskType == 3) && seq_.batch >= td_->squareBatch)
            Trap();
        const int64_t squareRow = (seq_.batch * td_->heads + h) * td_->seqLen;
        for (int64_t c0 = 0; c0 < m; c0 += td_->chunkRows) {
            const int64_t rc = mxrec::Min64(td_->chunkRows, m - c0);
            const int32_t n = static_cast<int32_t>(rc * kp);
            DataCopyPadExtParams<T> zero{true, 0, 0, static_cast<T>(0)};
            const uint32_t rowBytes = static_cast<uint32_t>(kn * sizeof(T));
            LocalTensor<T> sIn = scoreQue_.AllocTensor<T>();
            DataCopyPad(sIn, slotGm_[c0 * kp],
                        DataCopyExtParams{static_cast<uint16_t>(rc), rowBytes,
                                          static_cast<uint32_t>((kp - kn) * sizeof(T)), 0, 0},
                        zero);
            scoreQue_.EnQue(sIn);
            // Bias and mask rows: positions r0 + c0.. of the sequence, columns k0.., stride S.
            const int64_t squareOff = (squareRow + r0 + c0) * td_->seqLen + k0;
            const DataCopyExtParams squareRows{
                static_cast<uint16_t>(rc), rowBytes,
                static_cast<uint32_t>((td_->seqLen - kn) * sizeof(T)), 0, 0};
            if (td_->hasBias) {
                LocalTensor<T> bIn = biasQue_.AllocTensor<T>();
                DataCopyPad(bIn, biasGm_[squareOff], squareRows, zero);
                biasQue_.EnQue(bIn);
            }
            if (td_->maskType == 3) {
                LocalTensor<T> mIn = maskQue_.AllocTensor<T>();
                DataCopyPad(mIn, maskGm_[squareOff], squareRows, zero);
                maskQue_.EnQue(mIn);
            }
            LocalTensor<float> t0 = t0Buf_.Get<float>();
            LocalTensor<float> t1 = t1Buf_.Get<float>();
            // float32: S is worked on where it landed and P computed in its output buffer (no
            // copies); 16-bit: S widened into z, P narrowed from t0.
            sIn = scoreQue_.DeQue<T>();
            LocalTensor<float> z = sIn.template ReinterpretCast<float>();
            if constexpr (sizeof(T) != 4) {
                z = zBuf_.Get<float>();
                mxrec::HstuToFloat(z, sIn, n);
                scoreQue_.FreeTensor(sIn);
            }
            if (td_->hasBias) {
                LocalTensor<T> bIn = biasQue_.DeQue<T>();
                mxrec::HstuToFloat(t1, bIn, n);
                biasQue_.FreeTensor(bIn);
                Add(z, z, t1, n);
            }
            LocalTensor<T> pOut = pQue_.AllocTensor<T>();
            LocalTensor<float> p = sizeof(T) == 4 ? pOut.template ReinterpretCast<float>() : t0;
            mxrec::HstuSilu(p, z, n);
            if constexpr (sizeof(T) == 4)
                scoreQue_.FreeTensor(sIn);
            if (td_->maskType == 3) {
                LocalTensor<T> mIn = maskQue_.DeQue<T>();
                mxrec::HstuToFloat(t1, mIn, n);
                maskQue_.FreeTensor(mIn);
                Muls(t1, t1, td_->scale, n);  // mask * s, then into silu
                Mul(p, p, t1, n);
            } else {
                Muls(p, p, td_->scale, n);
                // Causal: rows whose keys reach past the diagonal get M_ij = clamp(i - j + 1, 0,
                // 1).
                if (td_->maskType == 0 && k0 + kn - 1 > r0 + c0) {
                    LocalTensor<float> ramp = rampBuf_.Get<float>();
                    for (int64_t i = 0; i < rc; ++i) {
                        Adds(t1[static_cast<uint32_t>(i * kp)], ramp,
                             static_cast<float>(r0 + c0 + i - k0 + 1), static_cast<int32_t>(kp));
                    }
                    Maxs(t1, t1, 0.0f, n);
                    Mins(t1, t1, 1.0f, n);
                    Mul(p, p, t1, n);
                }
            }
            if constexpr (sizeof(T) != 4)
                mxrec::HstuFromFloat(pOut, t0, n);
            pQue_.EnQue(pOut);
            pOut = pQue_.DeQue<T>();
            DataCopy(slotGm_[c0 * kp], pOut, static_cast<uint32_t>(n));
            pQue_.FreeTensor(pOut);
        }
    }

    // The accumulator's rows (float32) -> O rows of head h, in q's dtype.
    __aicore__ inline void WriteOut(int64_t h, int64_t r0, int64_t m) {
        const int64_t dp = td_->dimPad;
        const uint32_t rowBytes = static_cast<uint32_t>(td_->dim * sizeof(T));
        const uint32_t gapBlocks = static_cast<uint32_t>(
            (dp * static_cast<int64_t>(sizeof(T)) - mxrec::AlignUp(rowBytes, mxrec::kBlockBytes)) /
            mxrec::kBlockBytes);
        const uint32_t gmGap = static_cast<uint32_t>((nd_ - td_->dim) * sizeof(T));
        for (int64_t c0 = 0; c0 < m; c0 += td_->outRows) {
            const int64_t rc = mxrec::Min64(td_->outRows, m - c0);
            const int32_t n = static_cast<int32_t>(rc * dp);
            LocalTensor<float> acc = accInQue_.AllocTensor<float>();
            DataCopy(acc, accGm_[c0 * dp], static_cast<uint32_t>(n));
            accInQue_.EnQue(acc);
            acc = accInQue_.DeQue<float>();
            LocalTensor<T> o = accOutQue_.AllocTensor<T>();
            mxrec::HstuFromFloat(o, acc, n);
            accInQue_.FreeTensor(acc);
            accOutQue_.EnQue(o);
            o = accOutQue_.DeQue<T>();
            DataCopyPad(
                outGm_[(seq_.row + r0 + c0) * nd_ + h * td_->dim], o,
                DataCopyExtParams{static_cast<uint16_t>(rc), rowBytes, gapBlocks, gmGap, 0});
            accOutQue_.FreeTensor(o);
        }
    }

    const HstuDenseForwardTilingData* td_ = nullptr;
    int64_t nd_ = 0;
    int64_t worker_ = 0;
    mxrec::HstuSequences<HstuDenseForwardTilingData> seq_;
    GlobalTensor<T> qGm_;
    GlobalTensor<T> kGm_;
    GlobalTensor<T> vGm_;
    GlobalTensor<T> outGm_;
    GlobalTensor<T> maskGm_;
    GlobalTensor<T> biasGm_;
    GlobalTensor<T> slotGm_;
    GlobalTensor<float> accGm_;
    TQue<TPosition::VECIN, 1> scoreQue_;
    TQue<TPosition::VECIN, 1> biasQue_;
    TQue<TPosition::VECIN, 1> maskQue_;
    TQue<TPosition::VECOUT, 1> pQue_;
    TQue<TPosition::VECIN, 1> accInQue_;
    TQue<TPosition::VECOUT, 1> accOutQue_;
    TBuf<TPosition::VECCALC> zBuf_;
    TBuf<TPosition::VECCALC> t0Buf_;
    TBuf<TPosition::VECCALC> t1Buf_;
    TBuf<TPosition::VECCALC> rampBuf_;
    TSCM<TPosition::GM, 1> qL1_;
    TSCM<TPosition::GM, 1> kL1_;
    TSCM<TPosition::GM, 1> vL1_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "hstu_dense_forward_kernel_entry.h"
