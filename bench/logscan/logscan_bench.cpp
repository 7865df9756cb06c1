// logscan_bench FILE: runs scan_log once over FILE and prints one line:
//   "logscan FILE bytes=N lines=N matched=N seconds=S MBps=X"
// (MB = 10^6 bytes). compare.py reads MBps.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "logs/log_scan.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: logscan_bench FILE\n");
    return 2;
  }
  const rdzv::logs::ScanOptions opt;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = rdzv::logs::scan_log(argv[1], -1, opt);
  const auto t1 = std::chrono::steady_clock::now();
  if (!r) {
    std::fprintf(stderr, "logscan_bench: %s\n", r.error().message.c_str());
    return 2;
  }
  const double s = std::chrono::duration<double>(t1 - t0).count();
  std::printf("logscan %s bytes=%llu lines=%llu matched=%llu seconds=%.4f MBps=%.1f version=%s\n",
              argv[1], static_cast<unsigned long long>(r->bytes),
              static_cast<unsigned long long>(r->lines), static_cast<unsigned long long>(r->matched), s,
              s > 0 ? static_cast<double>(r->bytes) / 1e6 / s : 0.0,
              r->torch_version.empty() ? "-" : r->torch_version.c_str());
  return 0;
}
