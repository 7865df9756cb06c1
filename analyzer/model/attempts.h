// torchrun --max-restarts: every attempt's workers in one trace directory. The diagnosis is the
// last attempt's; when that one succeeded, the attempt before it, which failed (else torchrun
// would not have restarted), is diagnosed on its own so that the verdict can name what cost
// the restart without calling the job failed.
#pragma once

#include "process_model.h"

namespace rdzvscope {

// The traces as attempt `attempt` (TORCHELASTIC_RESTART_COUNT, from 0) saw them: its workers
// are the ones diagnosed, the later attempts' workers are left out, agents and the earlier
// attempts' workers are kept as they are.
TraceInputs attempt_view(const TraceInputs& in, int attempt);

}  // namespace rdzvscope
