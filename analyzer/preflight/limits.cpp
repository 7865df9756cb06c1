#include "preflight/limits.h"

#include <sys/resource.h>

#include <climits>
#include <fstream>

#include <fmt/format.h>

namespace rdzvscope::preflight {

std::optional<unsigned long> read_somaxconn() {
  std::ifstream f("/proc/sys/net/core/somaxconn");
  unsigned long v = 0;
  if (f >> v) return v;
  return std::nullopt;
}

FileLimit read_nofile() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return FileLimit{};
  auto value = [](rlim_t v) {
    return v == RLIM_INFINITY ? ULONG_MAX : static_cast<unsigned long>(v);
  };
  return FileLimit{value(r.rlim_cur), value(r.rlim_max)};
}

Check somaxconn_check(unsigned long somaxconn, unsigned long ranks) {
  const nlohmann::json data = {{"somaxconn", somaxconn}, {"ranks", ranks}};
  if (ranks <= somaxconn) {
    return ok_check("somaxconn",
                    fmt::format("net.core.somaxconn {} >= {} rank(s) connecting at once", somaxconn,
                                ranks),
                    data);
  }
  // A warning, not a failure: the kernel retransmits, so the ranks still get in, late; at
  // scale and with a short timeout that lateness is the failure.
  return warn_check(
      "somaxconn",
      fmt::format(
          "net.core.somaxconn {} < {} rank(s) connecting at once: the store's listen backlog is "
          "capped at "
          "{}, the other {} connection(s) wait for SYN retransmissions (1 s, 3 s, 7 s, ...)",
          somaxconn, ranks, somaxconn, ranks - somaxconn),
      fmt::format("sysctl -w net.core.somaxconn={} on this node (in the job's network namespace or "
                  "container)",
                  ranks < 4096 ? 4096 : ranks),
      data);
}

Check nofile_check(const FileLimit& limit, unsigned long ranks) {
  const unsigned long need = ranks + kBaseDescriptors;          // 2.x: one descriptor per client
  const unsigned long need_113 = 2 * ranks + kBaseDescriptors;  // 1.13: two per client
  const std::string hard = limit.hard == ULONG_MAX ? "unlimited" : std::to_string(limit.hard);
  const nlohmann::json data = {{"soft", limit.soft},
                               {"hard", limit.hard},
                               {"ranks", ranks},
                               {"needed", need},
                               {"needed_torch_1_13", need_113}};
  const std::string
      raise = limit.hard >= need_113
                  ? fmt::format(
                        "ulimit -n {} in the job script before the launcher (the hard limit {} "
                        "allows it)",
                        need_113, hard)
                  : fmt::format(
                        "raise the hard limit (limits.conf, systemd LimitNOFILE, the container "
                        "runtime) to at least {}, then ulimit -n {}",
                        need_113, need_113);
  if (limit.soft < need) {
    return fail_check(
        "nofile",
        fmt::format(
            "open-file limit {} (hard {}) < {} descriptors the store needs for {} rank(s): its "
            "accept() fails with EMFILE and those ranks time out",
            limit.soft, hard, need, ranks),
        raise, data);
  }
  if (limit.soft < need_113) {
    return warn_check(
        "nofile",
        fmt::format(
            "open-file limit {} (hard {}) is enough for {} rank(s) on PyTorch 2.x, not on 1.13 "
            "(two connections per rank: {} needed)",
            limit.soft, hard, ranks, need_113),
        raise, data);
  }
  return ok_check("nofile",
                  fmt::format("open-file limit {} (hard {}) >= {} descriptors for {} rank(s)",
                              limit.soft, hard, need_113, ranks),
                  data);
}

}  // namespace rdzvscope::preflight
