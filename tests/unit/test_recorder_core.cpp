// The recorder core (include/rdzvscope/recorder_core.h), which the shim and attach's loader
// both call: text and number parsing, the environment, configuration, identity, the store-port
// policy, process facts, and the trace file: its name, exclusive creation, modes, size,
// header, PROC_START record and slots.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "rdzvscope/recorder_core.h"
#include "temp_dir.h"

using rdzvscope::test::TempDir;

namespace {

// An environment for the core's lookups, without touching this process's own.
struct Env {
  std::string text;
  rdzv_env_block block{};
  explicit Env(const std::vector<std::string>& entries) {
    for (const auto& e : entries) text += e + '\0';
    block = {text.data(), text.size()};
  }
};

std::vector<std::uint16_t> ports_of(const rdzv_port_set& set) {
  std::vector<std::uint16_t> out;
  for (auto p : set.port)
    if (p) out.push_back(p);
  return out;
}

std::vector<std::uint16_t> ports_from(const std::vector<std::string>& entries) {
  Env env(entries);
  rdzv_port_set set{};
  rdzv_ports_from_env(&set, rdzv_env_block_get, &env.block);
  return ports_of(set);
}

// Sets the umask for one scope.
struct Umask {
  mode_t old;
  explicit Umask(mode_t m) : old(::umask(m)) {}
  ~Umask() { ::umask(old); }
};

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string host() {
  char h[128];
  rdzv_file_host(h, sizeof h);
  return h;
}

struct Created {
  int err = -1;
  rdzv_trace_step failed = RDZV_TRACE_OK;
  rdzv_trace trace{};
  std::string path;
};

Created create(const std::string& dir, int pid, const rdzv_file_header& facts,
               std::uint64_t max_bytes = 2u << 20, bool group_read = false,
               bool count_generation = true) {
  const std::string h = host();
  rdzv_trace_request req{};
  req.dir = dir.c_str();
  req.host = h.c_str();
  req.pid = pid;
  req.max_bytes = max_bytes;
  req.group_read = group_read;
  req.count_exec_generation = count_generation;
  Created c;
  char path[4096];
  path[0] = '\0';
  c.err = rdzv_trace_create(&req, &facts, &c.trace, path, sizeof path, &c.failed);
  c.path = path;
  return c;
}

rdzv_file_header facts_for(int pid, std::uint64_t start_ns) {
  rdzv_file_header h{};
  h.pid = pid;
  h.start_realtime_ns = start_ns;
  h.features = RDZV_FEAT_PROC_START;
  h.source = RDZV_SOURCE_SHIM;
  std::strcpy(h.exe, "/usr/bin/python3");
  return h;
}

}  // namespace

// ---------------------------------------------------------------- limits

TEST_CASE("the sampling limits are the ones both recorders document", "[core]") {
  CHECK(RDZV_IO_DETAIL_EVENTS == 32u);
  CHECK(RDZV_IO_FAILURE_EVENTS == 16u);
  CHECK(RDZV_FAILURE_SNAPSHOT_GAP_NS == 250000000ull);
  CHECK(RDZV_TRACE_DEFAULT_MAX_MB == 2u);
  CHECK(RDZV_TRACE_MAX_MB == 1024u);
}

TEST_CASE("a peer socket is one both recorders decide alike: after the store, off its ports, bounded",
          "[core][peer]") {
  // Documented in docs/attach.md and the shim's: 6 detailed calls, 512 open per process.
  CHECK(RDZV_PEER_DETAIL_EVENTS == 6u);
  CHECK(RDZV_PEER_SOCKETS_MAX == 512u);
  CHECK(rdzv_is_peer_socket(1, 0, 0));
  CHECK(rdzv_is_peer_socket(1, 0, RDZV_PEER_SOCKETS_MAX - 1));
  CHECK_FALSE(rdzv_is_peer_socket(0, 0, 0));  // before any store connect: not the pairs
  CHECK_FALSE(rdzv_is_peer_socket(1, 1, 0));  // a store port's connection is a store socket
  CHECK_FALSE(rdzv_is_peer_socket(1, 0, RDZV_PEER_SOCKETS_MAX));  // past the bound: plain
}

// ---------------------------------------------------------------- text

TEST_CASE("text building: appends, numbers, and a cut that is remembered", "[core][text]") {
  char buf[32];
  rdzv_text t;
  rdzv_text_init(&t, buf, sizeof buf);
  rdzv_text_str(&t, "pid ");
  rdzv_text_i64(&t, -42);
  rdzv_text_ch(&t, ' ');
  rdzv_text_u64(&t, 0);
  rdzv_text_str(&t, nullptr);
  CHECK(std::string(buf) == "pid -42 0");
  CHECK(t.len == 9);
  CHECK_FALSE(t.truncated);

  rdzv_text_init(&t, buf, sizeof buf);
  rdzv_text_i64(&t, INT64_MIN);
  CHECK(std::string(buf) == "-9223372036854775808");
  rdzv_text_init(&t, buf, sizeof buf);
  rdzv_text_u64(&t, UINT64_MAX);
  CHECK(std::string(buf) == "18446744073709551615");

  char small[5];
  rdzv_text_init(&t, small, sizeof small);
  rdzv_text_str(&t, "abcdef");
  CHECK(std::string(small) == "abcd");
  CHECK(t.truncated);
  rdzv_text_ch(&t, 'x');
  CHECK(std::string(small) == "abcd");

  rdzv_text_init(&t, small, 0);  // no room at all: nothing written, the cut is remembered
  rdzv_text_ch(&t, 'x');
  CHECK(t.truncated);
}

TEST_CASE("copy_cut copies what fits and says when it cut", "[core][text]") {
  char dst[4];
  CHECK_FALSE(rdzv_copy_cut(dst, sizeof dst, "abc"));
  CHECK(std::string(dst) == "abc");
  CHECK(rdzv_copy_cut(dst, sizeof dst, "abcd"));
  CHECK(std::string(dst) == "abc");
  CHECK_FALSE(rdzv_copy_cut(dst, sizeof dst, nullptr));
  CHECK(std::string(dst).empty());
  CHECK(rdzv_copy_cut(dst, 0, "a"));
  CHECK_FALSE(rdzv_copy_cut(dst, 0, ""));
}

TEST_CASE("parse_i64 takes a whole strict decimal only", "[core][text]") {
  rdzv_s64 v = 7;
  CHECK(rdzv_parse_i64("29500", &v));
  CHECK(v == 29500);
  CHECK(rdzv_parse_i64("-1", &v));
  CHECK(v == -1);
  CHECK(rdzv_parse_i64("9223372036854775807", &v));
  CHECK(v == INT64_MAX);
  CHECK(rdzv_parse_i64("-9223372036854775807", &v));
  CHECK(v == -INT64_MAX);
  v = 7;
  for (const char* bad : {"", "-", "+1", " 1", "1 ", "1x", "0x10", "9223372036854775808",
                          "99999999999999999999", "-9223372036854775808"}) {
    INFO(bad);
    CHECK_FALSE(rdzv_parse_i64(bad, &v));
  }
  CHECK_FALSE(rdzv_parse_i64(nullptr, &v));
  CHECK(v == 7);  // untouched on failure
}

// ---------------------------------------------------------------- environment, configuration

TEST_CASE("an environ copy is read as getenv reads the environment", "[core][env]") {
  Env env({"RANKX=9", "RANK=3", "RANK=4", "EMPTY=", "NOEQUALS", "A=b=c"});
  CHECK(std::string(rdzv_env_block_get(&env.block, "RANK")) == "3");  // the first one wins
  CHECK(rdzv_env_block_get(&env.block, "RAN") == nullptr);
  CHECK(rdzv_env_block_get(&env.block, "EMPTY") == nullptr);  // empty counts as unset
  CHECK(rdzv_env_block_get(&env.block, "NOEQUALS") == nullptr);
  CHECK(std::string(rdzv_env_block_get(&env.block, "A")) == "b=c");
  CHECK(rdzv_env_block_get(&env.block, "MISSING") == nullptr);

  // An entry cut at the end of the copy (no NUL) is not read: its value may be cut too.
  const std::string cut = std::string("X=1") + '\0' + "RANK=12";
  rdzv_env_block b{cut.data(), cut.size()};
  CHECK(std::string(rdzv_env_block_get(&b, "X")) == "1");
  CHECK(rdzv_env_block_get(&b, "RANK") == nullptr);
  rdzv_env_block none{nullptr, 0};
  CHECK(rdzv_env_block_get(&none, "X") == nullptr);
}

TEST_CASE("this process's environment: empty counts as unset", "[core][env]") {
  ::setenv("RDZVSCOPE_UNIT_CORE_VAR", "", 1);
  CHECK(rdzv_env_self(nullptr, "RDZVSCOPE_UNIT_CORE_VAR") == nullptr);
  ::setenv("RDZVSCOPE_UNIT_CORE_VAR", "v", 1);
  CHECK(std::string(rdzv_env_self(nullptr, "RDZVSCOPE_UNIT_CORE_VAR")) == "v");
  ::unsetenv("RDZVSCOPE_UNIT_CORE_VAR");
  CHECK(rdzv_env_self(nullptr, "RDZVSCOPE_UNIT_CORE_VAR") == nullptr);
}

TEST_CASE("yes/no settings: anything but unset, empty or 0 is yes", "[core][env]") {
  CHECK_FALSE(rdzv_env_flag(nullptr));
  CHECK_FALSE(rdzv_env_flag(""));
  CHECK_FALSE(rdzv_env_flag("0"));
  CHECK(rdzv_env_flag("1"));
  CHECK(rdzv_env_flag("yes"));
}

TEST_CASE("configuration: RDZVSCOPE_DIR, RDZVSCOPE_MAX_MB, RDZVSCOPE_GROUP_READ", "[core][env]") {
  rdzv_config cfg{};
  {
    Env env({"RDZVSCOPE_DIR=/tmp/t", "RDZVSCOPE_MAX_MB=8", "RDZVSCOPE_GROUP_READ=1"});
    rdzv_config_read(&cfg, rdzv_env_block_get, &env.block);
    CHECK(std::string(cfg.dir) == "/tmp/t");
    CHECK(cfg.max_bytes == (8u << 20));
    CHECK(cfg.group_read);
  }
  {
    Env env({});
    rdzv_config_read(&cfg, rdzv_env_block_get, &env.block);
    CHECK(std::string(cfg.dir).empty());  // tracing off
    CHECK(cfg.max_bytes == (2u << 20));
    CHECK_FALSE(cfg.group_read);
  }
  for (const char* mb : {"0", "-3", "abc", "1.5"}) {
    INFO(mb);
    Env env({std::string("RDZVSCOPE_MAX_MB=") + mb, "RDZVSCOPE_GROUP_READ=0"});
    rdzv_config_read(&cfg, rdzv_env_block_get, &env.block);
    CHECK(cfg.max_bytes == (2u << 20));
    CHECK_FALSE(cfg.group_read);
  }
  CHECK(rdzv_max_bytes_for_mb(5000) == (std::uint64_t{1024} << 20));
  CHECK(rdzv_max_bytes_for_mb(1024) == (std::uint64_t{1024} << 20));
  CHECK(rdzv_max_bytes_for_mb(1) == (1u << 20));
}

// ---------------------------------------------------------------- identity

TEST_CASE("identity: every variable, strict numbers, cut strings", "[core][identity]") {
  Env env({"RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=8", "GROUP_RANK=2", "MASTER_PORT=29501",
           "TORCHELASTIC_RESTART_COUNT=1", "SLURM_PROCID=5", "SLURM_NODEID=0", "MASTER_ADDR=node-a",
           "TORCHELASTIC_RUN_ID=job42", "SLURM_JOB_ID=777"});
  rdzv_identity id;
  std::memset(&id, 0x5a, sizeof id);  // every field is written
  rdzv_identity_fill(&id, rdzv_env_block_get, &env.block);
  CHECK(id.rank == 3);
  CHECK(id.local_rank == 1);
  CHECK(id.world_size == 8);
  CHECK(id.group_rank == 2);
  CHECK(id.master_port == 29501);
  CHECK(id.restart_count == 1);
  CHECK(id.slurm_procid == 5);
  CHECK(id.slurm_nodeid == 0);
  CHECK(std::string(id.master_addr) == "node-a");
  CHECK(std::string(id.run_id) == "job42");
  CHECK(std::string(id.slurm_job_id) == "777");
}

TEST_CASE("identity: absent, malformed and out-of-range values read as unknown",
          "[core][identity]") {
  const std::string long_addr(100, 'a');
  Env env({"RANK= 3", "LOCAL_RANK=+1", "WORLD_SIZE=2147483648", "GROUP_RANK=-2147483648",
           "MASTER_PORT=", "MASTER_ADDR=" + long_addr});
  rdzv_identity id;
  std::memset(&id, 0x5a, sizeof id);
  rdzv_identity_fill(&id, rdzv_env_block_get, &env.block);
  CHECK(id.rank == -1);
  CHECK(id.local_rank == -1);
  CHECK(id.world_size == -1);
  CHECK(id.group_rank == INT32_MIN);  // in range
  CHECK(id.master_port == -1);
  CHECK(id.restart_count == -1);
  CHECK(id.slurm_procid == -1);
  CHECK(std::string(id.master_addr) == long_addr.substr(0, sizeof id.master_addr - 1));
  CHECK(std::string(id.run_id).empty());
  CHECK(std::string(id.slurm_job_id).empty());
}

// ---------------------------------------------------------------- store ports

TEST_CASE("store ports: MASTER_PORT, the endpoint's port, 29400, 29500, RDZVSCOPE_PORTS",
          "[core][ports]") {
  CHECK(ports_from({}) == std::vector<std::uint16_t>{29400, 29500});
  CHECK(ports_from({"MASTER_PORT=29600", "PET_RDZV_ENDPOINT=node-a:29401",
                    "RDZVSCOPE_PORTS=41000,41001"}) ==
        std::vector<std::uint16_t>{29600, 29401, 29400, 29500, 41000, 41001});
  CHECK(ports_from({"PET_RDZV_ENDPOINT=[fe80::1]:29402"}) ==
        std::vector<std::uint16_t>{29402, 29400, 29500});
  CHECK(ports_from({"PET_RDZV_ENDPOINT=[fe80::1]"}) == std::vector<std::uint16_t>{29400, 29500});
  CHECK(ports_from({"PET_RDZV_ENDPOINT=node-a"}) == std::vector<std::uint16_t>{29400, 29500});
  CHECK(ports_from({"MASTER_PORT=29500"}) ==
        std::vector<std::uint16_t>{29500, 29400});  // once each
}

// The environment read entry by entry, as attach's kernel side reads a new image's at exec
// (bpf/env_ports.bpf.h): the same header functions, one entry at a time, a list a character
// at a time. The defaults are no entry's.
std::vector<std::uint16_t> ports_entry_by_entry(const std::vector<std::string>& entries) {
  std::vector<std::uint16_t> out;
  auto add = [&](std::uint16_t p) {
    if (p && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  };
  for (const std::string& e : entries) {
    unsigned at = 0;
    const auto len = static_cast<unsigned>(e.size());
    switch (rdzv_env_entry_port_var(e.c_str(), len, &at)) {
      case RDZV_PORT_VAR_MASTER_PORT: add(rdzv_port_of_text(e.c_str() + at, len - at)); break;
      case RDZV_PORT_VAR_ENDPOINT: add(rdzv_port_of_endpoint(e.c_str() + at, len - at)); break;
      case RDZV_PORT_VAR_LIST: {
        rdzv_port_list_state st{};
        for (unsigned i = at; i <= len; ++i) add(rdzv_port_list_feed(&st, i < len ? e[i] : '\0'));
        break;
      }
      default: break;
    }
  }
  return out;
}

std::vector<std::uint16_t> without_defaults(std::vector<std::uint16_t> ports) {
  std::erase_if(ports, [](std::uint16_t p) { return p == RDZV_PORT_C10D_DEFAULT || p == RDZV_PORT_TCPSTORE_DEFAULT; });
  return ports;
}

TEST_CASE("store ports: read entry by entry (attach at exec) as looked up by name (the shim)",
          "[core][ports]") {
  const std::vector<std::vector<std::string>> envs = {
      {"MASTER_PORT=29600", "PET_RDZV_ENDPOINT=node-a:29401", "RDZVSCOPE_PORTS=41000,41001"},
      {"PET_RDZV_ENDPOINT=[fe80::1]:29402"},
      {"PET_RDZV_ENDPOINT=[fe80::1]", "MASTER_PORTX=1", "XMASTER_PORT=2", "MASTER_PORT"},
      {"PET_RDZV_ENDPOINT=node-a", "MASTER_PORT=0029501"},
      {"MASTER_PORT=00029501", "RDZVSCOPE_PORTS=70000,abc,,-5, 41002,41003 ,+41004,41005"},
      {"PET_RDZV_ENDPOINT=" + std::string(250, 'h') + ".example:29403"},
      {"PET_RDZV_ENDPOINT=host:123456789", "MASTER_PORT=65536"},
  };
  for (const auto& env : envs) {
    CAPTURE(env);
    CHECK(ports_entry_by_entry(env) == without_defaults(ports_from(env)));
  }
  CHECK(ports_entry_by_entry(envs[5]) == std::vector<std::uint16_t>{29403});  // a 253-byte name
}

TEST_CASE("store ports: what is not a strict decimal port is skipped", "[core][ports]") {
  CHECK(ports_from({"MASTER_PORT=0", "RDZVSCOPE_PORTS=70000,abc,,-5, 41002,41003 ,+41004,41005"}) ==
        std::vector<std::uint16_t>{29400, 29500, 41005});
  CHECK(ports_from({"MASTER_PORT=65535", "RDZVSCOPE_PORTS=1"}) ==
        std::vector<std::uint16_t>{65535, 29400, 29500, 1});
  CHECK(ports_from({"MASTER_PORT=0029501"}) == std::vector<std::uint16_t>{29501, 29400, 29500});
  CHECK(ports_from({"MASTER_PORT=00029501"}) ==
        std::vector<std::uint16_t>{29400, 29500});  // too long
}

TEST_CASE("store ports: at most RDZV_MAX_STORE_PORTS, added once, looked up", "[core][ports]") {
  rdzv_port_set set{};
  CHECK(rdzv_ports_add(&set, 29500));
  CHECK_FALSE(rdzv_ports_add(&set, 29500));
  CHECK_FALSE(rdzv_ports_add(&set, 0));
  CHECK_FALSE(rdzv_ports_add(&set, 65536));
  CHECK_FALSE(rdzv_ports_add(&set, -1));
  for (int p = 1; p < RDZV_MAX_STORE_PORTS; ++p) CHECK(rdzv_ports_add(&set, 40000 + p));
  CHECK_FALSE(rdzv_ports_add(&set, 50000));  // full
  CHECK(rdzv_ports_contains(&set, 29500));
  CHECK(rdzv_ports_contains(&set, 40000 + RDZV_MAX_STORE_PORTS - 1));
  CHECK_FALSE(rdzv_ports_contains(&set, 50000));
  CHECK_FALSE(rdzv_ports_contains(&set, 0));
}

TEST_CASE("store ports: MASTER_PORT set late is learnt once", "[core][ports]") {
  rdzv_port_set set{};
  Env before({});
  rdzv_ports_from_env(&set, rdzv_env_block_get, &before.block);
  CHECK_FALSE(rdzv_ports_refresh(&set, rdzv_env_block_get, &before.block));
  Env after({"MASTER_PORT=41234"});
  CHECK(rdzv_ports_refresh(&set, rdzv_env_block_get, &after.block));
  CHECK_FALSE(rdzv_ports_refresh(&set, rdzv_env_block_get, &after.block));
  CHECK(rdzv_ports_contains(&set, 41234));
}

TEST_CASE("store ports: export never erases a port already in the header", "[core][ports]") {
  rdzv_port_set set{};
  rdzv_ports_add(&set, 29500);
  rdzv_u16 header[RDZV_MAX_STORE_PORTS] = {};
  header[1] = 41000;  // written by a faster exporter that knew one port more
  rdzv_ports_export(&set, header);
  CHECK(header[0] == 29500);
  CHECK(header[1] == 41000);
  CHECK(header[2] == 0);
}

// ---------------------------------------------------------------- process facts

TEST_CASE("proc fields: the number after a key, blanks skipped", "[core][proc]") {
  const char* io = "rchar: 123\nwchar: 45\nread_bytes: 6\nwrite_bytes: 7\n";
  CHECK(rdzv_proc_field(io, "rchar:") == 123);
  CHECK(rdzv_proc_field(io, "\nwrite_bytes:") == 7);
  CHECK(rdzv_proc_field("VmHWM:\t   1234 kB\n", "VmHWM:") == 1234);
  CHECK(rdzv_proc_field(io, "missing:") == 0);
}

TEST_CASE("read_file reads at most cap-1 bytes and terminates", "[core][proc]") {
  TempDir dir;
  std::ofstream(dir.file("f")) << "0123456789";
  char buf[5];
  CHECK(rdzv_read_file(dir.file("f").c_str(), buf, sizeof buf) == 4);
  CHECK(std::string(buf) == "0123");
  CHECK(rdzv_read_file(dir.file("missing").c_str(), buf, sizeof buf) == -1);
  CHECK(rdzv_read_file(dir.file("f").c_str(), buf, 0) == -1);
}

TEST_CASE("process facts of this process, from inside and from /proc/PID alike", "[core][proc]") {
  char exe[256] = {};
  REQUIRE(::readlink("/proc/self/exe", exe, sizeof exe - 1) > 0);
  for (const int pid : {0, static_cast<int>(::getpid())}) {
    INFO("pid argument " << pid);
    rdzv_file_header h{};
    REQUIRE(rdzv_process_fill(&h, pid) == 0);
    CHECK(h.pid == ::getpid());
    CHECK(h.ppid == ::getppid());
    CHECK((h.features & RDZV_FEAT_PROC_START));
    CHECK(h.start_realtime_ns > 0);
    CHECK(h.start_realtime_ns <= h.clock_realtime_ns);
    CHECK(h.clock_monotonic_ns == h.created_monotonic_ns);
    CHECK(std::string(h.exe) == exe);
    const std::string base = std::string(exe).substr(std::string(exe).rfind('/') + 1);
    CHECK(std::string(h.cmdline).find(base) != std::string::npos);
    CHECK(std::string(h.host).size() > 0);
  }
}

TEST_CASE("process facts of a process that is gone: pid and clocks only", "[core][proc]") {
  rdzv_file_header h{};
  CHECK(rdzv_process_fill(&h, 0x3ffffffe) == -1);
  CHECK(h.pid == 0x3ffffffe);
  CHECK(h.ppid == -1);
  CHECK(h.clock_realtime_ns > 0);
  CHECK_FALSE((h.features & RDZV_FEAT_PROC_START));
  CHECK(std::string(h.exe).empty());
}

TEST_CASE("origin parsers: boot id, namespace link, NSpid, container id", "[core][origin]") {
  rdzv_u8 boot[16] = {};
  REQUIRE(rdzv_parse_boot_id("0123abcd-45ef-6789-aBcD-0123456789ef\n", boot) == 1);
  CHECK(boot[0] == 0x01);
  CHECK(boot[3] == 0xcd);
  CHECK(boot[15] == 0xef);
  rdzv_u8 untouched[16] = {7};
  CHECK(rdzv_parse_boot_id("0123abcd-45ef-6789-abcd-0123456789e", untouched) == 0);  // short
  CHECK(rdzv_parse_boot_id("0123abcd445ef-6789-abcd-0123456789ef", untouched) == 0);  // no dash
  CHECK(rdzv_parse_boot_id("0123abcd-45ef-6789-abcd-0123456789eg", untouched) == 0);  // not hex
  CHECK(untouched[0] == 7);

  CHECK(rdzv_parse_ns_link("pid:[4026531836]") == 4026531836ull);
  CHECK(rdzv_parse_ns_link("net:[4026532008]") == 4026532008ull);
  CHECK(rdzv_parse_ns_link("pid:[]") == 0);
  CHECK(rdzv_parse_ns_link("pid:[12") == 0);
  CHECK(rdzv_parse_ns_link("pid:[99999999999999999999999]") == 0);

  rdzv_s32 first = 0, last = 0;
  CHECK(rdzv_parse_nspid("Name:\tpython3\nNSpid:\t4242\t17\t1\nNSpgid:\t1\n", &first, &last) == 3);
  CHECK(first == 4242);
  CHECK(last == 1);
  CHECK(rdzv_parse_nspid("NSpid:\t77\n", &first, &last) == 1);
  CHECK(first == 77);
  CHECK(last == 77);
  CHECK(rdzv_parse_nspid("Name:\tx\nPid:\t5\n", &first, &last) == 0);
  CHECK(rdzv_parse_nspid("NSpid:\t5x\n", &first, &last) == 0);

  const std::string id(64, 'a');
  char out[RDZV_CONTAINER_ID_MAX] = {};
  CHECK(rdzv_find_container_id(("0::/system.slice/docker-" + id + ".scope\n").c_str(), out, sizeof out) == 1);
  CHECK(std::string(out) == id);
  const std::string inner = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  CHECK(rdzv_find_container_id(("0::/kubepods/besteffort/pod1234/" + id + "/cri-containerd-" + inner + ".scope").c_str(),
                               out, sizeof out) == 1);
  CHECK(std::string(out) == inner);  // the innermost
  char none[RDZV_CONTAINER_ID_MAX] = "x";
  CHECK(rdzv_find_container_id("0::/user.slice/user-0.slice/session-3.scope\n", none, sizeof none) == 0);
  CHECK(rdzv_find_container_id(("0::/x/" + id + "0/").c_str(), none, sizeof none) == 0);  // 65 digits
  CHECK(std::string(none) == "x");
}

TEST_CASE("origin of this process: boot, namespaces and pid as /proc says, from inside and outside",
          "[core][origin]") {
  char link[64] = {};
  REQUIRE(::readlink("/proc/self/ns/pid", link, sizeof link - 1) > 0);
  const rdzv_u64 pidns = rdzv_parse_ns_link(link);
  REQUIRE(pidns != 0);
  for (const int pid : {0, static_cast<int>(::getpid())}) {
    INFO("pid argument " << pid);
    rdzv_file_header h{};
    REQUIRE(rdzv_process_fill(&h, pid) == 0);
    REQUIRE((h.features & RDZV_FEAT_ORIGIN));
    CHECK(h.origin.pidns_inode == pidns);
    CHECK(h.origin.netns_inode != 0);
    CHECK(h.origin.ns_pid == ::getpid());
    CHECK(h.origin.start_ticks > 0);
    rdzv_u8 zero[16] = {};
    CHECK(std::memcmp(h.origin.boot_id, zero, sizeof zero) != 0);
  }
}

TEST_CASE("exec generation: a file of the same pid in another PID namespace is a stranger",
          "[core][file][origin]") {
  TempDir dir;
  const std::uint64_t start = 1700000000000000000ull;
  rdzv_file_header a = facts_for(1, start);
  a.features |= RDZV_FEAT_ORIGIN;
  a.origin.pidns_inode = 4026532301ull;
  Created first = create(dir.path(), 1, a, 1u << 20);
  REQUIRE(first.err == 0);
  rdzv_trace_publish(&first.trace);
  rdzv_trace_close(&first.trace);
  // pid 1 of another container, started in the same instant: not an exec of the first.
  rdzv_file_header b = a;
  b.origin.pidns_inode = 4026532302ull;
  Created other = create(dir.path(), 1, b, 1u << 20);
  REQUIRE(other.err == 0);
  CHECK(other.path == dir.file(host() + ".1.1.rzt"));
  CHECK(other.trace.header->exec_generation == 0);
  rdzv_trace_close(&other.trace);
  // The same namespace: an exec.
  Created exec = create(dir.path(), 1, a, 1u << 20);
  REQUIRE(exec.err == 0);
  CHECK(exec.trace.header->exec_generation == 1);
  rdzv_trace_close(&exec.trace);
}

// ---------------------------------------------------------------- trace files

TEST_CASE("file names: DIR/HOST.PID[.N].rzt, and a host safe for a name", "[core][file]") {
  char path[64];
  REQUIRE(rdzv_trace_name(path, sizeof path, "/d", "node-1", 4242, 0) == 0);
  CHECK(std::string(path) == "/d/node-1.4242.rzt");
  REQUIRE(rdzv_trace_name(path, sizeof path, "/d", "node-1", 4242, 3) == 0);
  CHECK(std::string(path) == "/d/node-1.4242.3.rzt");
  CHECK(rdzv_trace_name(path, 12, "/d", "node-1", 4242, 0) == -1);

  const std::string h = host();
  CHECK_FALSE(h.empty());
  CHECK(h.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
        std::string::npos);
  char tiny[4];
  rdzv_file_host(tiny, sizeof tiny);
  CHECK(std::strlen(tiny) <= 3);
}

TEST_CASE("file geometry: the size cap in whole records, clamped", "[core][file]") {
  rdzv_u64 cap;
  size_t len;
  rdzv_trace_geometry(2u << 20, &cap, &len);
  CHECK(cap == ((2u << 20) - RDZV_HEADER_SIZE) / RDZV_RECORD_SIZE);
  CHECK(len == RDZV_HEADER_SIZE + cap * RDZV_RECORD_SIZE);
  CHECK(len <= (2u << 20));
  rdzv_trace_geometry(0, &cap, &len);
  CHECK(cap == 1);
  rdzv_trace_geometry(std::uint64_t{1} << 40, &cap, &len);
  CHECK(len <= (std::uint64_t{RDZV_TRACE_MAX_MB} << 20));
  CHECK(cap == ((std::uint64_t{RDZV_TRACE_MAX_MB} << 20) - RDZV_HEADER_SIZE) / RDZV_RECORD_SIZE);
}

TEST_CASE("the trace directory is made 0700, or 0750 for the group, whatever the umask",
          "[core][file]") {
  TempDir dir;
  Umask umask(0);
  REQUIRE(rdzv_trace_dir_ensure(dir.file("a").c_str(), 0) == 0);
  CHECK(mode_of(dir.file("a")) == 0700);
  REQUIRE(rdzv_trace_dir_ensure(dir.file("b").c_str(), 1) == 0);
  CHECK(mode_of(dir.file("b")) == 0750);
  REQUIRE(rdzv_trace_dir_ensure(dir.file("a").c_str(), 1) == 0);  // exists: left as it is
  CHECK(mode_of(dir.file("a")) == 0700);
  std::ofstream(dir.file("file")) << "x";
  errno = 0;
  CHECK(rdzv_trace_dir_ensure(dir.file("file").c_str(), 0) == -1);
  CHECK(errno == ENOTDIR);
  errno = 0;
  CHECK(rdzv_trace_dir_ensure(dir.file("file/below").c_str(), 0) == -1);  // a parent is a file
  CHECK(errno == ENOTDIR);
}

TEST_CASE("the trace directory's missing parents are made too, each with the same mode",
          "[core][file]") {
  TempDir dir;
  Umask umask(0);
  REQUIRE(rdzv_trace_dir_ensure(dir.file("2026/12/01/77/node3").c_str(), 1) == 0);
  for (const char* d : {"2026", "2026/12", "2026/12/01", "2026/12/01/77", "2026/12/01/77/node3"}) {
    INFO(d);
    CHECK(mode_of(dir.file(d)) == 0750);
  }
  REQUIRE(rdzv_trace_dir_ensure((dir.file("2026//12/01/77/node4") + "/").c_str(), 0) == 0);
  CHECK(mode_of(dir.file("2026/12/01/77/node4")) == 0700);
  CHECK(mode_of(dir.file("2026/12")) == 0750);  // an existing parent is left as it is
}

TEST_CASE("RDZVSCOPE_DIR placeholders: host, job, date, a literal percent", "[core][env]") {
  char out[256];
  const time_t day = 1796083200;  // 2026-12-01T00:00:00Z
  {
    Env env({"SLURM_JOB_ID=4242", "TORCHELASTIC_RUN_ID=r1"});
    REQUIRE(rdzv_trace_dir_expand(out, sizeof out, "/b/%Y/%m/%d/%j/%h", rdzv_env_block_get, &env.block,
                                  "node7", day) == 0);
    CHECK(std::string(out) == "/b/2026/12/01/4242/node7");
  }
  {
    Env env({"TORCHELASTIC_RUN_ID=run/../x y"});  // never a path of its own
    REQUIRE(rdzv_trace_dir_expand(out, sizeof out, "/b/%j", rdzv_env_block_get, &env.block, "h", day) == 0);
    CHECK(std::string(out) == "/b/run_.._x_y");
  }
  {
    Env env({"TORCHELASTIC_RUN_ID=.."});
    REQUIRE(rdzv_trace_dir_expand(out, sizeof out, "/b/%j", rdzv_env_block_get, &env.block, "h", day) == 0);
    CHECK(std::string(out) == "/b/_.");
  }
  {
    Env env({});
    REQUIRE(rdzv_trace_dir_expand(out, sizeof out, "/b/%j/100%%/%q/%", rdzv_env_block_get, &env.block, "h", day) == 0);
    CHECK(std::string(out) == "/b/nojob/100%/%q/%");
    CHECK(rdzv_trace_dir_expand(out, 8, "/b/%j/%h", rdzv_env_block_get, &env.block, "h", day) == -1);
  }
  {
    Env env({"RDZVSCOPE_DIR=/b/%j", "SLURM_JOB_ID=9"});
    rdzv_config cfg{};
    rdzv_config_read(&cfg, rdzv_env_block_get, &env.block);
    CHECK(std::string(cfg.dir) == "/b/9");  // expanded once, when the configuration is read
  }
}

TEST_CASE("a new trace file: name, mode, size, blocks and header", "[core][file]") {
  TempDir dir;
  Umask umask(0);
  rdzv_file_header facts = facts_for(4242, 1000000000000ull);
  facts.store_ports[0] = 29500;
  facts.next_slot = 99;  // counters and magic in the facts are not carried over
  std::memcpy(facts.magic, RDZV_MAGIC, RDZV_MAGIC_LEN);
  Created c = create(dir.path(), 4242, facts, 1u << 20);
  REQUIRE(c.err == 0);
  CHECK(c.failed == RDZV_TRACE_OK);
  CHECK(c.path == dir.file(host() + ".4242.rzt"));
  CHECK(mode_of(c.path) == 0600);
  struct stat st {};
  REQUIRE(::stat(c.path.c_str(), &st) == 0);
  CHECK(static_cast<size_t>(st.st_size) == c.trace.map_len);
  // The blocks are allocated up front (no SIGBUS on a full disk), where the file system can.
  const int probe = ::open(dir.file("probe").c_str(), O_RDWR | O_CREAT, 0600);
  const bool can_allocate = probe >= 0 && ::posix_fallocate(probe, 0, 1 << 20) == 0;
  if (probe >= 0) ::close(probe);
  if (can_allocate) CHECK(static_cast<std::uint64_t>(st.st_blocks) * 512 >= c.trace.map_len);

  const rdzv_file_header* h = c.trace.header;
  CHECK(std::memcmp(h->magic, "\0\0\0\0\0\0\0\0", 8) == 0);  // not a trace before publish
  CHECK(h->version == RDZV_FORMAT_VERSION);
  CHECK(h->header_size == RDZV_HEADER_SIZE);
  CHECK(h->record_size == RDZV_RECORD_SIZE);
  CHECK(h->capacity == c.trace.capacity);
  CHECK(h->capacity == ((1u << 20) - RDZV_HEADER_SIZE) / RDZV_RECORD_SIZE);
  CHECK(h->next_slot == 0);
  CHECK(h->pid == 4242);
  CHECK(h->store_ports[0] == 29500);
  CHECK(h->source == RDZV_SOURCE_SHIM);
  CHECK(h->exec_generation == 0);
  rdzv_trace_publish(&c.trace);
  CHECK(std::memcmp(h->magic, RDZV_MAGIC, RDZV_MAGIC_LEN) == 0);
  rdzv_trace_close(&c.trace);
  CHECK(c.trace.header == nullptr);

  // What the mapping wrote is in the file.
  rdzv_file_header back{};
  std::ifstream(c.path, std::ios::binary).read(reinterpret_cast<char*>(&back), sizeof back);
  CHECK(std::memcmp(back.magic, RDZV_MAGIC, RDZV_MAGIC_LEN) == 0);
  CHECK(back.pid == 4242);
}

TEST_CASE("RDZVSCOPE_GROUP_READ: 0640 whatever the umask", "[core][file]") {
  TempDir dir;
  Umask umask(077);
  Created c = create(dir.path(), 7, facts_for(7, 1), 1u << 20, true);
  REQUIRE(c.err == 0);
  CHECK(mode_of(c.path) == 0640);
  rdzv_trace_close(&c.trace);
}

TEST_CASE("a taken name is never reused: the next suffix, the other file untouched",
          "[core][file]") {
  TempDir dir;
  const std::string first = dir.file(host() + ".77.rzt");
  std::ofstream(first) << "not ours";
  // A planted symbolic link is not followed either.
  REQUIRE(::symlink(dir.file("target").c_str(), dir.file(host() + ".77.1.rzt").c_str()) == 0);
  Created c = create(dir.path(), 77, facts_for(77, 5), 1u << 20);
  REQUIRE(c.err == 0);
  CHECK(c.path == dir.file(host() + ".77.2.rzt"));
  CHECK_FALSE(exists(dir.file("target")));
  std::string text;
  std::getline(std::ifstream(first), text);
  CHECK(text == "not ours");
  CHECK(c.trace.header->exec_generation == 0);  // neither is an earlier image of ours
  rdzv_trace_close(&c.trace);
}

TEST_CASE("exec generation: an earlier image's file of this very process counts", "[core][file]") {
  TempDir dir;
  const std::uint64_t start = 1700000000000000000ull;
  Created first = create(dir.path(), 99, facts_for(99, start), 1u << 20);
  REQUIRE(first.err == 0);
  rdzv_trace_publish(&first.trace);
  rdzv_trace_close(&first.trace);
  // Same pid, same start (within the tick rounding): the process exec'd.
  Created second = create(dir.path(), 99, facts_for(99, start + 10000000), 1u << 20);
  REQUIRE(second.err == 0);
  CHECK(second.path == dir.file(host() + ".99.1.rzt"));
  CHECK(second.trace.header->exec_generation == 1);
  rdzv_trace_publish(&second.trace);
  rdzv_trace_close(&second.trace);
  // Same pid, another start: a stranger that reused the pid.
  Created stranger = create(dir.path(), 99, facts_for(99, start + 60000000000ull), 1u << 20);
  REQUIRE(stranger.err == 0);
  CHECK(stranger.trace.header->exec_generation == 0);
  rdzv_trace_close(&stranger.trace);
  // Attach keeps one file per process: it does not count.
  Created attach = create(dir.path(), 99, facts_for(99, start), 1u << 20, false, false);
  REQUIRE(attach.err == 0);
  CHECK(attach.path == dir.file(host() + ".99.3.rzt"));
  CHECK(attach.trace.header->exec_generation == 0);
  rdzv_trace_close(&attach.trace);
}

TEST_CASE("creation failures say which step failed", "[core][file]") {
  TempDir dir;
  rdzv_file_header facts = facts_for(5, 1);
  Created missing = create(dir.file("no-such-dir"), 5, facts);
  CHECK(missing.err == ENOENT);
  CHECK(missing.failed == RDZV_TRACE_CREATE);
  CHECK(missing.trace.header == nullptr);
  CHECK(std::string(rdzv_trace_step_text(missing.failed)) == "cannot create trace file");

  const std::string deep = dir.path() + "/" + std::string(4090, 'd');
  Created long_name = create(deep, 5, facts);
  CHECK(long_name.err == ENAMETOOLONG);
  CHECK(long_name.failed == RDZV_TRACE_NAME);
}

TEST_CASE("the PROC_START record: dated at the process start, the executable as path",
          "[core][file]") {
  rdzv_file_header h{};
  h.features = RDZV_FEAT_PROC_START;
  h.clock_realtime_ns = 5000000000ull;
  h.start_realtime_ns = 3000000000ull;  // started 2 s before the clocks were read
  h.clock_monotonic_ns = 9000000000ull;
  const std::string exe = "/opt/" + std::string(200, 'x');
  std::strcpy(h.exe, exe.c_str());
  rdzv_record r;
  std::memset(&r, 0x77, sizeof r);
  rdzv_proc_start_record(&r, &h, 1234);
  CHECK(r.kind == RDZV_EV_PROC_START);
  CHECK(r.op == RDZV_OP_INIT);
  CHECK(r.tid == 1234);
  CHECK(r.ts_ns == 7000000000ull);
  CHECK(r.fd == -1);
  CHECK(r.dur_ns == 0);
  CHECK(r.flags == 0);
  CHECK(r.u.proc.child_pid == -1);
  CHECK(std::string(r.u.proc.path) == exe.substr(0, RDZV_PATH_MAX - 1));
  CHECK(r.seal == 0x77777777u);  // the seal is the committer's

  h.features = 0;  // start unknown: dated at the clock pair
  rdzv_proc_start_record(&r, &h, 1);
  CHECK(r.ts_ns == 9000000000ull);
}

TEST_CASE("slots: reserved in order, sealed, then counted as dropped once full", "[core][file]") {
  TempDir dir;
  Created c = create(dir.path(), 8, facts_for(8, 1), RDZV_HEADER_SIZE + 2 * RDZV_RECORD_SIZE);
  REQUIRE(c.err == 0);
  REQUIRE(c.trace.capacity == 2);
  for (rdzv_u64 want = 0; want < 2; ++want) {
    rdzv_u64 slot = 99;
    rdzv_record* r = rdzv_trace_reserve(&c.trace, &slot);
    REQUIRE(r == &c.trace.records[want]);
    CHECK(slot == want);
    rdzv_trace_commit(r, slot);
    CHECK(r->seal == rdzv_seal_for(slot));
  }
  rdzv_u64 slot = 99;
  CHECK(rdzv_trace_reserve(&c.trace, &slot) == nullptr);
  CHECK(rdzv_trace_reserve(&c.trace, &slot) == nullptr);
  CHECK(slot == 99);
  CHECK(c.trace.header->next_slot == 4);
  CHECK(c.trace.header->dropped == 2);
  rdzv_trace_close(&c.trace);
}

// ---------------------------------------------------------------- snapshots

TEST_CASE("failure snapshots: at most one per gap", "[core][snapshot]") {
  rdzv_u64 last = 0;
  const rdzv_u64 t = 10000000000ull;
  CHECK(rdzv_failure_snapshot_due(&last, t));
  CHECK(last == t);
  CHECK_FALSE(rdzv_failure_snapshot_due(&last, t + RDZV_FAILURE_SNAPSHOT_GAP_NS - 1));
  CHECK(last == t);
  CHECK(rdzv_failure_snapshot_due(&last, t + RDZV_FAILURE_SNAPSHOT_GAP_NS));
  CHECK(last == t + RDZV_FAILURE_SNAPSHOT_GAP_NS);
}

TEST_CASE("the PyTorch a process loaded: its package from a maps line, version.py, a soname", "[core][torch]") {
  char dir[256] = {};
  // The pip wheel: torch/_C and torch/lib in one package directory.
  CHECK(rdzv_torch_dir_of_mapping(
            "7f3a2c000000-7f3a2c200000 r-xp 00000000 fd:01 123 /v/lib/python3.11/site-packages/torch/lib/libc10.so\n",
            100, dir, sizeof dir) == 1);
  CHECK(std::string(dir) == "/v/lib/python3.11/site-packages/torch/");
  const char* deb = "7f00-7f10 r--p 00000000 fd:01 9 /usr/lib/python3/dist-packages/torch/_C.cpython-311-x86_64-linux-gnu.so";
  CHECK(rdzv_torch_dir_of_mapping(deb, std::strlen(deb), dir, sizeof dir) == 1);
  CHECK(std::string(dir) == "/usr/lib/python3/dist-packages/torch/");
  // Not torch's files: another package's, a module of torch that is no library, no file.
  const char* other = "7f00-7f10 r--p 0 fd:01 9 /x/site-packages/torchvision/_C.so";
  CHECK(rdzv_torch_dir_of_mapping(other, std::strlen(other), dir, sizeof dir) == 0);
  const char* py = "7f00-7f10 r--p 0 fd:01 9 /x/torch/distributed/x.py";
  CHECK(rdzv_torch_dir_of_mapping(py, std::strlen(py), dir, sizeof dir) == 0);
  CHECK(rdzv_torch_dir_of_mapping("7ffd-7ffe rw-p 0 00:00 0 [stack]", 31, dir, sizeof dir) == 0);
  char small[8];
  CHECK(rdzv_torch_dir_of_mapping(deb, std::strlen(deb), small, sizeof small) == 0);  // does not fit

  char v[RDZV_TORCH_VERSION_MAX] = {};
  const char* lib = "7f00-7f10 r-xp 0 fd:01 9 /usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0\n";
  CHECK(rdzv_torch_soname_version(lib, std::strlen(lib), v, sizeof v) == 1);
  CHECK(std::string(v) == "1.13.0");
  const char* c10 = "7f00-7f10 r-xp 0 fd:01 9 /usr/lib/x86_64-linux-gnu/libc10.so.1.13";
  CHECK(rdzv_torch_soname_version(c10, std::strlen(c10), v, sizeof v) == 1);
  CHECK(std::string(v) == "1.13");
  const char* unversioned = "7f00-7f10 r-xp 0 fd:01 9 /v/torch/lib/libc10.so";
  CHECK(rdzv_torch_soname_version(unversioned, std::strlen(unversioned), v, sizeof v) == 0);
  const char* libc = "7f00-7f10 r-xp 0 fd:01 9 /usr/lib/x86_64-linux-gnu/libc.so.6";
  CHECK(rdzv_torch_soname_version(libc, std::strlen(libc), v, sizeof v) == 0);

  CHECK(rdzv_parse_torch_version_py("from typing import Optional\n\n__all__ = ['__version__']\n"
                                    "__version__ = '2.13.0+cpu'\ndebug = False\n", v, sizeof v) == 1);
  CHECK(std::string(v) == "2.13.0+cpu");
  CHECK(rdzv_parse_torch_version_py("__version__ = '1.13.0a0'\n", v, sizeof v) == 1);
  CHECK(std::string(v) == "1.13.0a0");
  CHECK(rdzv_parse_torch_version_py("__version__: str = \"2.5.1\"\n", v, sizeof v) == 1);
  CHECK(std::string(v) == "2.5.1");
  CHECK(rdzv_parse_torch_version_py("x = 1\n", v, sizeof v) == 0);
  CHECK(rdzv_parse_torch_version_py("__version__ = ''\n", v, sizeof v) == 0);
  CHECK(rdzv_parse_torch_version_py("__version__ = '2.1\n", v, sizeof v) == 0);  // unterminated
}

TEST_CASE("the PyTorch of this process: none loaded, none found", "[core][torch]") {
  static rdzv_torch_scan scan;
  char v[RDZV_TORCH_VERSION_MAX] = "x";
  CHECK(rdzv_torch_version_self(v, sizeof v, &scan) == 0);
}
