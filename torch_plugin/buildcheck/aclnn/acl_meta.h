/*
 * BUILD-CHECK ONLY. A stand-in for CANN's aclnn/acl_meta.h, declaring the part of CANN's
 * documented aclnn meta API the adapter uses, so that the npu backend can be compiled and
 * linked against torch and torch_npu's headers on a host without the CANN toolkit (CI).
 * A real npu build takes CANN's own header from the toolkit: recsdk-build puts this directory
 * on the include path only for the build check, whose result is never an artifact.
 */
#ifndef FBGEMM_NPU_API_BUILDCHECK_ACL_META_H
#define FBGEMM_NPU_API_BUILDCHECK_ACL_META_H

#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t aclnnStatus;
typedef struct aclTensor aclTensor;
typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclIntArray aclIntArray;

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t* stride, int64_t offset, aclFormat format,
                           const int64_t* storageDims, uint64_t storageDimsNum, void* tensorData);
aclnnStatus aclDestroyTensor(const aclTensor* tensor);
aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size);
aclnnStatus aclDestroyIntArray(const aclIntArray* array);

#ifdef __cplusplus
}
#endif

#endif
