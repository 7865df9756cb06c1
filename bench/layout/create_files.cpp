// Layout benchmark (issue 16): N ranks' trace files created the way the shim creates them
// (rdzv_trace_create: O_EXCL, fallocate, mmap; then the header published), 8 ranks per host,
// by P processes at once: all in one flat directory, or one directory per host
// (RDZVSCOPE_DIR=BASE/%h). Prints the wall time of each layout.
//   create_files DIR N [P]
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <rdzvscope/recorder_core.h>

namespace {

constexpr int kRanksPerHost = 8;
constexpr rdzv_u64 kFileBytes = 64 << 10;  // small files: the benchmark is about directories

// Worker w of p creates the files of ranks w, w+p, w+2p...: every host's ranks are created by
// several processes at once, as a node's ranks start together.
int create_share(const std::string& base, bool per_host, int n, int w, int p) {
  for (int rank = w; rank < n; rank += p) {
    const std::string host = "node" + std::to_string(rank / kRanksPerHost);
    const std::string dir = per_host ? base + "/" + host : base;
    if (rdzv_trace_dir_ensure(dir.c_str(), 0) != 0) return 1;
    rdzv_file_header facts{};
    rdzv_process_fill(&facts, 0);  // real clocks: the files can be analyzed afterwards
    facts.pid = 100000 + rank;
    rdzv_copy_cut(facts.host, sizeof facts.host, host.c_str());
    rdzv_trace_request req{dir.c_str(), host.c_str(), facts.pid, kFileBytes, 0, 0};
    rdzv_trace t{};
    char path[4096];
    if (rdzv_trace_create(&req, &facts, &t, path, sizeof path, nullptr) != 0) return 1;
    rdzv_trace_publish(&t);
    rdzv_trace_close(&t);
  }
  return 0;
}

double run_layout(const std::string& base, bool per_host, int n, int p) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int w = 0; w < p; ++w)
    if (fork() == 0) _exit(create_share(base, per_host, n, w, p));
  int failed = 0;
  for (int w = 0; w < p; ++w) {
    int status = 0;
    wait(&status);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  if (failed) std::fprintf(stderr, "create_files: %d worker(s) failed\n", failed);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: create_files DIR N [PROCESSES]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int n = std::atoi(argv[2]);
  const int p = argc > 3 ? std::atoi(argv[3]) : 16;
  if (n <= 0 || p <= 0 || rdzv_trace_dir_ensure(dir.c_str(), 0) != 0) {
    std::fprintf(stderr, "create_files: bad arguments or unusable %s\n", dir.c_str());
    return 2;
  }
  const double flat = run_layout(dir + "/flat", false, n, p);
  const double per_host = run_layout(dir + "/per-host", true, n, p);
  std::printf("create %d trace files (%d per host, %d processes at once): flat %.2f s (%.0f files/s), "
              "per host %.2f s (%.0f files/s)\n",
              n, kRanksPerHost, p, flat, n / flat, per_host, n / per_host);
  return 0;
}
