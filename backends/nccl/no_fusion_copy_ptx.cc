// kFusionCopyPtx of a build without nvcc: no kernel, so the fusion copies
// are one cuMemcpyDtoDAsync each (fusion_copy.h).
#include "backends/nccl/fusion_copy.h"

namespace trainrun::detail {

extern const char kFusionCopyPtx[] = "";

}  // namespace trainrun::detail
