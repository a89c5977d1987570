// HstuDenseBackward: the gradients of O = (silu(Q K^T + bias) * s * M) V (shared/research/hstu.md
// §2 Backward). With G = dO, Z = S + bias, sigma = sigmoid(Z):
//   P  = silu(Z) s M                               (rounded to q's dtype)
//   dZ = (G V^T) s M sigma (1 + Z (1 - sigma))     (rounded to q's dtype; = d_attn_bias)
//   dV = P^T G,  dK = dZ^T Q,  dQ = dZ K           (float32 accumulation, one cast at the end)
//
// A mixed kernel (KERNEL_TYPE_MIX_AIC_1_2) in the Matmul API's MIX mode, like the forward: each
// vector core drives its AI core's Cube through three Matmul objects. Three phases, separated by
// SyncAll (the vector cores of every AI core; the AICs have left at REGIST_MATMUL_OBJ):
//   0. clear the shared float32 dQ accumulator (workspace) and d_attn_bias, a slice per core;
//   1. per piece of key rows [c0, c1) of a (batch, head) (tiling: balanced ranges of key
//      blocks; its K and V copied to L1 once) and per chunk of at most chunkQ query rows that
//      meet them (causal: from row c0 on, the last chunk first, each chunk meeting the keys up to
//      its last row only; its Q and G copied to L1 once, every product reading
//      its operands there): S = Q K^T and dP = G V^T on the Cube into the core's slots (q's dtype);
//      on the vector cores, in chunks of rows, P and dZ (over S and dP in the slots; dZ also into
//      d_attn_bias); then dV += P^T G and dK += dZ^T Q into the core's float32 accumulators
//      (enAtomic after the first chunk) and dQ += dZ K into the shared accumulator (enAtomic,
//      other cores add to the same rows); after the last chunk dK and dV rows are cast out;
//   2. cast the dQ accumulator to dq, a slice of rows per core.
//
// exp(-Z) from the vector unit's Exp (HstuOnePlusExpNeg, kernels/common/hstu_kernel.h); the
// queues of S, dP, P and dZ are double-buffered (bias and mask, rarely given, are not: a core has
// 8 V_MTE2 event ids for its VECIN buffers), and float32 scores are worked on in the buffers they
// arrive in and leave from (no copies). Synchronisation: queues for every global <-> UB move of
// scores and rows, TSCM queues for the L1 operands (MTE2 -> the Cube's MTE1 reads, FreeTensor after
// the last call); PipeSync MTE3_S before a Matmul reads what the vector core wrote; V_MTE3 for the
// zero block (a TBuf).
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "hstu_common.h"
#include "hstu_kernel.h"
#include "hstu_dense_backward_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T>
class HstuDenseBackward {
public:
    using AType = MatmulType<TPosition::GM, CubeFormat::ND, T, false>;
    using ATransType = MatmulType<TPosition::GM, CubeFormat::ND, T, true>;
    using ScoreType = MatmulType<TPosition::GM, CubeFormat::ND, T>;
    using AccType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    using BiasType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    static constexpr int64_t kBlockElems = 32 / sizeof(T);
    static constexpr bool kFloat = sizeof(T) == 4;

    // Operands in L1 (TSCM, NZ): a key block's K and V, a query chunk's Q and G.
    using AL1Type = MatmulType<TPosition::TSCM, CubeFormat::NZ, T, false>;
    using BL1TransType = MatmulType<TPosition::TSCM, CubeFormat::NZ, T, true>;
    using BL1Type = MatmulType<TPosition::TSCM, CubeFormat::NZ, T, false>;

    Matmul<AL1Type, BL1TransType, ScoreType, BiasType> score;  // S = Q K^T, dP = G V^T
    Matmul<ATransType, BL1Type, AccType, BiasType> trans;      // dV += P^T G, dK += dZ^T Q
    Matmul<AType, BL1Type, AccType, BiasType> dq;              // dQ += dZ K

    __aicore__ inline void Init(GM_ADDR grad, GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR mask,
                                GM_ADDR bias, GM_ADDR offsets, GM_ADDR dqOut, GM_ADDR dkOut,
                                GM_ADDR dvOut, GM_ADDR dBias, GM_ADDR workspace,
                                const HstuDenseBackwardTilingData& td, TPipe* pipe) {
        td_ = &td;
        nd_ = td.heads * td.dim;
        const int64_t elems = td.rows * nd_;
        gGm_.SetGlobalBuffer((__gm__ T*)grad, elems);
        qGm_.SetGlobalBuffer((__gm__ T*)q, elems);
        kGm_.SetGlobalBuffer((__gm__ T*)k, elems);
        vGm_.SetGlobalBuffer((__gm__ T*)v, elems);
        dqGm_.SetGlobalBuffer((__gm__ T*)dqOut, elems);
        dkGm_.SetGlobalBuffer((__gm__ T*)dkOut, elems);
        dvGm_.SetGlobalBuffer((__gm__ T*)dvOut, elems);
        square_ = td.squareBatch * td.heads * td.seqLen * td.seqLen;
        if (td.maskType == 3)
            maskGm_.SetGlobalBuffer((__gm__ T*)mask, square_);
        if (td.hasBias)
            biasGm_.SetGlobalBuffer((__gm__ T*)bias, square_);
        if (td.hasBiasGrad)
            dBiasGm_.SetGlobalBuffer((__gm__ T*)dBias, square_);
        seq_.Init(td, offsets);
        worker_ = GetBlockIdx();
        GM_ADDR ws = GetUserWorkspace(workspace);
        GM_ADDR mine = ws + worker_ * 2 * (td.slotBytes + td.accBytes);
        const int64_t slot = td.chunkQ * td.blockK;
        const int64_t acc = td.blockK * td.dimPad;
        pSlotGm_.SetGlobalBuffer((__gm__ T*)mine, slot);
        zSlotGm_.SetGlobalBuffer((__gm__ T*)(mine + td.slotBytes), slot);
        dkAccGm_.SetGlobalBuffer((__gm__ float*)(mine + 2 * td.slotBytes), acc);
        dvAccGm_.SetGlobalBuffer((__gm__ float*)(mine + 2 * td.slotBytes + td.accBytes), acc);
        dqAccGm_.SetGlobalBuffer((__gm__ float*)(ws + td.dqAccOffset),
                                 td.rows * td.heads * td.dimPad);
        pipe->InitBuffer(sQue_, 2, td.scoreInBytes);
        pipe->InitBuffer(dpQue_, 2, td.scoreInBytes);
        if (td.hasBias)
            pipe->InitBuffer(biasQue_, 1, td.scoreInBytes);
        if (td.maskType == 3)
            pipe->InitBuffer(maskQue_, 1, td.scoreInBytes);
        pipe->InitBuffer(pQue_, 2, td.scoreInBytes);
        pipe->InitBuffer(dzQue_, 2, td.scoreInBytes);
        if constexpr (!kFloat) {  // float32 scores are worked on where they arrive
            pipe->InitBuffer(zBuf_, td.tempBytes);
            pipe->InitBuffer(gBuf_, td.tempBytes);
        }
        pipe->InitBuffer(dBuf_, td.tempBytes);
        pipe->InitBuffer(t1Buf_, td.tempBytes);
        pipe->InitBuffer(t2Buf_, td.tempBytes);
        pipe->InitBuffer(accInQue_, 1, td.accInBytes);
        pipe->InitBuffer(accOutQue_, 1, td.accOutBytes);
        pipe->InitBuffer(zeroBuf_, td.zeroBytes);
        pipe->InitBuffer(kL1_, 1, td.kvL1Bytes);
        pipe->InitBuffer(vL1_, 1, td.kvL1Bytes);
        pipe->InitBuffer(qL1_, 1, td.qL1Bytes);
        pipe->InitBuffer(gL1_, 1, td.qL1Bytes);
        if (td.maskType == 0) {
            pipe->InitBuffer(rampBuf_, td.rampBytes);
            LocalTensor<float> ramp = rampBuf_.Get<float>();
            for (int64_t j = 0; j < td.blockK; ++j) {
                ramp.SetValue(static_cast<uint32_t>(j), -static_cast<float>(j));
            }
        }
    }

    __aicore__ inline void Process() {
        if (td_->jagged && worker_ == 0)
            seq_.CheckOffsets();
        Clear();
        SyncAll();
        Gradients();
        SyncAll();
        CastDq();
    }

private:
    // ---- phase 0: zeros ------------------------------------------------------------------------
    __aicore__ inline void Clear() {
        LocalTensor<float> zero = zeroBuf_.Get<float>();
        const int64_t zeroFloats = td_->zeroBytes / 4;
        Duplicate(zero, 0.0f, static_cast<int32_t>(zeroFloats));
        mxrec::PipeSync<HardEvent::V_MTE3>();
        const mxrec::Span acc =
            mxrec::SplitEven(td_->rows * td_->heads * td_->dimPad, td_->workers, worker_);
        ZeroFill(dqAccGm_, zero, acc.begin, acc.end);
        if (td_->hasBiasGrad) {
            const mxrec::Span sq = mxrec::SplitEven(square_, td_->workers, worker_);
            ZeroFill(dBiasGm_, zero.template ReinterpretCast<T>(), sq.begin, sq.end);
        }
    }

    template <typename U>
    __aicore__ inline void ZeroFill(const GlobalTensor<U>& dst, const LocalTensor<U>& zero,
                                    int64_t begin, int64_t end) {
        const int64_t step = td_->zeroBytes / sizeof(U);
        for (int64_t i = begin; i < end; i += step) {
            const int64_t n = mxrec::Min64(step, end - i);
            DataCopyPad(dst[i], zero,
                        DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(U)), 0, 0, 0});
        }
    }

    // ---- phase 1 -------------------------------------------------------------------------------
    __aicore__ inline void Gradients() {
        mxrec::HstuForEachPiece(seq_, td_->start[worker_], td_->start[worker_ + 1], td_->blockK,
                                *this);
    }

public:  // Piece is called by mxrec::HstuForEachPiece
    // Key rows [c0, c1) of the current sequence (length len), head h.
    // Key rows [c0, c1) of the current sequence (length len), head h. The block's K and V reach
    // L1 once, each chunk's Q and G once, and every product reads them there in place (the Cube
    // reads only the slots from global memory).
    __aicore__ inline void Piece(int64_t h, int64_t c0, int64_t c1, int64_t len) {
        const int64_t kn = c1 - c0;
        const int64_t kp = mxrec::AlignUp(kn, kBlockElems);
        const int64_t kOff = (seq_.row + c0) * nd_ + h * td_->dim;
        const int64_t first = mxrec::HstuQueryStart(td_->maskType == 0, c0);
        LocalTensor<T> kL = kL1_.AllocTensor<T>();
        LocalTensor<T> vL = vL1_.AllocTensor<T>();
        ToL1(kL, kGm_[kOff], kn);
        ToL1(vL, vGm_[kOff], kn);
        kL1_.EnQue(kL);
        vL1_.EnQue(vL);
        kL = kL1_.DeQue<T>();
        vL = vL1_.DeQue<T>();
        const int dim = static_cast<int>(td_->dim);
        // Query chunks last to first: under the causal mask a chunk meets only the keys up to its
        // last row (kc), and the last chunk meets them all, so its call initialises every row of
        // the dK and dV accumulators and the others add to the rows they meet.
        const int64_t chunks = mxrec::CeilDiv(len - first, td_->chunkQ);
        for (int64_t j = chunks - 1; j >= 0; --j) {
            const int64_t i0 = first + j * td_->chunkQ;
            const int64_t mq = mxrec::Min64(td_->chunkQ, len - i0);
            const int64_t kc = td_->maskType == 0 ? mxrec::Min64(kn, i0 + mq - c0) : kn;
            const int64_t qOff = (seq_.row + i0) * nd_ + h * td_->dim;
            LocalTensor<T> qL = qL1_.AllocTensor<T>();
            LocalTensor<T> gL = gL1_.AllocTensor<T>();
            ToL1(qL, qGm_[qOff], mq);
            ToL1(gL, gGm_[qOff], mq);
            qL1_.EnQue(qL);
            gL1_.EnQue(gL);
            qL = qL1_.DeQue<T>();
            gL = gL1_.DeQue<T>();
            score.SetOrgShape(static_cast<int>(mq), static_cast<int>(kp), dim);
            score.SetTail(static_cast<int>(mq), static_cast<int>(kc), dim);
            score.SetTensorA(qL);
            score.SetTensorB(kL, true);
            score.IterateAll(pSlotGm_);
            score.SetTensorA(gL);
            score.SetTensorB(vL, true);
            score.IterateAll(zSlotGm_);
            score.End();
            Scores(h, i0, mq, c0, kc, kp);
            mxrec::PipeSync<HardEvent::MTE3_S>();  // P and dZ are in global memory for the Cube
            const uint8_t add = j < chunks - 1 ? 1 : 0;
            trans.SetOrgShape(static_cast<int>(kp), dim, static_cast<int>(kp), static_cast<int>(kp),
                              static_cast<int>(td_->dimPad));
            trans.SetTail(static_cast<int>(kc), dim, static_cast<int>(mq));
            trans.SetTensorA(pSlotGm_, true);
            trans.SetTensorB(gL);
            trans.IterateAll(dvAccGm_, add);
            trans.SetTensorA(zSlotGm_, true);
            trans.SetTensorB(qL);
            trans.IterateAll(dkAccGm_, add);
            trans.End();
            dq.SetOrgShape(static_cast<int>(mq), dim, static_cast<int>(kp), static_cast<int>(kp),
                           static_cast<int>(td_->heads * td_->dimPad));
            dq.SetTail(static_cast<int>(mq), dim, static_cast<int>(kc));
            dq.SetTensorA(zSlotGm_);
            dq.SetTensorB(kL);
            dq.IterateAll(dqAccGm_[((seq_.row + i0) * td_->heads + h) * td_->dimPad], 1);
            dq.End();
            qL1_.FreeTensor(qL);
            gL1_.FreeTensor(gL);
        }
        kL1_.FreeTensor(kL);
        vL1_.FreeTensor(vL);
        WriteRows(dkGm_, dkAccGm_, kOff, td_->dimPad, kn, nd_);
        WriteRows(dvGm_, dvAccGm_, kOff, td_->dimPad, kn, nd_);
    }

private:
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

    // The slots' S and dP (query rows i0.., key rows c0.., kn of them; slot rows kp apart) -> P
    // and dZ, chunk by chunk; in UB the rows are kn rounded up to a 32-byte block.
    __aicore__ inline void Scores(int64_t h, int64_t i0, int64_t mq, int64_t c0, int64_t kn,
                                  int64_t kp) {
        const int64_t kw = mxrec::AlignUp(kn, kBlockElems);
        const bool custom = td_->maskType == 3;
        const bool square = td_->hasBias || custom || td_->hasBiasGrad;
        if (square && seq_.batch >= td_->squareBatch)
            Trap();  // bias and mask cover these sequences
        const int64_t squareRow = (seq_.batch * td_->heads + h) * td_->seqLen;
        const float s = td_->scale;
        const uint32_t rowBytes = static_cast<uint32_t>(kn * sizeof(T));
        const uint32_t slotGap = static_cast<uint32_t>((kp - kn) * sizeof(T));
        const uint32_t squareGap = static_cast<uint32_t>((td_->seqLen - kn) * sizeof(T));
        const DataCopyPadExtParams<T> zero{true, 0, 0, static_cast<T>(0)};
        for (int64_t r0 = 0; r0 < mq; r0 += td_->chunkRows) {
            const int64_t rc = mxrec::Min64(td_->chunkRows, mq - r0);
            const int32_t n = static_cast<int32_t>(rc * kw);
            const DataCopyExtParams slotRows{static_cast<uint16_t>(rc), rowBytes, slotGap, 0, 0};
            const DataCopyExtParams squareRows{static_cast<uint16_t>(rc), rowBytes, squareGap, 0,
                                               0};
            const int64_t squareOff = (squareRow + i0 + r0) * td_->seqLen + c0;
            LocalTensor<T> sIn = sQue_.AllocTensor<T>();
            DataCopyPad(sIn, pSlotGm_[r0 * kp], slotRows, zero);
            sQue_.EnQue(sIn);
            LocalTensor<T> dpIn = dpQue_.AllocTensor<T>();
            DataCopyPad(dpIn, zSlotGm_[r0 * kp], slotRows, zero);
            dpQue_.EnQue(dpIn);
            if (td_->hasBias) {
                LocalTensor<T> bIn = biasQue_.AllocTensor<T>();
                DataCopyPad(bIn, biasGm_[squareOff], squareRows, zero);
                biasQue_.EnQue(bIn);
            }
            if (custom) {
                LocalTensor<T> mIn = maskQue_.AllocTensor<T>();
                DataCopyPad(mIn, maskGm_[squareOff], squareRows, zero);
                maskQue_.EnQue(mIn);
            }
            // float32 scores are worked on in their input buffers and the results written into
            // the output ones; 16-bit ones go through float32 buffers (hstu.md §2: S, dP, P and
            // dZ are rounded to q's dtype, the arithmetic between them is float32).
            LocalTensor<float> d = dBuf_.Get<float>();
            LocalTensor<float> t1 = t1Buf_.Get<float>();
            LocalTensor<float> t2 = t2Buf_.Get<float>();
            sIn = sQue_.DeQue<T>();
            dpIn = dpQue_.DeQue<T>();
            LocalTensor<float> z, g;
            if constexpr (kFloat) {
                z = sIn.template ReinterpretCast<float>();
                g = dpIn.template ReinterpretCast<float>();
            } else {
                z = zBuf_.Get<float>();
                g = gBuf_.Get<float>();
                mxrec::HstuToFloat(z, sIn, n);
                sQue_.FreeTensor(sIn);
                mxrec::HstuToFloat(g, dpIn, n);
                dpQue_.FreeTensor(dpIn);
            }
            if (td_->hasBias) {
                LocalTensor<T> bIn = biasQue_.DeQue<T>();
                mxrec::HstuToFloat(t1, bIn, n);
                biasQue_.FreeTensor(bIn);
                Add(z, z, t1, n);
            }
            mxrec::HstuOnePlusExpNeg(d, z, n);  // d = 1 + exp(-z)
            Duplicate(t1, 1.0f, n);
            Div(t1, t1, d, n);  // sigma
            // The mask times s in t2 (no mask tensor: s alone, applied with Muls).
            bool maskTensor = custom;
            if (custom) {
                LocalTensor<T> mIn = maskQue_.DeQue<T>();
                mxrec::HstuToFloat(t2, mIn, n);
                maskQue_.FreeTensor(mIn);
                Muls(t2, t2, s, n);
            } else if (td_->maskType == 0 && c0 + kn - 1 > i0 + r0) {
                // Rows the diagonal crosses: M_ij = clamp(i - j + 1, 0, 1).
                LocalTensor<float> ramp = rampBuf_.Get<float>();
                for (int64_t i = 0; i < rc; ++i) {
                    Adds(t2[static_cast<uint32_t>(i * kw)], ramp,
                         static_cast<float>(i0 + r0 + i - c0 + 1), static_cast<int32_t>(kw));
                }
                Maxs(t2, t2, 0.0f, n);
                Mins(t2, t2, 1.0f, n);
                Muls(t2, t2, s, n);
                maskTensor = true;
            }
            Mul(d, z, t1, n);  // silu(z) = z sigma
            // dZ = dP s M sigma (1 + z (1 - sigma)) = dP s M sigma (z - silu(z) + 1), in z
            Sub(z, z, d, n);
            Adds(z, z, 1.0f, n);
            Mul(z, z, t1, n);
            Mul(z, z, g, n);
            LocalTensor<T> dzOut = dzQue_.AllocTensor<T>();
            ScaleOut(dzOut, z, t2, maskTensor, n);
            dzQue_.EnQue(dzOut);
            LocalTensor<T> pOut = pQue_.AllocTensor<T>();
            ScaleOut(pOut, d, t2, maskTensor, n);  // P = silu(z) s M
            pQue_.EnQue(pOut);
            if constexpr (kFloat) {
                sQue_.FreeTensor(sIn);
                dpQue_.FreeTensor(dpIn);
            }
            const DataCopyExtParams slotOut{static_cast<uint16_t>(rc), rowBytes, 0, slotGap, 0};
            pOut = pQue_.DeQue<T>();
            DataCopyPad(pSlotGm_[r0 * kp], pOut, slotOut);
            pQue_.FreeTensor(pOut);
            dzOut = dzQue_.DeQue<T>();
            DataCopyPad(zSlotGm_[r0 * kp], dzOut, slotOut);
            if (td_->hasBiasGrad) {
                const uint32_t gap = static_cast<uint32_t>((td_->seqLen - kn) * sizeof(T));
                DataCopyPad(dBiasGm_[squareOff], dzOut,
                            DataCopyExtParams{static_cast<uint16_t>(rc), rowBytes, 0, gap, 0});
            }
            dzQue_.FreeTensor(dzOut);
        }
    }

    // out = x s M (M s in t2 when maskTensor, else s alone), in q's dtype: float32 straight into
    // out, 16-bit in place in x and then rounded (CAST_RINT).
    __aicore__ inline void ScaleOut(const LocalTensor<T>& out, const LocalTensor<float>& x,
                                    const LocalTensor<float>& t2, bool maskTensor, int32_t n) {
        if constexpr (kFloat) {
            LocalTensor<float> o = out.template ReinterpretCast<float>();
            if (maskTensor) {
                Mul(o, x, t2, n);
            } else {
                Muls(o, x, td_->scale, n);
            }
        } else {
            if (maskTensor) {
                Mul(x, x, t2, n);
            } else {
                Muls(x, x, td_->scale, n);
            }
            mxrec::HstuFromFloat(out, x, n);
        }
    }

    // rows float32 accumulator rows (stride dp) -> rows of `out` from `off` (stride stride), cast.
    __aicore__ inline void WriteRows(const GlobalTensor<T>& out, const GlobalTensor<float>& acc,
                                     int64_t off, int64_t dp, int64_t rows, int64_t stride) {
        const uint32_t rowBytes = static_cast<uint32_t>(td_->dim * sizeof(T));
        const uint32_t gapBlocks = static_cast<uint32_t>(
            (dp * static_cast<int64_t>(sizeof(T)) - mxrec::AlignUp(rowBytes, mxrec::kBlockBytes)) /
            mxrec::kBlockBytes);
        const uint32_t gmGap = static_cast<uint32_t>((stride - td_->dim) * sizeof(T));
        for (int64_t c0 = 0; c0 < rows; c0 += td_->outRows) {
            const int64_t rc = mxrec::Min64(td_->outRows, rows - c0);
            const int32_t n = static_cast<int32_t>(rc * dp);
            LocalTensor<float> a = accInQue_.AllocTensor<float>();
            DataCopy(a, acc[c0 * dp], static_cast<uint32_t>(n));
            accInQue_.EnQue(a);
            a = accInQue_.DeQue<float>();
            LocalTensor<T> o = accOutQue_.AllocTensor<T>();
            mxrec::HstuFromFloat(o, a, n);
            accInQue_.FreeTensor(a);
            accOutQue_.EnQue(o);
            o = accOutQue_.DeQue<T>();
            DataCopyPad(
                out[off + c0 * stride], o,
                DataCopyExtParams{static_cast<uint16_t>(rc), rowBytes, gapBlocks, gmGap, 0});
            accOutQue_.FreeTensor(o);
        }
    }

    // ---- phase 2 -------------------------------------------------------------------------------
    __aicore__ inline void CastDq() {
        const mxrec::Span rows = mxrec::SplitEven(td_->rows * td_->heads, td_->workers, worker_);
        for (int64_t r = rows.begin; r < rows.end; r += td_->outRows) {
            const int64_t rc = mxrec::Min64(td_->outRows, rows.end - r);
            WriteRows(dqGm_, dqAccGm_[r * td_->dimPad], r * td_->dim, td_->dimPad, rc, td_->dim);
        }
    }

    const HstuDenseBackwardTilingData* td_ = nullptr;
    int64_t nd_ = 0;
    int64_t worker_ = 0;
    mxrec::HstuSequences<HstuDenseBackwardTilingData> seq_;
    int64_t square_ = 0;
    GlobalTensor<T> gGm_;
    GlobalTensor<T> qGm_;
    GlobalTensor<T> kGm_;
    GlobalTensor<T> vGm_;
    GlobalTensor<T> dqGm_;
    GlobalTensor<T> dkGm_;
    GlobalTensor<T> dvGm_;
    GlobalTensor<T> maskGm_;
    GlobalTensor<T> biasGm_;
    GlobalTensor<T> dBiasGm_;
    GlobalTensor<T> pSlotGm_;
    GlobalTensor<T> zSlotGm_;
    GlobalTensor<float> dkAccGm_;
    GlobalTensor<float> dvAccGm_;
    GlobalTensor<float> dqAccGm_;
    TQue<TPosition::VECIN, 2> sQue_;
    TQue<TPosition::VECIN, 2> dpQue_;
    TQue<TPosition::VECIN, 1> biasQue_;
    TQue<TPosition::VECIN, 1> maskQue_;
    TQue<TPosition::VECOUT, 2> pQue_;
    TQue<TPosition::VECOUT, 2> dzQue_;
    TQue<TPosition::VECIN, 1> accInQue_;
    TQue<TPosition::VECOUT, 1> accOutQue_;
    TBuf<TPosition::VECCALC> zBuf_;
    TBuf<TPosition::VECCALC> gBuf_;
    TBuf<TPosition::VECCALC> dBuf_;
    TBuf<TPosition::VECCALC> t1Buf_;
    TBuf<TPosition::VECCALC> t2Buf_;
    TBuf<TPosition::VECCALC> rampBuf_;
    TBuf<TPosition::VECCALC> zeroBuf_;
    TSCM<TPosition::GM, 1> kL1_;
    TSCM<TPosition::GM, 1> vL1_;
    TSCM<TPosition::GM, 1> qL1_;
    TSCM<TPosition::GM, 1> gL1_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "hstu_dense_backward_kernel_entry.h"
