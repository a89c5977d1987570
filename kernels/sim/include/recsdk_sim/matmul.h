// The high-level Matmul API (what kernels get from #include "lib/matmul_intf.h"), emulated on the
// Cube of recsdk_sim/cube.h. Names and signatures are the toolkit's; the semantics are those of
// docs/api/SIMD-API/高阶API/矩阵计算/Matmul-Kernel侧接口/:
// - Matmul使用说明.md: C = A * B + Bias with A [M, K], B [K, N], Bias [1, N] added to every row;
//   MatmulType<POSITION, FORMAT, TYPE, ISTRANS>; the A2 dtype table (table 2); with ISTRANS the
//   transpose is chosen per SetTensorA/SetTensorB call; MIX mode by default, ASCENDC_CUBE_ONLY for
//   code that runs the Matmul object on the AIC itself (then guarded by ASCEND_IS_AIC).
// - REGIST_MATMUL_OBJ.md: registers Matmul objects with their TCubeTiling; at most 4 objects; in
//   separated (AIC/AIV) mode it must come before TPipe::InitBuffer; in MIX mode only the AIVs go on
//   past it (the AIC serves their calls: asc-devkit's REGIST_CUBE_OBJ runs the server loop on the
//   AIC and returns from the kernel), and with ASCENDC_CUBE_ONLY only the AIC does.
// - Init-85.md: Init(tiling) sets the tiling (REGIST_MATMUL_OBJ without one, then Init).
// - SetOrgShape.md: the full M, N, Ka, Kb (row strides), and Kc the N of C when it differs.
// - SetTensorA.md / SetTensorB.md: the operand in GM (the tile at the tensor's start), transposed
//   ([K, M] / [N, K]) if isTransposeA/B, which needs ISTRANS; for non-half/bfloat16 inputs the flag
//   must equal ISTRANS ("三个参数必须同时设置为true或同时设置为false"); the tensor must hold at
//   least singleM x singleK (singleK x singleN) elements.
// - SetBias.md: needs TCubeTiling::isBias = 1; at least singleN elements.
// - SetTail.md: new singleCoreM/N/K for the following computations (-1 keeps one).
// - IterateAll.md: computes the singleCoreM x singleCoreN tile of C into gm (row stride N, or Kc),
//   enAtomic 0 write / 1 add / 2 max / 3 min; sync = false does not wait, and with waitIterateAll
//   the caller waits with WaitIterateAll.md.
// - Iterate.md / GetTensorC.md: one baseM x baseN block per Iterate (iterateOrder 0: along M
// first),
//   fetched by GetTensorC into its place in the tile (GM) or into a VECIN tensor of baseM x baseN.
//   enPartialSum accumulates onto the block in L0C (only when the tile is one block).
// - End.md: required between computations of different Matmul objects.
//
// - TSCM输入的矩阵乘.md: A or B (or both) NZ in L1 (TPosition::TSCM), filled by the kernel through
// a
//   TSCM queue and read in place; the matrix must be there whole ("全载").
//
// Emulated: ND format in GM, NZ in TSCM for A/B, Bias in GM, C in GM (IterateAll, GetTensorC) or
// VECIN (GetTensorC), enSequentialWrite, the Norm configuration, inputs float/half/bfloat16_t.
// Refused at compile time or with a check failure: NZ in GM, VECOUT operands, scalar A/B,
// callbacks (MatmulCallBackFunc), IBShare, MixDualMaster, batch, HF32. Asynchronous IterateAll
// with waitIterateAll stores its result at WaitIterateAll, and a read of C before it is reported
// (mix.h, cross-core ordering of Cube results).
#ifndef RECSDK_SIM_MATMUL_H
#define RECSDK_SIM_MATMUL_H

#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kernel_operator.h"
#include "kernel_tiling/kernel_tiling.h"
#include "recsdk_sim/cube.h"

// include/adv_api/matmul/matmul_config.h names (global namespace, as in the toolkit).
enum class CubeFormat {
    ND = 0,
    NZ,
    ZN,
    ZZ,
    NN,
    ND_ALIGN,
    SCALAR,
    VECTOR,
    ROW_MAJOR = ND,
    COLUMN_MAJOR = 8
};
enum class LayoutMode { NONE = 0, BSNGD, SBNGD, BNGS1S2, NORMAL };
enum class IterateOrder { ORDER_M = 0, ORDER_N, UNDEF };
enum class ScheduleType { INNER_PRODUCT = 0, OUTER_PRODUCT };
enum class BatchMode { NONE = 0, BATCH_LESS_THAN_L1, BATCH_LARGE_THAN_L1, SINGLE_LARGE_THAN_L1 };
enum class MatmulConfigMode { CONFIG_NORM, CONFIG_MDL, CONFIG_SPECIALMDL, CONFIG_IBSHARE };

// MatmulConfig.md; the fields kernels set or the emulation looks at.
struct MatmulConfig {
    bool doNorm = true;
    bool doBasicBlock = false;
    bool doMultiDataLoad = false;
    uint32_t basicM = 0;
    uint32_t basicN = 0;
    uint32_t basicK = 0;
    bool intrinsicsCheck = false;
    bool isNBatch = false;
    bool enVecND2NZ = false;
    bool doSpecialBasicBlock = false;
    uint32_t doMTE2Preload = 0;
    uint32_t singleCoreM = 0;
    uint32_t singleCoreN = 0;
    uint32_t singleCoreK = 0;
    uint32_t stepM = 0;
    uint32_t stepN = 0;
    uint32_t baseMN = 0;
    uint32_t singleCoreMN = 0;
    bool enUnitFlag = true;
    bool doIBShareNorm = false;
    bool doSpecialMDL = false;
    bool enableInit = true;
    BatchMode batchMode = BatchMode::NONE;
    bool enableEnd = true;
    bool enableGetTensorC = true;
    bool enableSetOrgShape = true;
    bool enableSetBias = true;
    bool enableSetTail = true;
    IterateOrder iterateOrder = IterateOrder::UNDEF;
    ScheduleType scheduleType = ScheduleType::INNER_PRODUCT;
    bool intraBlockPartSum = false;
    bool enableMixDualMaster = false;
};

// MatmulShapeParams (GetMMConfig.md): a constant single shape and base block.
struct MatmulShapeParams {
    uint32_t singleCoreM;
    uint32_t singleCoreN;
    uint32_t singleCoreK;
    uint32_t basicM;
    uint32_t basicN;
    uint32_t basicK;
};

// GetNormalConfig.md, GetMDLConfig.md (the leading parameters).
constexpr MatmulConfig GetNormalConfig(const bool intrinsicsLimit = false,
                                       const bool batchLoop = false,
                                       const bool isVecND2NZ = false) {
    MatmulConfig c{};
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.enVecND2NZ = isVecND2NZ;
    return c;
}

constexpr MatmulConfig GetMDLConfig(const bool intrinsicsLimit = false,
                                    const bool batchLoop = false, const uint32_t doMTE2Preload = 0,
                                    const bool isVecND2NZ = false) {
    MatmulConfig c{};
    c.doNorm = false;
    c.doMultiDataLoad = true;
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.doMTE2Preload = doMTE2Preload;
    c.enVecND2NZ = isVecND2NZ;
    return c;
}

// GetMMConfig.md: a template's defaults, with a constant shape if one is given.
template <MatmulConfigMode configMode, typename... Args>
constexpr MatmulConfig GetMMConfig(Args&&... args) {
    MatmulConfig c =
        configMode == MatmulConfigMode::CONFIG_NORM ? GetNormalConfig() : GetMDLConfig();
    if constexpr (configMode == MatmulConfigMode::CONFIG_IBSHARE)
        c.doIBShareNorm = true;
    if constexpr (configMode == MatmulConfigMode::CONFIG_SPECIALMDL)
        c.doSpecialMDL = true;
    auto apply = [&c](const auto& a) {
        if constexpr (std::is_same_v<std::decay_t<decltype(a)>, MatmulShapeParams>) {
            c.singleCoreM = a.singleCoreM;
            c.singleCoreN = a.singleCoreN;
            c.singleCoreK = a.singleCoreK;
            c.basicM = a.basicM;
            c.basicN = a.basicN;
            c.basicK = a.basicK;
        }
    };
    (apply(args), ...);
    return c;
}

constexpr MatmulConfig CFG_NORM = GetNormalConfig();
constexpr MatmulConfig CFG_MDL = GetMDLConfig();

namespace AscendC {

template <TPosition POSITION, CubeFormat FORMAT, typename TYPE, bool ISTRANS = false,
          LayoutMode LAYOUT = LayoutMode::NONE, bool IBSHARE = false,
          TPosition SRCPOS = TPosition::GM>
struct MatmulType {
    constexpr static TPosition pos = POSITION;
    constexpr static CubeFormat format = FORMAT;
    using T = TYPE;
    constexpr static bool isTrans = ISTRANS;
    constexpr static LayoutMode layout = LAYOUT;
    constexpr static bool ibShare = IBSHARE;
    constexpr static TPosition srcPos = SRCPOS;
};

// MatmulCallBackFunc.md. Only the default (no callbacks) is emulated.
template <
    void (*DataCopyOut)(const __gm__ void* gm, const LocalTensor<int8_t>& co1Local,
                        const void* dataCopyOutParams, const uint64_t tilingPtr,
                        const uint64_t dataPtr) = nullptr,
    void (*CopyA1)(const LocalTensor<int8_t>& aMatrix, const __gm__ void* gm, int row, int col,
                   int useM, int useK, const uint64_t tilingPtr, const uint64_t dataPtr) = nullptr,
    void (*CopyB1)(const LocalTensor<int8_t>& bMatrix, const __gm__ void* gm, int row, int col,
                   int useK, int useN, const uint64_t tilingPtr, const uint64_t dataPtr) = nullptr>
struct MatmulCallBackFunc {
    constexpr static bool kNone = DataCopyOut == nullptr && CopyA1 == nullptr && CopyB1 == nullptr;
};

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = C_TYPE,
          const auto& MM_CFG = CFG_NORM,
          class MM_CB = MatmulCallBackFunc<nullptr, nullptr, nullptr>>
class Matmul {
public:
    using SrcAT = typename A_TYPE::T;
    using SrcBT = typename B_TYPE::T;
    using DstT = typename C_TYPE::T;
    using BiasT = typename BIAS_TYPE::T;

    static_assert(std::is_same_v<SrcAT, SrcBT> && recsdk::sim::kCubeInput<SrcAT>,
                  "Matmul emulation: A and B must both be float, half or bfloat16_t "
                  "(Matmul使用说明.md table 2; "
                  "int8/int4 are not emulated)");
    static_assert(
        std::is_same_v<DstT, float> || std::is_same_v<DstT, half> ||
            std::is_same_v<DstT, bfloat16_t>,
        "Matmul emulation: C must be float, half or bfloat16_t (table 2 for these inputs)");
    static_assert(std::is_same_v<BiasT, float> || std::is_same_v<BiasT, half>,
                  "Matmul emulation: the bias must be float or half (SetBias.md)");
    // A and B: ND in GM, or NZ in TSCM (TSCM输入的矩阵乘.md: the kernel fills the L1 buffer and
    // the API reads it in place).
    static constexpr bool kAL1 = A_TYPE::pos == TPosition::TSCM;
    static constexpr bool kBL1 = B_TYPE::pos == TPosition::TSCM;
    static_assert((A_TYPE::pos == TPosition::GM && A_TYPE::format == CubeFormat::ND) ||
                      (kAL1 && A_TYPE::format == CubeFormat::NZ),
                  "Matmul emulation: A must be ND in TPosition::GM or NZ in TPosition::TSCM");
    static_assert((B_TYPE::pos == TPosition::GM && B_TYPE::format == CubeFormat::ND) ||
                      (kBL1 && B_TYPE::format == CubeFormat::NZ),
                  "Matmul emulation: B must be ND in TPosition::GM or NZ in TPosition::TSCM");
    static_assert(C_TYPE::format == CubeFormat::ND && BIAS_TYPE::format == CubeFormat::ND,
                  "Matmul emulation: C and the bias must be CubeFormat::ND");
    // BIAS_TYPE defaults to C_TYPE, so its position is only checked where a bias is set (SetBias
    // takes a GlobalTensor; a local one is refused there).
    static_assert(C_TYPE::pos == TPosition::GM || C_TYPE::pos == TPosition::VECIN,
                  "Matmul emulation: C must be in TPosition::GM or VECIN");
    static_assert(A_TYPE::layout == LayoutMode::NONE && B_TYPE::layout == LayoutMode::NONE,
                  "Matmul emulation: batch layouts are not emulated");
    static_assert(!A_TYPE::ibShare && !B_TYPE::ibShare && !MM_CFG.doIBShareNorm,
                  "Matmul emulation: IBShare is not emulated");
    static_assert(!MM_CFG.enableMixDualMaster && !MM_CFG.intraBlockPartSum && !MM_CFG.isNBatch &&
                      MM_CFG.scheduleType == ScheduleType::INNER_PRODUCT,
                  "Matmul emulation: MixDualMaster, intraBlockPartSum, NBatch and OUTER_PRODUCT "
                  "are not emulated");
    // The callbacks replace the API's own GM -> L1 loads (CopyA1/CopyB1, into L1 buffers the API
    // owns, in its NZ chunking) and its L0C -> GM store (DataCopyOut, from a CO1 tensor): the
    // emulation computes from whole operands and has no such buffers to hand out.
    static_assert(MM_CB::kNone,
                  "Matmul emulation: MatmulCallBackFunc (user DataCopyOut / CopyA1 / CopyB1 "
                  "callbacks) is not emulated: the emulated Matmul has no L1/CO1 chunk buffers to "
                  "pass them (MatmulCallBackFunc.md); load the operands yourself (TSCM inputs) or "
                  "write the Cube code with the low-level API (LoadData/Mmad/Fixpipe)");

    Matmul() = default;
    Matmul(const Matmul&) = delete;
    Matmul& operator=(const Matmul&) = delete;

    void Init(const TCubeTiling* __restrict cubeTiling, TPipe* tpipe = nullptr,
              recsdk::sim::SrcLoc loc = {}) {
        using namespace recsdk::sim;
        const char* call = "Matmul::Init";
        const LaunchState& l = *Core().launch;
        if (cubeTiling == nullptr)
            Fail(call, loc, "no tiling (a null TCubeTiling pointer)");
        const TCubeTiling& t = *cubeTiling;
        auto positive = [&](int32_t v, const char* name) {
            if (v <= 0)
                Fail(call, loc,
                     std::string("TCubeTiling::") + name + " = " + std::to_string(v) +
                         " must be > 0");
        };
        positive(t.M, "M");
        positive(t.N, "N");
        positive(t.Ka, "Ka");
        positive(t.Kb, "Kb");
        positive(t.singleCoreM, "singleCoreM");
        positive(t.singleCoreN, "singleCoreN");
        positive(t.singleCoreK, "singleCoreK");
        positive(t.baseM, "baseM");
        positive(t.baseN, "baseN");
        positive(t.baseK, "baseK");
        positive(t.depthA1, "depthA1");
        positive(t.depthB1, "depthB1");
        positive(t.stepM, "stepM");
        positive(t.stepN, "stepN");
        positive(t.stepKa, "stepKa");
        positive(t.stepKb, "stepKb");
        for (const auto& [v, name] : {std::pair<int32_t, const char*>{t.dbL0A, "dbL0A"},
                                      {t.dbL0B, "dbL0B"},
                                      {t.dbL0C, "dbL0C"}}) {
            if (v != 1 && v != 2)
                Fail(call, loc,
                     std::string("TCubeTiling::") + name + " = " + std::to_string(v) +
                         " must be 1 or 2");
        }
        if (t.iterateOrder != 0 && t.iterateOrder != 1)
            Fail(call, loc, "TCubeTiling::iterateOrder must be 0 or 1");
        if (t.isBias != 0 && t.isBias != 1)
            Fail(call, loc, "TCubeTiling::isBias must be 0 or 1");
        if (t.baseM % 16 != 0 || t.baseN % 16 != 0) {
            Fail(call, loc,
                 "baseM " + std::to_string(t.baseM) + " and baseN " + std::to_string(t.baseN) +
                     " must be multiples of 16 (TCubeTiling结构体.md: base blocks align to the NZ "
                     "fractal)");
        }
        // Matmul-Tiling类/SetDim.md: in MIX mode (separated AIC/AIV, the API driven from the AIVs)
        // the tiling's cores are AIVs (SetDim(GetCoreNumAiv()), usedCoreNum the AIVs that call),
        // blockDim the AI cores; in pure Cube mode (ASCENDC_CUBE_ONLY, AIC-only kernels) AICs.
        const bool mixAiv = l.aic_per_block > 0 && l.aiv_per_block > 0 && !CubeOnly();
        const uint32_t maxCores = mixAiv ? l.soc->vector_cores : l.soc->cube_cores;
        if (l.aic_per_block > 0 && static_cast<uint32_t>(t.usedCoreNum) > maxCores) {
            Fail(call, loc,
                 "TCubeTiling::usedCoreNum " + std::to_string(t.usedCoreNum) + " exceeds the " +
                     std::to_string(maxCores) +
                     (mixAiv ? " vector cores (AIV) of " : " cube cores (AIC) of ") + l.soc->name +
                     (mixAiv ? " (MIX mode: SetDim counts AIVs, Matmul-Tiling类/SetDim.md)"
                             : " (pure Cube mode: SetDim counts AICs, Matmul-Tiling类/SetDim.md)"));
        }
        tiling_ = t;
        orgM_ = t.M;
        orgN_ = t.N;
        orgKa_ = t.Ka;
        orgKb_ = t.Kb;
        orgKc_ = 0;
        sM_ = t.singleCoreM;
        sN_ = t.singleCoreN;
        sK_ = t.singleCoreK;
        inited_ = true;
        ResetIterate();
    }

    // SetSelfDefineData.md / SetUserDefInfo.md: data and tiling for the callbacks, which only a
    // MatmulCallBackFunc uses (refused above, so the values have no effect here). The template
    // prototype does not exist on Atlas A2/A3.
    void SetSelfDefineData(const uint64_t dataPtr) { selfData_ = dataPtr; }
    template <typename T>
    void SetSelfDefineData(T) {
        static_assert(sizeof(T) == 0,
                      "Matmul::SetSelfDefineData(T dataPtr): Atlas A2/A3 support only "
                      "SetSelfDefineData(const uint64_t) (SetSelfDefineData.md)");
    }
    void SetUserDefInfo(const uint64_t tilingPtr) { userInfo_ = tilingPtr; }

    void SetSubBlockIdx(uint8_t) {}
    void SetWorkspace(GlobalTensor<uint8_t>&) {}
    template <typename T>
    void SetWorkspace(__gm__ const T*, int) {}
    void SetHF32(bool enableHF32 = false, int32_t transMode = 0, recsdk::sim::SrcLoc loc = {}) {
        if (enableHF32)
            recsdk::sim::Fail("Matmul::SetHF32", loc, "HF32 mode is not emulated");
    }

    void SetOrgShape(int orgM, int orgN, int orgK, recsdk::sim::SrcLoc loc = {}) {
        SetOrgShape(orgM, orgN, orgK, orgK, 0, loc);
    }
    void SetOrgShape(int orgM, int orgN, int orgKa, int orgKb, int orgKc = 0,
                     recsdk::sim::SrcLoc loc = {}) {
        Ready("Matmul::SetOrgShape", loc);
        if (orgM <= 0 || orgN <= 0 || orgKa <= 0 || orgKb <= 0 || orgKc < 0) {
            recsdk::sim::Fail("Matmul::SetOrgShape", loc, "shapes must be positive (orgKc >= 0)");
        }
        orgM_ = orgM;
        orgN_ = orgN;
        orgKa_ = orgKa;
        orgKb_ = orgKb;
        orgKc_ = orgKc;
        ResetIterate();
    }

    void SetSingleShape(int singleM, int singleN, int singleK, recsdk::sim::SrcLoc loc = {}) {
        SetTail(singleM, singleN, singleK, loc);
    }
    void SetTail(int tailM = -1, int tailN = -1, int tailK = -1, recsdk::sim::SrcLoc loc = {}) {
        Ready("Matmul::SetTail", loc);
        if (tailM == 0 || tailN == 0 || tailK == 0 || tailM < -1 || tailN < -1 || tailK < -1) {
            recsdk::sim::Fail("Matmul::SetTail", loc,
                              "tails must be positive (-1 keeps the current value)");
        }
        if (tailM > 0)
            sM_ = tailM;
        if (tailN > 0)
            sN_ = tailN;
        if (tailK > 0)
            sK_ = tailK;
        ResetIterate();
    }

    void SetTensorA(const GlobalTensor<SrcAT>& gm, bool isTransposeA = false,
                    recsdk::sim::SrcLoc loc = {}) {
        Ready("Matmul::SetTensorA", loc);
        if constexpr (kAL1)
            recsdk::sim::Fail("Matmul::SetTensorA", loc,
                              "A's MatmulType is TSCM: pass its L1 tensor");
        CheckTrans("Matmul::SetTensorA", "A", A_TYPE::isTrans, isTransposeA, loc);
        a_ = gm.SimData();
        aSize_ = gm.GetSize();
        transA_ = isTransposeA;
        ResetIterate();
    }
    // A in L1 (TSCM): the whole [M, K] ([K, M] transposed) in NZ, column groups
    // CeilAlign(rows, 16) apart (the layout an ND2NZ copy with dstNzC0Stride = CeilAlign(rows,
    // 16) and dstNzNStride = 1 makes). VECOUT operands are not emulated.
    void SetTensorA(const LocalTensor<SrcAT>& t, bool isTransposeA = false,
                    recsdk::sim::SrcLoc loc = {}) {
        const char* call = "Matmul::SetTensorA";
        Ready(call, loc);
        SetLocal<kAL1>(t, "A", call, loc);
        CheckTrans(call, "A", A_TYPE::isTrans, isTransposeA, loc);
        aL1_ = t;
        a_ = t.SimData();
        aSize_ = t.GetSize();
        transA_ = isTransposeA;
        ResetIterate();
    }
    void SetTensorA(SrcAT, recsdk::sim::SrcLoc loc = {}) {
        recsdk::sim::Fail("Matmul::SetTensorA", loc, "a scalar A is not emulated");
    }

    void SetTensorB(const GlobalTensor<SrcBT>& gm, bool isTransposeB = false,
                    recsdk::sim::SrcLoc loc = {}) {
        Ready("Matmul::SetTensorB", loc);
        if constexpr (kBL1)
            recsdk::sim::Fail("Matmul::SetTensorB", loc,
                              "B's MatmulType is TSCM: pass its L1 tensor");
        CheckTrans("Matmul::SetTensorB", "B", B_TYPE::isTrans, isTransposeB, loc);
        b_ = gm.SimData();
        bSize_ = gm.GetSize();
        transB_ = isTransposeB;
        ResetIterate();
    }
    // B in L1 (TSCM): [K, N] ([N, K] transposed) in NZ, as SetTensorA.
    void SetTensorB(const LocalTensor<SrcBT>& t, bool isTransposeB = false,
                    recsdk::sim::SrcLoc loc = {}) {
        const char* call = "Matmul::SetTensorB";
        Ready(call, loc);
        SetLocal<kBL1>(t, "B", call, loc);
        CheckTrans(call, "B", B_TYPE::isTrans, isTransposeB, loc);
        bL1_ = t;
        b_ = t.SimData();
        bSize_ = t.GetSize();
        transB_ = isTransposeB;
        ResetIterate();
    }
    void SetTensorB(SrcBT, recsdk::sim::SrcLoc loc = {}) {
        recsdk::sim::Fail("Matmul::SetTensorB", loc, "a scalar B is not emulated");
    }

    void SetBias(const GlobalTensor<BiasT>& biasGlobal, recsdk::sim::SrcLoc loc = {}) {
        Ready("Matmul::SetBias", loc);
        if (tiling_.isBias != 1) {
            recsdk::sim::Fail(
                "Matmul::SetBias", loc,
                "the tiling has isBias = 0; SetBias needs TCubeTiling::isBias = 1 (SetBias.md)");
        }
        bias_ = biasGlobal.SimData();
        biasSize_ = biasGlobal.GetSize();
        ResetIterate();
    }
    void SetBias(const LocalTensor<BiasT>&, recsdk::sim::SrcLoc loc = {}) {
        recsdk::sim::Fail("Matmul::SetBias", loc, "a bias in local memory is not emulated");
    }
    void DisableBias() { bias_ = nullptr; }
    void ClearBias() { bias_ = nullptr; }

    // IterateAll.md. enSequentialWrite = false: C is the [singleCoreM, singleCoreN] tile at gm,
    // row stride N (or Kc); true: the base blocks one after another at gm, baseM x baseN elements
    // apart in iteration order, each with rows of its own width (the server's offsets,
    // matmul_server_impl_c220.h GetOffsetSize).
    template <bool sync = true>
    void IterateAll(const GlobalTensor<DstT>& gm, uint8_t enAtomic = 0,
                    bool enSequentialWrite = false, bool waitIterateAll = false,
                    bool fakeMsg = false, recsdk::sim::SrcLoc loc = {}) {
        using namespace recsdk::sim;
        const char* call = "Matmul::IterateAll";
        if (fakeMsg)
            Fail(call, loc, "fakeMsg (IBShare / IntraBlockPartSum) is not emulated");
        CheckAtomic(enAtomic, call, loc);
        if (pendingWait_) {
            Fail(call, loc,
                 "a new IterateAll while the asynchronous one at " + pendingAt_ +
                     " has not been waited for (WaitIterateAll)");
        }
        const int64_t ldc = orgKc_ > 0 ? orgKc_ : orgN_;
        const MmOperands<SrcAT, SrcBT, BiasT> x = Operands(call, loc);
        const int64_t bmMax = mxrec::Min64(tiling_.baseM, mxrec::AlignUp(x.m, 16));
        const int64_t bnMax = mxrec::Min64(tiling_.baseN, mxrec::AlignUp(x.n, 16));
        const int64_t mBlocks = mxrec::CeilDiv(x.m, bmMax), nBlocks = mxrec::CeilDiv(x.n, bnMax);
        if (enSequentialWrite) {
            const int64_t span = (mBlocks * nBlocks - 1) * int64_t(tiling_.baseM) * tiling_.baseN +
                                 mxrec::Min64(bmMax, x.m - (mBlocks - 1) * bmMax) *
                                     mxrec::Min64(bnMax, x.n - (nBlocks - 1) * bnMax);
            CheckGmMatrix(gm.SimData(), gm.GetSize(), 1, span, span, true, "C (sequential blocks)",
                          call, loc);
        } else {
            CheckGmMatrix(gm.SimData(), gm.GetSize(), x.m, x.n, ldc, true, "C", call, loc);
        }
        // The blocks in iteration order, each as the float the FIX pipe converts.
        std::vector<Block> blocks(static_cast<size_t>(mBlocks * nBlocks));
        {
            CubeExec e = AcquireCube(CubeOnly(), call, loc);
            Account(e, x);
            uint64_t macs = 0;
            for (int64_t b = 0; b < mBlocks * nBlocks; ++b) {
                Block& blk = blocks[static_cast<size_t>(b)];
                const int64_t mi = tiling_.iterateOrder == 1 ? b / nBlocks : b % mBlocks;
                const int64_t ni = tiling_.iterateOrder == 1 ? b % nBlocks : b / mBlocks;
                blk.m0 = mi * bmMax;
                blk.n0 = ni * bnMax;
                blk.bm = mxrec::Min64(bmMax, x.m - blk.m0);
                blk.bn = mxrec::Min64(bnMax, x.n - blk.n0);
                blk.acc.resize(static_cast<size_t>(blk.bm * blk.bn));
                MmBlock(x, tiling_, blk.m0, blk.n0, blk.bm, blk.bn, false, blk.acc.data(),
                        e.stats(), &macs);
                e.stats().l0c_out_bytes += uint64_t(blk.bm * blk.bn) * sizeof(DstT);
                ++e.stats().dma_transfers;
            }
            const uint32_t rate = CubeMacsPerCycle<SrcAT>(*e.soc);
            e.stats().cube_cycles += (macs + rate - 1) / rate;
        }
        DstT* dst = gm.SimData();
        const int64_t blockElems = int64_t(tiling_.baseM) * tiling_.baseN;
        const bool seqW = enSequentialWrite;
        auto store = [this, dst, ldc, enAtomic, seqW, blockElems, blocks = std::move(blocks)](
                         const char* c, const SrcLoc& l) {
            CubeExec e = AcquireCube(CubeOnly(), c, l);
            for (size_t b = 0; b < blocks.size(); ++b) {
                const Block& blk = blocks[b];
                DstT* to = seqW ? dst + int64_t(b) * blockElems : dst + blk.m0 * ldc + blk.n0;
                StoreTile(to, seqW ? blk.bn : ldc, blk.acc.data(), blk.bm, blk.bn, blk.bn,
                          enAtomic);
                const uint64_t bytes = uint64_t(blk.bm * blk.bn) * sizeof(DstT);
                recsdk::sim::CountGmWrite(e.stats(), to, bytes);
                if (enAtomic != 0)
                    e.stats().atomic_write_bytes += bytes;
            }
        };
        // What the Cube wrote, for the cross-core ordering check (mix.h): known to this core when
        // the call returns, or at WaitIterateAll.
        // Asynchronous without waitIterateAll, the caller waits "by its own means" (IterateAll.md):
        // the result is stored now but known to no core until a later synchronous IterateAll or
        // WaitIterateAll of this object (the client's messages are served in order), so a read
        // before that is reported instead of being treated as synchronous.
        const bool later = !sync && waitIterateAll;
        const bool unwaited = !sync && !waitIterateAll;
        uint32_t seq = 0;
        if (seqW) {
            for (int64_t b = 0; b < mBlocks * nBlocks; ++b)
                seq = XcoreCubeWrote(dst + b * blockElems, 1, uint64_t(blockElems) * sizeof(DstT),
                                     uint64_t(blockElems) * sizeof(DstT), later || unwaited, call,
                                     loc);
        } else {
            seq = XcoreCubeWrote(dst, x.m, uint64_t(x.n) * sizeof(DstT),
                                 uint64_t(ldc) * sizeof(DstT), later || unwaited, call, loc);
        }
        if (unwaited) {
            store(call, loc);
            unwaited_.push_back(seq);
        } else if (later) {
            pending_ = std::move(store);
            pendingWait_ = true;
            pendingAt_ = loc.str();
            pendingSeq_ = seq;
        } else {
            store(call, loc);
            LandUnwaited();
        }
    }
    template <bool sync = true>
    void IterateAll(const LocalTensor<DstT>&, uint8_t = 0, recsdk::sim::SrcLoc loc = {}) {
        recsdk::sim::Fail(
            "Matmul::IterateAll", loc,
            "IterateAll into a local tensor is not emulated (use Iterate/GetTensorC)");
    }

    // WaitIterateAll.md.
    void WaitIterateAll(recsdk::sim::SrcLoc loc = {}) {
        using namespace recsdk::sim;
        const char* call = "Matmul::WaitIterateAll";
        Ready(call, loc);
        if (!pendingWait_) {
            Fail(call, loc,
                 "no IterateAll<false>(..., waitIterateAll = true) is pending: the vector core "
                 "would wait "
                 "forever for the Cube's message (deadlock)");
        }
        auto store = std::move(pending_);
        pending_ = nullptr;
        pendingWait_ = false;
        store(call, loc);
        XcoreCubeLanded(pendingSeq_);
        LandUnwaited();
    }

    // Iterate.md: the next baseM x baseN block; false once the tile is done.
    template <bool sync = true>
    bool Iterate(bool enPartialSum = false, recsdk::sim::SrcLoc loc = {}) {
        using namespace recsdk::sim;
        const char* call = "Matmul::Iterate";
        if (pendingWait_)
            Fail(call, loc, "Iterate while an asynchronous IterateAll has not been waited for");
        const MmOperands<SrcAT, SrcBT, BiasT> x = Operands(call, loc);
        const int64_t bmMax = mxrec::Min64(tiling_.baseM, mxrec::AlignUp(x.m, 16));
        const int64_t bnMax = mxrec::Min64(tiling_.baseN, mxrec::AlignUp(x.n, 16));
        const int64_t mBlocks = mxrec::CeilDiv(x.m, bmMax), nBlocks = mxrec::CeilDiv(x.n, bnMax);
        if (enPartialSum && (mBlocks != 1 || nBlocks != 1)) {
            Fail(call, loc,
                 "enPartialSum needs singleCoreM == baseM and singleCoreN == baseN (Iterate.md)");
        }
        if (!iterating_) {
            iterating_ = true;
            next_ = 0;
            CubeExec e = AcquireCube(CubeOnly(), call, loc);
            Account(e, x);
        }
        if (!sync) {  // all blocks now, fetched one by one by GetTensorC<false>
            while (IterateOne(x, mBlocks, nBlocks, bmMax, bnMax, enPartialSum, call, loc))
                queued_.push_back(cur_);
            haveBlock_ = false;
            ResetIterate();
            return !queued_.empty();
        }
        if (haveBlock_ && !fetched_ && !enPartialSum) {
            Fail(call, loc,
                 "Iterate before the previous block was fetched with GetTensorC (its L0C would be "
                 "overwritten)");
        }
        if (!IterateOne(x, mBlocks, nBlocks, bmMax, bnMax, enPartialSum, call, loc)) {
            ResetIterate();
            return false;
        }
        return true;
    }

    // GetTensorC.md: the block of the last Iterate into gm. enSequentialWrite = false (the
    // default, "非连续写"): at its place in the [singleCoreM, singleCoreN] tile, row stride N (or
    // Kc); true ("连续写"): [baseM, baseN] at gm's start, rows of the block's width one after
    // another (impl copy_cube_out: stride = the block's N when sequential).
    template <bool sync = true>
    void GetTensorC(const GlobalTensor<DstT>& gm, uint8_t enAtomic = 0,
                    bool enSequentialWrite = false, recsdk::sim::SrcLoc loc = {}) {
        using namespace recsdk::sim;
        const char* call = "Matmul::GetTensorC";
        CheckAtomic(enAtomic, call, loc);
        const Block blk = Fetch<sync>(call, loc);
        const int64_t ldc = enSequentialWrite ? blk.bn : (orgKc_ > 0 ? orgKc_ : orgN_);
        const int64_t off = enSequentialWrite ? 0 : blk.m0 * ldc + blk.n0;
        DstT* dst = gm.SimData() + off;
        if (uint64_t(off) > gm.GetSize()) {
            Fail(call, loc,
                 "the block at rows " + std::to_string(blk.m0) + ", columns " +
                     std::to_string(blk.n0) + " of the tile starts at element " +
                     std::to_string(off) + ", past the " + std::to_string(gm.GetSize()) +
                     " elements of C (enSequentialWrite = false writes each block at its place "
                     "in the tile, GetTensorC.md)");
        }
        CheckGmMatrix(dst, gm.GetSize() - uint64_t(off), blk.bm, blk.bn, ldc, true, "C block", call,
                      loc);
        CubeExec e = AcquireCube(CubeOnly(), call, loc);
        StoreTile(dst, ldc, blk.acc.data(), blk.bm, blk.bn, blk.bn, enAtomic);
        const uint64_t bytes = uint64_t(blk.bm * blk.bn) * sizeof(DstT);
        e.stats().l0c_out_bytes += bytes;
        CountGmWrite(e.stats(), dst, bytes);
        if (enAtomic != 0)
            e.stats().atomic_write_bytes += bytes;
        ++e.stats().dma_transfers;
        XcoreCubeWrote(dst, blk.bm, uint64_t(blk.bn) * sizeof(DstT), uint64_t(ldc) * sizeof(DstT),
                       false, call, loc);
    }

    // The block into a VECIN tensor (at least baseM x baseN elements). On Atlas A2/A3 the Cube
    // cannot write the unified buffer: the AIC's FixPipe writes the block to global memory and
    // the calling AIV copies the tensor's c.GetSize() elements in with MTE2, then waits on
    // HardEvent::MTE2_V (matmul_client.h GetTensorC / CopyToUB). So the write is the AIV's MTE2
    // over the whole tensor, ordered before its vector pipe only; what enSequentialWrite
    // places where is as for GM: true packs the block at the tensor's start (rows of the block's
    // width), false puts it at its place in the [singleCoreM, N] tile, which the tensor must then
    // hold (the official samples pass true with a baseM x baseN tensor).
    template <bool sync = true>
    void GetTensorC(const LocalTensor<DstT>& co2Local, uint8_t enAtomic = 0,
                    bool enSequentialWrite = false, recsdk::sim::SrcLoc loc = {}) {
        using namespace recsdk::sim;
        const char* call = "Matmul::GetTensorC";
        if (enAtomic != 0)
            Fail(call, loc, "enAtomic into a local tensor is not emulated");
        if (Core().core_type != kAiv)
            Fail(call, loc, "C into a VECIN tensor needs a vector core's unified buffer");
        const uint64_t need = uint64_t(tiling_.baseM) * uint64_t(tiling_.baseN);
        co2Local.CheckSpan(need, call, loc);
        const Block blk = Fetch<sync>(call, loc);
        const int64_t ldc = enSequentialWrite ? blk.bn : (orgKc_ > 0 ? orgKc_ : orgN_);
        const int64_t off = enSequentialWrite ? 0 : blk.m0 * ldc + blk.n0;
        const uint64_t span = uint64_t(off) + uint64_t((blk.bm - 1) * ldc + blk.bn);
        if (span > co2Local.GetSize()) {
            Fail(call, loc,
                 "with enSequentialWrite = false the block (rows " + std::to_string(blk.m0) +
                     "..., columns " + std::to_string(blk.n0) +
                     "...) goes to its place in the tile, row stride " + std::to_string(ldc) +
                     ", up to element " + std::to_string(span) + ", but the tensor holds " +
                     std::to_string(co2Local.GetSize()) +
                     " (GetTensorC.md: 非连续写 writes into [singleCoreM, singleCoreN]; pass "
                     "enSequentialWrite = true to get the block as [baseM, baseN])");
        }
        co2Local.SimAccess(0, uint64_t(co2Local.GetSize()) * sizeof(DstT), Pipe::MTE2, Acc::kWrite,
                           call, loc);
        HzOrder(Pipe::MTE2, Pipe::V);  // the client's SetFlag/WaitFlag<HardEvent::MTE2_V>
        CubeExec e = AcquireCube(CubeOnly(), call, loc);
        DstT* d = co2Local.SimData() + off;
        for (int64_t i = 0; i < blk.bm; ++i) {
            for (int64_t j = 0; j < blk.bn; ++j)
                d[i * ldc + j] = static_cast<DstT>(blk.acc[i * blk.bn + j]);
        }
        e.stats().l0c_out_bytes += uint64_t(blk.bm * blk.bn) * sizeof(DstT);
    }

    // End.md.
    void End(recsdk::sim::SrcLoc loc = {}) {
        using namespace recsdk::sim;
        const char* call = "Matmul::End";
        if (pendingWait_) {
            Fail(call, loc,
                 "End() while the asynchronous IterateAll at " + pendingAt_ +
                     " has not been waited for (WaitIterateAll)");
        }
        CoreState& c = Core();
        const void*& active = c.launch->cube->active[c.slot];
        if (active == this)
            active = nullptr;
        ResetIterate();
        queued_.clear();
    }

    // ---- simulator internals ----
    void SimRegistered() { registered_ = true; }

private:
    struct Block {
        int64_t m0 = 0, n0 = 0, bm = 0, bn = 0;
        std::vector<float> acc;
    };

    // REGIST_MATMUL_OBJ reads ASCENDC_CUBE_ONLY where the kernel expands it (matmul_intf.h).
    static bool CubeOnly() { return recsdk::sim::Core().matmul_cube_only; }

    void Ready(const char* call, const recsdk::sim::SrcLoc& loc) const {
        recsdk::sim::Core();
        if (!inited_) {
            recsdk::sim::Fail(call, loc,
                              registered_ ? "the Matmul object has no tiling yet "
                                            "(REGIST_MATMUL_OBJ without one, then Init)"
                                          : "Matmul object used before REGIST_MATMUL_OBJ / Init");
        }
    }

    void CheckTrans(const char* call, const char* which, bool isTrans, bool trans,
                    const recsdk::sim::SrcLoc& loc) const {
        if (trans && !isTrans) {
            recsdk::sim::Fail(call, loc,
                              std::string("transposed ") + which +
                                  " needs ISTRANS = true in its MatmulType; the hardware "
                                  "would compute with the untransposed layout "
                                  "(SetTensorA.md/SetTensorB.md: \"精度会有异常\")");
        }
        if constexpr (std::is_same_v<SrcAT, float>) {
            if (trans != isTrans) {
                recsdk::sim::Fail(call, loc,
                                  std::string("for float inputs the transpose flag of ") + which +
                                      " must equal its MatmulType's ISTRANS "
                                      "(SetTensorA.md/SetTensorB.md: the L1 sizes "
                                      "of tiling and kernel must agree)");
            }
        }
    }

    template <bool kL1, typename T>
    static void SetLocal(const LocalTensor<T>& t, const char* which, const char* call,
                         const recsdk::sim::SrcLoc& loc) {
        if constexpr (!kL1) {
            recsdk::sim::Fail(call, loc,
                              std::string(which) +
                                  " in local memory needs MatmulType<TPosition::TSCM, "
                                  "CubeFormat::NZ, ...> (VECOUT operands are not emulated)");
        }
        t.Validate(call, loc);
        if (!t.SimInL1()) {
            recsdk::sim::Fail(call, loc,
                              std::string(which) +
                                  " must be a TSCM tensor in L1 (a TSCM queue's buffer), not a "
                                  "unified-buffer tensor");
        }
    }

    // An operand in L1 for a computation: still allocated, holding the whole stored matrix
    // (TSCM输入的矩阵乘.md 约束说明: "必须在TSCM中全载"), and read by MTE1 (L1 -> L0A/L0B), which
    // the hazard checker orders after the MTE2 copy that filled it (the TSCM queue's EnQue/DeQue).
    // Returns the stored matrix's padded row count (the NZ column-group stride).
    template <typename T>
    static int64_t L1Operand(const LocalTensor<T>& t, int64_t rows, int64_t cols, const char* what,
                             const char* call, const recsdk::sim::SrcLoc& loc) {
        using namespace recsdk::sim;
        t.Validate(call, loc);
        const int64_t ld = mxrec::AlignUp(rows, 16);
        const uint64_t need = uint64_t(ld * mxrec::AlignUp(cols, 32 / int64_t(sizeof(T))));
        if (need > t.GetSize()) {
            Fail(call, loc,
                 std::string(what) + " in TSCM must hold the whole " + std::to_string(rows) +
                     " x " + std::to_string(cols) + " matrix in NZ (" + std::to_string(need) +
                     " elements, rows padded to 16); the tensor has " +
                     std::to_string(t.GetSize()));
        }
        t.SimAccess(0, need * sizeof(T), Pipe::MTE1, Acc::kRead, call, loc);
        return ld;
    }

    static void CheckAtomic(uint8_t enAtomic, const char* call, const recsdk::sim::SrcLoc& loc) {
        if (enAtomic > 3)
            recsdk::sim::Fail(call, loc, "enAtomic " + std::to_string(enAtomic) + " is not 0-3");
    }

    // Everything a computation needs, checked: tiling, operands, buffers, global memory, End().
    recsdk::sim::MmOperands<SrcAT, SrcBT, BiasT> Operands(const char* call,
                                                          const recsdk::sim::SrcLoc& loc) {
        using namespace recsdk::sim;
        Ready(call, loc);
        if (a_ == nullptr)
            Fail(call, loc, "no A (SetTensorA)");
        if (b_ == nullptr)
            Fail(call, loc, "no B (SetTensorB)");
        if (tiling_.isBias == 1 && bias_ == nullptr)
            Fail(call, loc, "the tiling has isBias = 1 but no SetBias");
        CoreState& c = Core();
        const void*& active = c.launch->cube->active[c.slot];
        if (active != nullptr && active != this) {
            Fail(call, loc,
                 "another Matmul object computed last and did not call End(): End() is required "
                 "between "
                 "uses of different Matmul objects (End.md)");
        }
        MmOperands<SrcAT, SrcBT, BiasT> x;
        x.a = a_;
        x.b = b_;
        x.bias = tiling_.isBias == 1 ? bias_ : nullptr;
        x.m = sM_;
        x.n = sN_;
        x.k = sK_;
        x.transA = transA_;
        x.transB = transB_;
        x.lda = transA_ ? orgM_ : orgKa_;
        x.ldb = transB_ ? orgKb_ : orgN_;
        if constexpr (kAL1) {
            x.aNz = true;
            x.lda = transA_ ? L1Operand(aL1_, x.k, x.m, "A (transposed, [K, M])", call, loc)
                            : L1Operand(aL1_, x.m, x.k, "A", call, loc);
        }
        if constexpr (kBL1) {
            x.bNz = true;
            x.ldb = transB_ ? L1Operand(bL1_, x.n, x.k, "B (transposed, [N, K])", call, loc)
                            : L1Operand(bL1_, x.k, x.n, "B", call, loc);
        }
        mxrec::CubeTile tile;
        tile.m = x.m;
        tile.n = x.n;
        tile.k = x.k;
        tile.aBytes = sizeof(SrcAT);
        tile.bBytes = sizeof(SrcBT);
        tile.biasBytes = sizeof(BiasT);
        tile.transA = x.transA;
        tile.transB = x.transB;
        tile.bias = x.bias != nullptr;
        tile.aL1 = kAL1;
        tile.bL1 = kBL1;
        const int64_t kAlign = mxrec::BaseKAlign(tile);
        if (tiling_.baseK % kAlign != 0) {
            Fail(call, loc,
                 "baseK " + std::to_string(tiling_.baseK) + " must be a multiple of " +
                     std::to_string(kAlign) +
                     " for this transpose combination (TCubeTiling结构体.md table 2)");
        }
        const SocInfo& soc = *c.launch->soc;
        // The API's own L1 buffers get what the AI core's TSCM buffers leave (pipe.h).
        uint64_t tscm = 0;
        {
            CubeCore& cube = c.launch->cube->cubes[c.block];
            std::lock_guard<std::mutex> hold(cube.mu);
            tscm = cube.TscmBytes();
        }
        const mxrec::CubeBuffers cap{soc.l1_bytes - tscm, soc.l0a_bytes, soc.l0b_bytes,
                                     soc.l0c_bytes, soc.bt_bytes};
        const std::string over = mxrec::CubeOverflow(mxrec::CubeFootprint(tiling_, tile, cap));
        if (!over.empty()) {
            Fail(call, loc,
                 over + " on " + soc.name + " (singleCoreM/N/K " + std::to_string(x.m) + "/" +
                     std::to_string(x.n) + "/" + std::to_string(x.k) + ")");
        }
        if (!kAL1) {
            if (transA_)
                CheckGmMatrix(x.a, aSize_, x.k, x.m, x.lda, false, "A (transposed, [K, M])", call,
                              loc);
            else
                CheckGmMatrix(x.a, aSize_, x.m, x.k, x.lda, false, "A", call, loc);
        }
        if (!kBL1) {
            if (transB_)
                CheckGmMatrix(x.b, bSize_, x.n, x.k, x.ldb, false, "B (transposed, [N, K])", call,
                              loc);
            else
                CheckGmMatrix(x.b, bSize_, x.k, x.n, x.ldb, false, "B", call, loc);
        }
        if (x.bias != nullptr)
            CheckGmMatrix(x.bias, biasSize_, 1, x.n, x.n, false, "the bias", call, loc);
        active = this;
        return x;
    }

    // The loads of a whole tile into L1 (counted once per computation).
    void Account(recsdk::sim::CubeExec& e, const recsdk::sim::MmOperands<SrcAT, SrcBT, BiasT>& x) {
        recsdk::sim::MmGmToL1(x, tiling_, e.stats());
    }

    bool IterateOne(const recsdk::sim::MmOperands<SrcAT, SrcBT, BiasT>& x, int64_t mBlocks,
                    int64_t nBlocks, int64_t bmMax, int64_t bnMax, bool enPartialSum,
                    const char* call, const recsdk::sim::SrcLoc& loc) {
        using namespace recsdk::sim;
        if (next_ >= mBlocks * nBlocks)
            return false;
        const int64_t b = next_++;
        const int64_t mi = tiling_.iterateOrder == 1 ? b / nBlocks : b % mBlocks;
        const int64_t ni = tiling_.iterateOrder == 1 ? b % nBlocks : b / mBlocks;
        const bool accumulate = enPartialSum && haveBlock_;
        cur_.m0 = mi * bmMax;
        cur_.n0 = ni * bnMax;
        cur_.bm = mxrec::Min64(bmMax, x.m - cur_.m0);
        cur_.bn = mxrec::Min64(bnMax, x.n - cur_.n0);
        cur_.acc.resize(static_cast<size_t>(cur_.bm * cur_.bn));
        CubeExec e = AcquireCube(CubeOnly(), call, loc);
        uint64_t macs = 0;
        MmBlock(x, tiling_, cur_.m0, cur_.n0, cur_.bm, cur_.bn, accumulate, cur_.acc.data(),
                e.stats(), &macs);
        const uint32_t rate = CubeMacsPerCycle<SrcAT>(*e.soc);
        e.stats().cube_cycles += (macs + rate - 1) / rate;
        haveBlock_ = true;
        fetched_ = false;
        return true;
    }

    template <bool sync>
    Block Fetch(const char* call, const recsdk::sim::SrcLoc& loc) {
        Ready(call, loc);
        if constexpr (!sync) {
            if (queued_.empty()) {
                recsdk::sim::Fail(call, loc,
                                  "GetTensorC<false> with no block left from Iterate<false>");
            }
            Block b = std::move(queued_.front());
            queued_.pop_front();
            return b;
        } else {
            if (!haveBlock_ || fetched_) {
                recsdk::sim::Fail(call, loc, "GetTensorC without a block from Iterate before it");
            }
            fetched_ = true;
            return cur_;
        }
    }

    // Fixpipe: float -> C's type (round to nearest even), written or combined with enAtomic.
    static void StoreTile(DstT* dst, int64_t ldc, const float* acc, int64_t m, int64_t n,
                          int64_t lda, uint8_t enAtomic) {
        for (int64_t i = 0; i < m; ++i) {
            DstT* row = dst + i * ldc;
            const float* src = acc + i * lda;
            if (enAtomic == 0) {
                for (int64_t j = 0; j < n; ++j)
                    row[j] = static_cast<DstT>(src[j]);
            } else {
                for (int64_t j = 0; j < n; ++j)
                    recsdk::sim::AtomicCubeOut(row + j, src[j], enAtomic);
            }
        }
    }

    void ResetIterate() {
        iterating_ = false;
        next_ = 0;
    }

    bool inited_ = false;
    bool registered_ = false;
    TCubeTiling tiling_{};
    int64_t orgM_ = 0, orgN_ = 0, orgKa_ = 0, orgKb_ = 0, orgKc_ = 0;
    int64_t sM_ = 0, sN_ = 0, sK_ = 0;
    const SrcAT* a_ = nullptr;
    const SrcBT* b_ = nullptr;
    LocalTensor<SrcAT> aL1_;  // A / B in TSCM
    LocalTensor<SrcBT> bL1_;
    const BiasT* bias_ = nullptr;
    uint64_t aSize_ = 0, bSize_ = 0, biasSize_ = 0;
    bool transA_ = false, transB_ = false;
    // Iterate / GetTensorC
    bool iterating_ = false;
    int64_t next_ = 0;
    bool haveBlock_ = false;
    bool fetched_ = true;
    Block cur_;
    std::deque<Block> queued_;
    // IterateAll<false>(..., waitIterateAll = true): the store WaitIterateAll performs.
    std::function<void(const char*, const recsdk::sim::SrcLoc&)> pending_;
    bool pendingWait_ = false;
    std::string pendingAt_;
    uint32_t pendingSeq_ = 0;  // its write number (mix.h XcoreCubeWrote)
    // Asynchronous IterateAll calls without waitIterateAll whose results no core knows yet.
    std::vector<uint32_t> unwaited_;
    void LandUnwaited() {
        for (uint32_t seq : unwaited_)
            recsdk::sim::XcoreCubeLanded(seq);
        unwaited_.clear();
    }
    uint64_t selfData_ = 0;  // SetSelfDefineData / SetUserDefInfo (for callbacks)
    uint64_t userInfo_ = 0;
};

}  // namespace AscendC

// include/adv_api/matmul/matmul.h: "Compatible with the previously used matmul namespace" - the
// official samples write matmul::Matmul / matmul::MatmulType or `using namespace matmul;`.
namespace matmul = AscendC;

namespace recsdk::sim {

// REGIST_MATMUL_OBJ(pipe, workspace, mm1[, &tiling1][, mm2[, &tiling2] ...]): returns true where
// the calling core leaves the kernel (the AIC in MIX mode, whose server loop the emulation does not
// need; an AIV when ASCENDC_CUBE_ONLY is defined, as the toolkit's vector build of the macro is
// `return`).
template <class Obj>
inline void RegisterOne(AscendC::TPipe* pipe, const SrcLoc& loc, Obj& obj) {
    obj.SimRegistered();
}
template <class Obj, class T>
inline void RegisterOne(AscendC::TPipe* pipe, const SrcLoc& loc, Obj& obj, T* tiling) {
    obj.SimRegistered();
    if (tiling != nullptr)
        obj.Init(tiling, pipe, loc);
}
template <class Obj>
inline void RegisterOne(AscendC::TPipe* pipe, const SrcLoc& loc, Obj& obj, std::nullptr_t) {
    obj.SimRegistered();
}

inline void RegisterEach(AscendC::TPipe*, const SrcLoc&) {}

template <class Obj, class... Rest>
inline void RegisterEach(AscendC::TPipe* pipe, const SrcLoc& loc, Obj& obj, Rest&&... rest);

template <class Obj, class Next, class... Rest>
inline void RegisterWithTiling(AscendC::TPipe* pipe, const SrcLoc& loc, Obj& obj, Next&& tiling,
                               Rest&&... rest) {
    RegisterOne(pipe, loc, obj, tiling);
    RegisterEach(pipe, loc, std::forward<Rest>(rest)...);
}

template <class... Rest>
constexpr bool kTilingNext = [] {
    if constexpr (sizeof...(Rest) == 0) {
        return false;
    } else {
        using Next = std::decay_t<std::tuple_element_t<0, std::tuple<Rest...>>>;
        return std::is_pointer_v<Next> || std::is_same_v<Next, std::nullptr_t>;
    }
}();

template <class Obj, class... Rest>
inline void RegisterEach(AscendC::TPipe* pipe, const SrcLoc& loc, Obj& obj, Rest&&... rest) {
    if constexpr (kTilingNext<Rest...>) {
        RegisterWithTiling(pipe, loc, obj, std::forward<Rest>(rest)...);
    } else {
        RegisterOne(pipe, loc, obj);
        RegisterEach(pipe, loc, std::forward<Rest>(rest)...);
    }
}

inline uint32_t CountObjects() {
    return 0;
}
template <class First, class... Rest>
inline uint32_t CountObjects(First&&, Rest&&... rest) {
    using F = std::decay_t<First>;
    return (std::is_pointer_v<F> || std::is_same_v<F, std::nullptr_t> ? 0u : 1u) +
           CountObjects(std::forward<Rest>(rest)...);
}

template <class... Args>
inline bool RegisterMatmuls(bool cubeOnly, AscendC::TPipe* pipe, GM_ADDR workspace, SrcLoc loc,
                            Args&&... args) {
    const char* call = "REGIST_MATMUL_OBJ";
    CoreState& c = Core();
    LaunchState& l = *c.launch;
    const uint32_t n = CountObjects(args...);
    if (c.matmul_objects + n > 4) {
        throw CheckError(Where(call, loc) + ": " + std::to_string(c.matmul_objects + n) +
                             " Matmul objects; the API supports at most 4 per kernel "
                             "(REGIST_MATMUL_OBJ.md), and the "
                             "library asserts \"cube objs count exceed 4\"",
                         RECSDK_SIM_TRAP);
    }
    if (l.aic_per_block == 0) {
        Fail(call, loc,
             std::string("the Matmul API runs on the Cube unit, but the kernel was launched as ") +
                 KernelTypeName(l.kernel_type) + " with no cube cores");
    }
    c.matmul_objects += n;
    c.matmul_cube_only = cubeOnly;
    const bool separated = l.aic_per_block > 0 && l.aiv_per_block > 0;
    if (separated && c.core_type == kAiv) {
        if (cubeOnly)
            return true;
        if (c.buffers > 0) {
            Fail(call, loc,
                 "REGIST_MATMUL_OBJ after TPipe::InitBuffer: in separated (AIC/AIV) mode it must "
                 "come "
                 "before InitBuffer (REGIST_MATMUL_OBJ.md)");
        }
        c.matmul_kfc = true;
    }
    RegisterEach(pipe, loc, std::forward<Args>(args)...);
    return separated && c.core_type == kAic && !cubeOnly;
}

}  // namespace recsdk::sim

#endif  // RECSDK_SIM_MATMUL_H
