// Issue 29: stragglers from logs alone where no rank's line says it timed out waiting for another
// (rules/rule_straggler_unarrived.cpp), and the NCCL watchdog's timeout known by its backtrace.
// The lines are those of the corpus' logs (tests/corpus) and their variants.
#include <catch2/catch.hpp>

#include <algorithm>

#include "job_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

namespace {

bool has_alternative(const Diagnosis& d, FailureClass cls) {
  return std::any_of(d.alternatives.begin(), d.alternatives.end(), [&](const Alternative& a) { return a.cls == cls; });
}

// Lightning's DDP on 1.x, nanodet#415: rank 1 announced init_process_group and waited out its
// connect timeout on the loopback store.
const char* kAnnounced1of2 = "initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2";
const char* kLoopbackTimeout =
    "[E socket.cpp:793] [c10d] The client socket has timed out after 1800s while trying to connect to (127.0.0.1, "
    "43771).";
const char* kLoopbackTimeoutRaised =
    "TimeoutError: The client socket has timed out after 1800s while trying to connect to (127.0.0.1, 43771)";

// The C++ backtrace of an exception made in WorkNCCL::checkTimeout, at frame `n`.
std::string check_timeout_frame(int n) {
  return "frame #" + std::to_string(n) +
         ": c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, "
         "1000l> > >) + 0x1d2 (0x1554e9e0f8f2 in libtorch_cuda.so)";
}

// Lightning's announcement of each of `ranks` entering init_process_group in a world of `world`.
void announce(Job& job, std::initializer_list<int> ranks, int world,
              const std::string& words = "initializing ddp") {
  for (int r : ranks)
    job.log_line(words + ": GLOBAL_RANK: " + std::to_string(r) + ", MEMBER: " + std::to_string(r + 1) + "/" +
                 std::to_string(world));
}

}  // namespace

TEST_CASE("logs: a client that waited out its connect timeout on a loopback store: rank 0, its host, was late") {
  SECTION("Lightning's rank 1 of 2: straggler_timeout, rank 0, low, store_not_ready the runner-up") {
    Job job;
    job.log_line(kAnnounced1of2);
    job.log_line(kLoopbackTimeout);
    job.log_line(kLoopbackTimeoutRaised);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
    CHECK(d.verdict.confidence == "low");
    CHECK(d.verdict.initiating_rank == 0);
    CHECK(d.verdict.summary.find("127.0.0.1:43771") != std::string::npos);
    CHECK(d.verdict.summary.find("timed out after 1800.00 s connecting to the store") != std::string::npos);
    CHECK(d.verdict.summary.find("rank(s) 1 announced entering init_process_group") != std::string::npos);
    CHECK(has_alternative(d, FailureClass::StoreNotReady));
    CHECK(has_alternative(d, FailureClass::ConnectTimeout));
  }
  SECTION("the bare line, 2.x's millisecond form and localhost: the same") {
    for (const char* line :
         {"TimeoutError: The client socket has timed out after 1800s while trying to connect to (127.0.0.1, 43971)",
          "[E1201 10:37:40.865341725 socket.cpp:1028] [c10d] The client socket has timed out after 4000ms while trying "
          "to connect to (localhost, 35711).",
          "torch.distributed.DistNetworkError: The client socket has timed out after 60000ms while trying to connect "
          "to (::1, 29500)."}) {
      Job job;
      job.log_line(line);
      Diagnosis d = job.diagnose_it();
      CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
      CHECK(d.verdict.initiating_rank == 0);
      CHECK(d.verdict.summary.find("a client (the logs do not say which rank)") != std::string::npos);
    }
  }
  SECTION("not to a store on another host: the path may drop SYNs, store_not_ready as before") {
    Job job;
    job.log_line("TimeoutError: The client socket has timed out after 1800s while trying to connect to (10.0.0.5, "
                 "29500)");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::StoreNotReady);
  }
  SECTION("not when one of the timeouts is to another host") {
    Job job;
    job.log_line(kLoopbackTimeout, 1, "rank1.log");
    job.log_line("TimeoutError: The client socket has timed out after 1800s while trying to connect to (node0, 29500)",
                 2, "rank2.log");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::StoreNotReady);
  }
  SECTION("not when a SYN went unanswered (a firewall on the loopback): connect_timeout") {
    Job job;
    job.log_line("[W1201 10:37:39.916166207 socket.cpp:938] [c10d] The server socket on [::1]:35711 has timed out, "
                 "will retry.");
    job.log_line("[E1201 10:37:40.865341725 socket.cpp:1028] [c10d] The client socket has timed out after 4000ms while "
                 "trying to connect to (127.0.0.1, 35711).");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::ConnectTimeout);
  }
  SECTION("not a torchrun agent's connect (its frames): the rendezvous endpoint's host, store_not_ready") {
    Job job;
    job.log_line("[E1202 07:44:29.828078162 socket.cpp:1028] [c10d] The client socket has timed out after 3000ms while "
                 "trying to connect to (127.0.0.1, 51423).");
    job.log_line("  File \"/work/main/.venv/torch-2.13.0/bin/torchrun\", line 8, in <module>");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::StoreNotReady);
  }
  SECTION("not when rank 0 announced entering init_process_group: it was not busy before it") {
    Job job;
    job.log_line("initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2");
    job.log_line(kAnnounced1of2);
    job.log_line(kLoopbackTimeout);
    CHECK(job.diagnose_it().verdict.cls == FailureClass::StoreNotReady);
  }
  SECTION("not when the logs show rank 0's death: a dead rank is dead, not late (rank_died)") {
    Job job;
    job.log_line(kLoopbackTimeoutRaised, 1, "rank1.log");
    job.log_line("torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGKILL");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::RankDied);
  }
  SECTION("a rank 0 that a file name gives the line is no client of its own store: not named as one") {
    Job job;
    job.log_line(kLoopbackTimeoutRaised, 0, "rank0.log");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
    CHECK(d.verdict.summary.find("a client (the logs do not say which rank)") != std::string::npos);
  }
}

TEST_CASE("logs: ranks that never announced init_process_group (Lightning) are the ones the others wait for") {
  SECTION("sbatch without srun: ranks 0-3 of 8 announced, no error, no registration") {
    Job job;
    job.log_line("GPU available: True, used: True");
    announce(job, {1, 2, 0, 3}, 8);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
    CHECK(d.verdict.confidence == "low");
    CHECK_FALSE(d.verdict.initiating_rank);
    CHECK(d.verdict.summary.find("rank(s) 0-3 of 8") != std::string::npos);
    CHECK(d.verdict.summary.find("wait there for rank(s) 4-7") != std::string::npos);
  }
  SECTION("one rank missing is named") {
    Job job;
    announce(job, {0, 1, 3}, 4, "Initializing distributed");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
    CHECK(d.verdict.initiating_rank == 2);
  }
  SECTION("not when every rank announced it") {
    Job job;
    announce(job, {0, 1}, 2);
    CHECK(job.diagnose_it().verdict.cls == FailureClass::Unknown);
  }
  SECTION("not when rank 0 says init_process_group returned") {
    Job job;
    announce(job, {0}, 8);
    job.log_line("All distributed processes registered. Starting with 8 processes");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::StragglerTimeout);
  }
  SECTION("not when a rank was announced twice: two processes took the same rank, none is late") {
    Job job;
    announce(job, {1, 1, 2, 2, 3, 3, 0, 0}, 8);
    CHECK(job.diagnose_it().verdict.cls != FailureClass::StragglerTimeout);  // config_mismatch (test_log_rules)
  }
  SECTION("not beside an error: it says more than a silence") {
    Job job;
    announce(job, {0}, 8);
    job.log_line("Traceback (most recent call last):");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::Unknown);
  }
}

TEST_CASE("logs: the NCCL watchdog's timeout known by its exception's backtrace alone") {
  SECTION("frame #1 is WorkNCCL::checkTimeout: a rank waited in a collective past its timeout") {
    Job job;
    job.log_line("frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x1554e8b12f86 in libc10.so)");
    job.log_line(check_timeout_frame(1));
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
    CHECK(d.verdict.confidence == "low");
    CHECK(d.verdict.summary.find("timed out in a collective after the rendezvous") != std::string::npos);
  }
  SECTION("not checkTimeout deeper in a stack: no exception was made there") {
    Job job;
    job.log_line(check_timeout_frame(3));
    CHECK(job.diagnose_it().verdict.cls != FailureClass::StragglerTimeout);
  }
}

TEST_CASE("logs: tracebacks out of main_process_first's entry are replicas that waited for the main process") {
  const char* with_line = "    with training_args.main_process_first(desc=\"dataset map tokenization\"):";
  const char* enter = "  File \"/usr/lib/python3.8/contextlib.py\", line 113, in __enter__";
  SECTION("transformers#17106: interleaved tracebacks of the replicas, the excerpt ends before the error") {
    Job job;
    for (int i = 0; i < 3; ++i) job.log_line(with_line).log_line(enter);
    job.log_line(with_line);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
    CHECK(d.verdict.confidence == "low");
    CHECK(d.verdict.initiating_rank == 0);
    CHECK(d.verdict.summary.find("3 traceback(s) come out of the entry of main_process_first") != std::string::npos);
    CHECK(has_alternative(d, FailureClass::RankDied));
  }
  SECTION("not the block's exit: the main process's own barrier after the block") {
    Job job;
    job.log_line(with_line);
    job.log_line("  File \"/usr/lib/python3.8/contextlib.py\", line 120, in __exit__");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::StragglerTimeout);
  }
  SECTION("not another context manager's entry") {
    Job job;
    job.log_line("    with torch.autocast(device_type=\"cuda\"):");
    job.log_line(enter);
    CHECK(job.diagnose_it().verdict.cls != FailureClass::StragglerTimeout);
  }
}

TEST_CASE("logs: a loopback connect timeout that 2.x retried, and nothing after: no late store host") {
  // e2e store_late on 2.13 by hand: rank 0 later than the clients' timeout, their first try
  // times out and is retried, the retry connects and the job succeeds.
  Job job;
  job.log_line("[E1201 10:37:29.828158829 socket.cpp:1028] [c10d] The client socket has timed out after 3000ms while "
               "trying to connect to (127.0.0.1, 57291).",
               1, "rank1.log");
  job.log_line("[W1201 10:37:29.828524691 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host "
               "127.0.0.1:57291 - retrying (try=0, timeout=3000ms, delay=1397ms): The client socket has timed out after "
               "3000ms while trying to connect to (127.0.0.1, 57291).",
               1, "rank1.log");
  CHECK(job.diagnose_it().verdict.cls != FailureClass::StragglerTimeout);
}
