#include "kernel_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <map>
#include <optional>

#include <rdzvscope/recorder_core.h>

namespace rdzvscope {

namespace {

// The value of "key=" in an oom-kill line ("...,task=python3,pid=5436,uid=0"), up to the comma.
std::string_view field(std::string_view line, std::string_view key) {
  const auto at = line.find(key);
  if (at == std::string_view::npos) return {};
  const auto from = at + key.size();
  return line.substr(from, line.find(',', from) - from);
}

std::optional<std::int64_t> number(std::string_view s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return v;
}

// "Memory cgroup out of memory: Killed process 5436 (python3) total-vm:..." (and "Out of
// memory: Killed process ..." when the whole machine ran out): the kill itself.
std::optional<OomKill> killed_process(std::string_view msg) {
  constexpr std::string_view kKilled = "Killed process ";
  const auto at = msg.find(kKilled);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view why = msg.substr(0, at);
  if (why.find("out of memory") == std::string_view::npos && why.find("Out of memory") == std::string_view::npos)
    return std::nullopt;
  std::string_view rest = msg.substr(at + kKilled.size());
  const auto space = rest.find(' ');
  const auto pid = number(rest.substr(0, space));
  if (!pid) return std::nullopt;
  OomKill k;
  k.pid = static_cast<std::int32_t>(*pid);
  if (space != std::string_view::npos && rest.substr(space + 1).starts_with("(")) {
    rest = rest.substr(space + 2);
    k.comm = std::string(rest.substr(0, rest.find(')')));
  }
  k.memcg = why.find("Memory cgroup") != std::string_view::npos;
  return k;
}

}  // namespace

bool KernelLog::read() const {
  return std::any_of(boot_id.begin(), boot_id.end(), [](std::uint8_t b) { return b != 0; });
}

std::vector<OomKill> oom_kills_in_kmsg(std::string_view records) {
  std::vector<OomKill> out;
  std::map<std::int32_t, std::string> cgroup_of;  // from the oom-kill line before each kill
  while (!records.empty()) {
    const auto eol = records.find('\n');
    const std::string_view rec = records.substr(0, eol);
    records = eol == std::string_view::npos ? std::string_view{} : records.substr(eol + 1);
    // "PRI,SEQ,USEC,FLAGS;MESSAGE": the third field is the time in microseconds since boot.
    const auto semi = rec.find(';');
    if (semi == std::string_view::npos) continue;
    const std::string_view prefix = rec.substr(0, semi), msg = rec.substr(semi + 1);
    const auto c1 = prefix.find(','), c2 = prefix.find(',', c1 + 1), c3 = prefix.find(',', c2 + 1);
    if (c1 == std::string_view::npos || c2 == std::string_view::npos) continue;
    const auto usec = number(prefix.substr(c2 + 1, c3 - c2 - 1));
    if (!usec) continue;
    if (msg.starts_with("oom-kill:")) {
      if (const auto pid = number(field(msg, ",pid=")))
        cgroup_of[static_cast<std::int32_t>(*pid)] = std::string(field(msg, "oom_memcg="));
      continue;
    }
    auto k = killed_process(msg);
    if (!k) continue;
    k->boot_ns = *usec * 1000;
    if (auto c = cgroup_of.find(k->pid); c != cgroup_of.end()) k->cgroup = c->second;
    out.push_back(std::move(*k));
  }
  return out;
}

std::array<std::uint8_t, 16> this_boot_id() {
  char id[64];
  std::array<std::uint8_t, 16> boot{};
  if (rdzv_read_file("/proc/sys/kernel/random/boot_id", id, sizeof id) <= 0 || !rdzv_parse_boot_id(id, boot.data()))
    return {};
  return boot;
}

KernelLog read_kernel_log() {
  KernelLog log;
  const auto boot = this_boot_id();
  if (std::all_of(boot.begin(), boot.end(), [](std::uint8_t b) { return b == 0; })) return log;
  // Each read() of /dev/kmsg returns one record; EAGAIN once none is left (O_NONBLOCK), EPIPE
  // when the record to be read was overwritten meanwhile (the next read goes on from the
  // oldest one left). The ring buffer is bounded (log_buf_len), so is this.
  const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return log;
  std::string records;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      records.append(buf, static_cast<std::size_t>(n));
      if (records.back() != '\n') records += '\n';
    } else if (n < 0 && (errno == EPIPE || errno == EINTR)) {
      continue;
    } else {
      break;
    }
  }
  ::close(fd);
  log.boot_id = boot;
  log.kills = oom_kills_in_kmsg(records);
  return log;
}

}  // namespace rdzvscope
