// What the kernel said about the processes it killed for memory. A process killed with SIGKILL
// leaves no record of its own, and its parent's reap says only "SIGKILL"; the kernel's log says
// whether its OOM killer chose it ("Out of memory: Killed process 5436 (python3) ..." or, for a
// memory cgroup at its limit, "Memory cgroup out of memory: Killed process ..."; before it, an
// "oom-kill:constraint=...,oom_memcg=...,task=...,pid=..." line names the cgroup).
//
// The kernel's ring buffer (/dev/kmsg) is of this boot of this machine only, and its times are
// seconds since boot: it can speak of a traced process only when the analysis runs on the node
// that ran it, before a reboot (`rdzvscope run --verdict`, `analyze` in a job's epilog). The
// traces' origin (boot id, PID namespace, start in clock ticks) says which processes those are.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rdzvscope {

struct OomKill {
  std::int32_t pid = 0;        // in the kernel's initial PID namespace
  std::string comm;            // the task name, at most 15 characters
  std::int64_t boot_ns = 0;    // when, in nanoseconds since boot (the record's timestamp)
  bool memcg = false;          // a memory cgroup at its limit, not the whole machine
  std::string cgroup;          // the cgroup whose limit was hit, when the log named it
};

struct KernelLog {
  std::array<std::uint8_t, 16> boot_id{};  // of the boot the records are of; zero: none read
  std::vector<OomKill> kills;
  bool read() const;
};

// The OOM kills in /dev/kmsg's records ("PRI,SEQ,USEC,FLAGS;MESSAGE", one a line), in order.
std::vector<OomKill> oom_kills_in_kmsg(std::string_view records);

// This boot's id and the OOM kills in the kernel's ring buffer. Empty (not read()) when
// /dev/kmsg cannot be read (no privilege: kernel.dmesg_restrict, a container): the verdicts
// then say SIGKILL without naming who sent it, as they would without this.
KernelLog read_kernel_log();

// The boot id of the machine this runs on (/proc/sys/kernel/random/boot_id); zero when unread.
std::array<std::uint8_t, 16> this_boot_id();

}  // namespace rdzvscope
