// Issue 29: lines that say a job got past its rendezvous and went on (training steps, epochs and
// losses, test results, a finished run, a collective that completed). No c10d message: the
// reader does not search the whole log for them (they are most of a training log's lines), only
// the stretch after a rendezvous line of a process up to that process's next such line
// (log_scan.cpp), which is all that "did the job go on after this?" needs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rdzv::logs {

struct ProgressLine {
  std::string file;
  std::uint64_t line = 0;  // 1-based
  int rank = -1;           // its prefix's rank, else the file's; -1 when neither gives one
  std::string text;        // cut to 200 bytes
};

// A line that only a process past its rendezvous prints: a training counter with its number
// ("epoch 3", "Running epoch: 2", "iteration 10/1000", "loss=2.31"), a test result ("5 passed",
// "PASSED", unittest's "... ok"), the end of a run ("Training completed", "finished training"),
// or a collective that completed ("all_reduce ok", "barrier done"). Loading, downloading and
// setting-up lines, which come before init_process_group, are none of these.
bool says_job_progressed(std::string_view line);

}  // namespace rdzv::logs

namespace rdzv::logs::detail {
class Prefilter;
// The anchors of says_job_progressed: every line it accepts holds one (each >= 4 bytes).
const Prefilter& progress_prefilter();
}  // namespace rdzv::logs::detail
