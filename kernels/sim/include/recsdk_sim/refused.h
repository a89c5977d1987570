// The refusal table: every basic-API entry point CANN declares for dav_c220 (the 910B) that the
// emulation does not provide. Each is declared here so that a kernel calling it stops at compile
// time with a message naming the API and why, instead of a silent approximation or a bare
// "not declared". tests/kernels/test_api_inventory.py parses CANN's interface headers and checks
// that every entry point is either emulated (declared elsewhere in kernels/sim/include) or listed
// here, and that each one listed here fails with its message.
//
// The refusal is a function template whose static_assert depends on its arguments: it fires only
// where a kernel calls the API. Explicit template arguments are accepted when they are all types
// (Name<float>(...)) or all values (Name<PIPE_V>(...)).
#ifndef RECSDK_SIM_REFUSED_H
#define RECSDK_SIM_REFUSED_H

#include "recsdk_sim/types.h"

#define RECSDK_SIM_REFUSED(NAME, WHY)                                          \
    template <typename... RecsdkT, typename... RecsdkA>                        \
    inline void NAME(RecsdkA&&...) {                                           \
        static_assert(::recsdk::sim::kRefused<RecsdkT..., RecsdkA...>,         \
                      "AscendC API " #NAME " is not emulated: " WHY);          \
    }                                                                          \
    template <auto RecsdkV0, auto... RecsdkV, typename... RecsdkA>             \
    inline void NAME(RecsdkA&&...) {                                           \
        static_assert(::recsdk::sim::kRefused<RecsdkA..., decltype(RecsdkV0)>, \
                      "AscendC API " #NAME " is not emulated: " WHY);          \
    }

// Families, with the reason shared by their members.
#define RECSDK_SIM_WHY_VEC "this vector instruction's semantics are not implemented (yet)"
#define RECSDK_SIM_WHY_NOT_A2 \
    "its page in docs/api lists Atlas A2 training/inference products as not supported"
#define RECSDK_SIM_WHY_NO_PAGE "no page in docs/api documents its semantics"
#define RECSDK_SIM_WHY_SORT "the region-proposal / sort layouts (Sort, MrgSort) are not emulated"
#define RECSDK_SIM_WHY_CUBE \
    "legacy or quantising Cube / Fixpipe control outside the LoadData/Mmad/Fixpipe subset"
#define RECSDK_SIM_WHY_SPR "a special-purpose or control register the emulation has no model of"
#define RECSDK_SIM_WHY_CACHE "cache and instruction-prefetch control has no effect to emulate"
#define RECSDK_SIM_WHY_SYNC "an inter-task or inter-block ordering primitive not modelled"

// The high-level (adv) API names CANN's kernel_operator.h declares (include/adv_api/kernel_api.h)
// that the emulation lacks. Their calls usually give explicit template arguments of mixed kinds
// (Sin<half, false>, AscendQuant<half, float, cfg>), so besides the two forms above the refusal
// takes a type then values, and two types then values.
#define RECSDK_SIM_REFUSED_ADV(NAME, WHY)                                             \
    RECSDK_SIM_REFUSED(NAME, WHY)                                                     \
    template <typename RecsdkT0, auto RecsdkV0, auto... RecsdkV, typename... RecsdkA> \
    inline void NAME(RecsdkA&&...) {                                                  \
        static_assert(::recsdk::sim::kRefused<RecsdkT0, RecsdkA...>,                  \
                      "AscendC API " #NAME " is not emulated: " WHY);                 \
    }                                                                                 \
    template <typename RecsdkT0, typename RecsdkT1, auto RecsdkV0, auto... RecsdkV,   \
              typename... RecsdkA>                                                    \
    inline void NAME(RecsdkA&&...) {                                                  \
        static_assert(::recsdk::sim::kRefused<RecsdkT0, RecsdkT1, RecsdkA...>,        \
                      "AscendC API " #NAME " is not emulated: " WHY);                 \
    }
#define RECSDK_SIM_WHY_MAXMIN_SPR                                                          \
    "the index its register holds after ReduceMax/ReduceMin is documented as inaccurate, " \
    "and after ReduceRepeat the index's meaning is not documented"
#define RECSDK_SIM_WHY_ADV "a high-level API (include/adv_api) the emulation does not implement"

#ifndef RECSDK_SIM_NO_REFUSALS
namespace AscendC {

// Vector compute (Memory vector API), refused per name.
RECSDK_SIM_REFUSED(AbsSub, RECSDK_SIM_WHY_NOT_A2)
RECSDK_SIM_REFUSED(AddDeqRelu,
                   "AddDeqRelu.md gives Relu(Cast((src0 + src1) * scale)) rounded once, but "
                   "dav_c220 builds it from an int32 add (overflow undocumented), int32 -> float, "
                   "three float multiplies and float -> half, which round differently")
RECSDK_SIM_REFUSED(Ands, "its page (Ands.md) lists Atlas A2/A3 as not supported")
RECSDK_SIM_REFUSED(DeInterleave, RECSDK_SIM_WHY_NOT_A2)
RECSDK_SIM_REFUSED(Divs, RECSDK_SIM_WHY_NOT_A2)
RECSDK_SIM_REFUSED(ExpSub, RECSDK_SIM_WHY_NOT_A2)
RECSDK_SIM_REFUSED(FusedAbsSub, RECSDK_SIM_WHY_NO_PAGE)
RECSDK_SIM_REFUSED(FusedExpSub, RECSDK_SIM_WHY_NO_PAGE)
RECSDK_SIM_REFUSED(FusedMulAddRelu, RECSDK_SIM_WHY_NO_PAGE)
RECSDK_SIM_REFUSED(FusedMulsCast, RECSDK_SIM_WHY_NO_PAGE)
RECSDK_SIM_REFUSED(GetReduceMaxMinCount, RECSDK_SIM_WHY_MAXMIN_SPR)
RECSDK_SIM_REFUSED(GetReduceRepeatMaxMinSpr, RECSDK_SIM_WHY_MAXMIN_SPR)
RECSDK_SIM_REFUSED(Interleave, RECSDK_SIM_WHY_NOT_A2)
RECSDK_SIM_REFUSED(Mull, RECSDK_SIM_WHY_NOT_A2)
RECSDK_SIM_REFUSED(MulsCast, RECSDK_SIM_WHY_NOT_A2)
RECSDK_SIM_REFUSED(Neg, RECSDK_SIM_WHY_NOT_A2)
RECSDK_SIM_REFUSED(Ors, "its page (Ors.md) lists Atlas A2/A3 as not supported")
RECSDK_SIM_REFUSED(Prelu, RECSDK_SIM_WHY_NOT_A2)
RECSDK_SIM_REFUSED(Scatter,
                   "its page (Scatter(ISASI).md) lists Atlas A2/A3 as not supported (dav_c220 "
                   "reports it unsupported)")
RECSDK_SIM_REFUSED(SetCastOverflowMode, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(Subs, RECSDK_SIM_WHY_NOT_A2)
RECSDK_SIM_REFUSED(Truncate, RECSDK_SIM_WHY_NOT_A2)
RECSDK_SIM_REFUSED(VectorPadding, RECSDK_SIM_WHY_NOT_A2)

// Sorting and region proposals.
RECSDK_SIM_REFUSED(Concat, RECSDK_SIM_WHY_SORT)
RECSDK_SIM_REFUSED(Extract, RECSDK_SIM_WHY_SORT)
RECSDK_SIM_REFUSED(GetMrgSortResult, RECSDK_SIM_WHY_SORT)
RECSDK_SIM_REFUSED(GetSortLen, RECSDK_SIM_WHY_SORT)
RECSDK_SIM_REFUSED(GetSortOffset, RECSDK_SIM_WHY_SORT)
RECSDK_SIM_REFUSED(MrgSort, RECSDK_SIM_WHY_SORT)
RECSDK_SIM_REFUSED(MrgSort4, RECSDK_SIM_WHY_SORT)
RECSDK_SIM_REFUSED(ProposalConcat, RECSDK_SIM_WHY_SORT)
RECSDK_SIM_REFUSED(ProposalExtract, RECSDK_SIM_WHY_SORT)
RECSDK_SIM_REFUSED(RpSort16, RECSDK_SIM_WHY_SORT)
RECSDK_SIM_REFUSED(Sort, RECSDK_SIM_WHY_SORT)
RECSDK_SIM_REFUSED(Sort32, RECSDK_SIM_WHY_SORT)

// Cube beyond LoadData 2D / Mmad / Fixpipe L0C->GM (recsdk_sim/cube_basic.h).
RECSDK_SIM_REFUSED(BroadCastVecToMM, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(Conv2D, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(CreateCubeResGroup, "cube resource groups (core_mng/roc) are not emulated")
RECSDK_SIM_REFUSED(Gemm, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(GetConv2dTiling, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(GetGemmTiling, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(InitConstValue, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(LoadDataUnzip, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(LoadDataWithSparse, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(LoadDataWithStride, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(LoadImageToLocal, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(LoadUnzipIndex, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(MmadMx, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(MmadWithSparse, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetFixPipeAddr, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetFixPipeClipRelu, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetFixPipeConfig, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetFixpipeNz2ndFlag, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetFixpipePreQuantFlag, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetHF32Mode, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetHF32TransMode, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetLoadDataBoundary, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetLoadDataPaddingValue, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetLoadDataRepeat, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetLoadDataRepeatWithStride, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetMMColumnMajor, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetMMLayoutTransform, RECSDK_SIM_WHY_CUBE)
RECSDK_SIM_REFUSED(SetMMRowMajor, RECSDK_SIM_WHY_CUBE)

// Data movement beyond DataCopy / DataCopyPad.
RECSDK_SIM_REFUSED(NdDmaDci, "the ND-DMA cache invalidation has nothing to emulate on the host")
RECSDK_SIM_REFUSED(ResetLoopModePara, "the DMA loop mode (SetLoopModePara) is not emulated")
RECSDK_SIM_REFUSED(SetLoopModePara, "the DMA loop mode is not emulated")

// Scalar, atomics on GM, registers, caches, profiling, inter-task ordering.
RECSDK_SIM_REFUSED(Async, RECSDK_SIM_WHY_SYNC)
RECSDK_SIM_REFUSED(AtomicAdd, "scalar atomics on global memory are not emulated")
RECSDK_SIM_REFUSED(AtomicCas, "scalar atomics on global memory are not emulated")
RECSDK_SIM_REFUSED(AtomicExch, "scalar atomics on global memory are not emulated")
RECSDK_SIM_REFUSED(AtomicMax, "scalar atomics on global memory are not emulated")
RECSDK_SIM_REFUSED(AtomicMin, "scalar atomics on global memory are not emulated")
RECSDK_SIM_REFUSED(CheckLocalMemoryIA, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(ClearSpr, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(CountBitsCntSameAsSignBit, "the scalar bit instructions are not emulated")
RECSDK_SIM_REFUSED(CountLeadingZero, "the scalar bit instructions are not emulated")
RECSDK_SIM_REFUSED(DataCachePreload, RECSDK_SIM_WHY_CACHE)
RECSDK_SIM_REFUSED(DataSyncBarrier, RECSDK_SIM_WHY_SYNC)
RECSDK_SIM_REFUSED(DumpAccChkPoint, "accuracy checkpoints need the toolkit's dump tooling")
RECSDK_SIM_REFUSED(GetArchVersion, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(GetBitCount, "the scalar bit instructions are not emulated")
RECSDK_SIM_REFUSED(GetCtrlSpr, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(GetICachePreloadStatus, RECSDK_SIM_WHY_CACHE)
RECSDK_SIM_REFUSED(GetProgramCounter, "there is no device program counter on the host")
RECSDK_SIM_REFUSED(GetRuntimeUBSize, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(GetSFFValue, "the scalar bit instructions are not emulated")
RECSDK_SIM_REFUSED(GetSaturationFlag, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(GetSaturationStrategy, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(GetSpr, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(GetSsbufBaseAddr, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(GetStoreAtomicConfig, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(GetSystemCycle, "device cycle counts do not exist on the host")
RECSDK_SIM_REFUSED(GetUBSizeInBytes, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(GetUintDivMagicAndShift, "the scalar bit instructions are not emulated")
RECSDK_SIM_REFUSED(GetVecLen, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(HSetFlag, RECSDK_SIM_WHY_SYNC)
RECSDK_SIM_REFUSED(HWaitFlag, RECSDK_SIM_WHY_SYNC)
RECSDK_SIM_REFUSED(IBSet, RECSDK_SIM_WHY_SYNC)
RECSDK_SIM_REFUSED(IBWait, RECSDK_SIM_WHY_SYNC)
RECSDK_SIM_REFUSED(ICachePreLoad, RECSDK_SIM_WHY_CACHE)
RECSDK_SIM_REFUSED(InitDetermineComputeWorkspace, RECSDK_SIM_WHY_SYNC)
RECSDK_SIM_REFUSED(MetricsProfStart, "profiling markers need the toolkit's profiler")
RECSDK_SIM_REFUSED(MetricsProfStop, "profiling markers need the toolkit's profiler")
RECSDK_SIM_REFUSED(Nop, "pipeline no-ops have no host meaning")
RECSDK_SIM_REFUSED(NotifyEvent, RECSDK_SIM_WHY_SYNC)
RECSDK_SIM_REFUSED(NotifyNextBlock, RECSDK_SIM_WHY_SYNC)
RECSDK_SIM_REFUSED(PrintTimeStamp, "device time stamps do not exist on the host")
RECSDK_SIM_REFUSED(ReadGmByPassDCache, RECSDK_SIM_WHY_CACHE)
RECSDK_SIM_REFUSED(ResetCtrlSpr, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(ScalarCast, "the scalar conversion instructions are not emulated")
RECSDK_SIM_REFUSED(ScalarCountLeadingZero, "the scalar bit instructions are not emulated")
RECSDK_SIM_REFUSED(ScalarGetCountOfValue, "the scalar bit instructions are not emulated")
RECSDK_SIM_REFUSED(ScalarGetSFFValue, "the scalar bit instructions are not emulated")
RECSDK_SIM_REFUSED(SetAtomicType, "atomic types other than SetAtomicAdd<T>'s are not modelled")
RECSDK_SIM_REFUSED(SetCtrlSpr, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(SetNextTaskStart, RECSDK_SIM_WHY_SYNC)
RECSDK_SIM_REFUSED(SetSaturationFlag, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(SetSaturationStrategy, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(SetStoreAtomicConfig, RECSDK_SIM_WHY_SPR)
RECSDK_SIM_REFUSED(WaitEvent, RECSDK_SIM_WHY_SYNC)
RECSDK_SIM_REFUSED(WaitPreBlock, RECSDK_SIM_WHY_SYNC)
RECSDK_SIM_REFUSED(WaitPreTaskEnd, RECSDK_SIM_WHY_SYNC)
RECSDK_SIM_REFUSED(WriteGmByPassDCache, RECSDK_SIM_WHY_CACHE)

// High-level API (tests/kernels/test_api_inventory.py inventories it per family).
RECSDK_SIM_REFUSED_ADV(Acos, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Acosh, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(AdjustSoftMaxRes, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(AntiQuantize, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Arange, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(AscendAntiQuant, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(AscendDequant, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(AscendQuant, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Asin, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Asinh, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Atan, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Atanh, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(BatchNorm, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(BitwiseAnd, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(BitwiseNot, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(BitwiseOr, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(BitwiseXor, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Broadcast, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Ceil, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Clamp, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(ClampMax, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(ClampMin, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Cos, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Cosh, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(CumSum, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(DeepNorm, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Dequantize, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Digamma, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(DropOut, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Erf, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Erfc, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(FasterGelu, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(FasterGeluV2, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Floor, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Fma, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Fmod, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Frac, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(GeGLU, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Gelu, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(GetBroadcastTilingInfo, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(GroupNorm, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Hypot, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(IsFinite, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(IsInf, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(IsNan, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(LayerNorm, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(LayerNormGrad, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(LayerNormGradBeta, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Lgamma, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Log, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Log10, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Log2, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(LogSoftMax, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(LogicalAnd, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(LogicalAnds, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(LogicalNot, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(LogicalOr, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(LogicalOrs, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(LogicalXor, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Mean, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Normalize, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Pad, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(PhiloxRandom, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Power, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Quantize, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(ReGlu, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(ReduceAll, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(ReduceAny, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(ReduceMean, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(ReduceProd, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(ReduceXorSum, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Rint, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(RmsNorm, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Round, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Sigmoid, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Sign, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(SimpleSoftMax, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Sin, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(SinCos, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Sinh, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(SoftMax, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(SoftMaxFlashV2TilingFunc, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(SoftmaxFlashV2, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(SoftmaxFlashV3, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(SoftmaxGrad, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(SoftmaxGradFront, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Sum, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(SwiGLU, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Swish, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Tan, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Tanh, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(TopK, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(TransData, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Trunc, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(UnPad, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(WelfordFinalize, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(WelfordUpdate, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Where, RECSDK_SIM_WHY_ADV)
RECSDK_SIM_REFUSED_ADV(Xor, RECSDK_SIM_WHY_ADV)

}  // namespace AscendC

// CANN declares these in the global namespace.
RECSDK_SIM_REFUSED(SetSysWorkSpacePtr, "the launcher sets the system workspace")

#endif  // RECSDK_SIM_NO_REFUSALS

#endif  // RECSDK_SIM_REFUSED_H
