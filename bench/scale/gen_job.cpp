// Synthetic job for the analyzer's scale benchmark: N rank trace files (8 per host), rank 0
// hosting the store, every rank connecting, and one straggler (the last rank) arriving after
// the others timed out, as `rdzvscope run` would have recorded them. With `hung`, the same job
// while it hangs, as `watch` sees it: the last rank has not reached the store, every other one
// sent a request and waits for the reply (a poll in flight on its store connection), nothing
// has ended. With `collective`, every rank reaches the store and makes its gloo pairs, then one
// rank (N/2 + 1) stalls after init_process_group: the others enter the first collective (send
// on their pairs) and exit 1 once the pairs' 2 s timeout ran out, the stalled rank exits 1 later.
//   gen_job DIR N [hung|collective]
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sys/socket.h>

#include <rdzvscope/trace_format.h>

namespace {

constexpr std::uint64_t kRealtime = 1796080758000000000ull;
constexpr std::uint64_t kMono = 5000000000ull;

struct File {
  rdzv_file_header h{};
  std::vector<rdzv_record> recs;

  rdzv_record& add(unsigned kind, unsigned op, double t) {
    rdzv_record r{};
    r.kind = static_cast<std::uint8_t>(kind);
    r.op = static_cast<std::uint8_t>(op);
    r.ts_ns = kMono + static_cast<std::uint64_t>(t * 1e9);
    r.fd = 7;
    r.tid = static_cast<std::uint32_t>(h.pid);
    r.u.net.timeout_ms = -1;
    recs.push_back(r);
    return recs.back();
  }
  // A wait for the store's reply on the store connection (fd 7), in flight since t.
  void wait_in_flight(double t, const rdzv_sockaddr& peer) {
    h.features |= RDZV_FEAT_INFLIGHT;
    rdzv_inflight& s = h.inflight[0];
    s.owner = static_cast<std::uint32_t>(h.pid);
    s.kind = RDZV_EV_POLL;
    s.op = RDZV_OP_POLL;
    s.flags = RDZV_F_STORE;
    s.fd = 7;
    s.has = RDZV_INFLIGHT_HAS_TIMEOUT | RDZV_INFLIGHT_HAS_PEER;
    s.start_ns = kMono + static_cast<std::uint64_t>(t * 1e9);
    s.timeout_ms = 1800000;
    s.u.peer = peer;
    s.seal = rdzv_inflight_seal(s.start_ns);
  }
  void write(const std::string& path) {
    h.capacity = static_cast<std::uint32_t>(recs.size());
    h.next_slot = recs.size();
    std::string bytes(RDZV_HEADER_SIZE + recs.size() * RDZV_RECORD_SIZE, '\0');
    std::memcpy(bytes.data(), &h, sizeof h);
    for (std::size_t i = 0; i < recs.size(); ++i) {
      recs[i].seal = rdzv_seal_for(i);
      std::memcpy(bytes.data() + rdzv_record_offset(i), &recs[i], sizeof recs[i]);
    }
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
      std::perror(path.c_str());
      std::exit(1);
    }
    ::close(fd);
  }
};

rdzv_sockaddr addr(std::uint32_t host, std::uint16_t port) {
  rdzv_sockaddr a{};
  a.family = 2;  // AF_INET
  a.port = port;
  a.addr[0] = 10;
  a.addr[2] = static_cast<std::uint8_t>(host >> 8);
  a.addr[3] = static_cast<std::uint8_t>(host);
  return a;
}

// The process group's three pairs of `rank` (fd 20 connected here, with gloo's 8-byte opening;
// 21 and 22 accepted), made at t with the pairs' timeout; an entering rank sends its first
// collective message at t + 0.1 s, every rank reads the others' (gloo's I/O thread reads them).
void gloo_pairs(File& f, int rank, double t, bool enters) {
  auto pair_record = [&](unsigned kind, unsigned op, double at, int fd) -> rdzv_record& {
    rdzv_record& r = f.add(kind, op, at);
    r.flags = RDZV_F_PEER;
    r.fd = fd;
    r.u.net.local = addr(static_cast<std::uint32_t>(rank), static_cast<std::uint16_t>(42000 + fd));
    r.u.net.peer = addr(static_cast<std::uint32_t>(rank + 1), static_cast<std::uint16_t>(43000 + fd));
    return r;
  };
  pair_record(RDZV_EV_CONNECT_DONE, RDZV_OP_GETSOCKOPT, t, 20).ret = 0;
  pair_record(RDZV_EV_SEND, RDZV_OP_WRITEV, t, 20).ret = 8;
  pair_record(RDZV_EV_ACCEPT, RDZV_OP_ACCEPT, t, 21).ret = 21;
  pair_record(RDZV_EV_ACCEPT, RDZV_OP_ACCEPT, t, 22).ret = 22;
  for (int fd = 20; fd <= 22; ++fd) {
    rdzv_record& so = f.add(RDZV_EV_SOCKOPT, RDZV_OP_SETSOCKOPT, t);
    so.fd = fd;
    so.u.net.size = SO_RCVTIMEO;
    so.u.net.timeout_ms = 2000;
  }
  if (enters)
    for (int fd : {21, 22}) pair_record(RDZV_EV_SEND, RDZV_OP_WRITEV, t + 0.1, fd).ret = 48;
  pair_record(RDZV_EV_RECV, RDZV_OP_RECV, t + 0.11, 21).ret = 48;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 4 && (std::strcmp(argv[3], "hung") == 0 || std::strcmp(argv[3], "collective") == 0))) {
    std::fprintf(stderr, "usage: gen_job DIR N [hung|collective]\n");
    return 2;
  }
  const bool hung = argc == 4 && std::strcmp(argv[3], "hung") == 0;
  const bool collective = argc == 4 && !hung;
  const std::string dir = argv[1];
  const int n = std::atoi(argv[2]);
  if (n < 2) return 2;
  ::mkdir(dir.c_str(), 0700);
  const std::uint16_t port = 29500;
  const double timeout = 60.0;
  for (int rank = 0; rank < n; ++rank) {
    File f;
    rdzv_file_header& h = f.h;
    std::memcpy(h.magic, RDZV_MAGIC, RDZV_MAGIC_LEN);
    h.version = RDZV_FORMAT_VERSION;
    h.header_size = RDZV_HEADER_SIZE;
    h.record_size = RDZV_RECORD_SIZE;
    h.features = RDZV_FEAT_PROC_START | RDZV_FEAT_SNAPSHOTS | RDZV_FEAT_STORE_IO;
    h.source = RDZV_SOURCE_SHIM;
    h.pid = 10000 + rank;
    h.ppid = 1;
    h.start_realtime_ns = kRealtime;
    h.clock_realtime_ns = kRealtime;
    h.clock_monotonic_ns = kMono;
    h.store_ports[0] = port;
    h.ident = rdzv_identity{rank, rank % 8, n, rank / 8, port, 0, rank, rank / 8, {}, {}, {}};
    std::strcpy(h.ident.master_addr, "node0");
    std::strcpy(h.ident.slurm_job_id, "4711");
    const int node = rank / 8;
    std::snprintf(h.host, sizeof h.host, "node%d", node);
    std::strcpy(h.exe, "/usr/bin/python3");
    std::strcpy(h.cmdline, "python3 train.py");
    f.add(RDZV_EV_PROC_START, RDZV_OP_INIT, 0.0);
    const bool late = !collective && rank == n - 1;
    char name[64];
    std::snprintf(name, sizeof name, "/node%d.%d.rzt", node, 10000 + rank);
    if (hung && late) {  // still before its rendezvous
      f.write(dir + name);
      continue;
    }
    const double arrive = late ? 95.0 : 4.0 + (rank % 97) * 0.001;
    if (rank == 0) {
      f.add(RDZV_EV_BIND, RDZV_OP_BIND, 3.9).u.net.local = addr(0, port);
      f.recs.back().flags = RDZV_F_STORE;
      f.add(RDZV_EV_LISTEN, RDZV_OP_LISTEN, 3.9).u.net.local = addr(0, port);
      f.recs.back().flags = RDZV_F_STORE;
    }
    auto& res = f.add(RDZV_EV_RESOLVE, RDZV_OP_GETADDRINFO, arrive - 0.002);
    std::strcpy(res.u.resolve.host, "node0");
    std::strcpy(res.u.resolve.service, "29500");
    res.u.resolve.naddrs = 1;
    res.u.resolve.first = addr(0, 0);
    auto& c = f.add(RDZV_EV_CONNECT, RDZV_OP_CONNECT, arrive);
    c.flags = RDZV_F_STORE;
    c.u.net.peer = addr(0, port);
    c.u.net.local = addr(static_cast<std::uint32_t>(node), static_cast<std::uint16_t>(40000 + rank % 20000));
    auto& snap = f.add(RDZV_EV_SNAPSHOT, RDZV_SNAP_FIRST_STORE_CONNECT, arrive);
    snap.u.snap.utime_us = late ? 11'000'000 : 3'000'000;
    snap.u.snap.read_bytes = late ? 41'700'000'000ull : 1'000'000'000ull;
    snap.u.snap.rchar = snap.u.snap.read_bytes;
    snap.u.snap.since_start_ns = static_cast<std::uint64_t>(arrive * 1e9);
    if (hung) {
      auto& req = f.add(RDZV_EV_SEND, RDZV_OP_SEND, arrive + 0.01);
      req.flags = RDZV_F_STORE;
      req.ret = 22;
      req.u.net.size = 22;
      req.u.net.peer = addr(0, port);
      f.wait_in_flight(arrive + 0.011, addr(0, port));
      f.write(dir + name);
      continue;
    }
    if (collective) {
      const bool stalls = rank == n / 2 + 1;
      gloo_pairs(f, rank, 4.2, !stalls);
      auto& ex = f.add(RDZV_EV_PROC_EXIT, RDZV_OP_EXIT, stalls ? 8.3 : 6.3 + (rank % 13) * 0.001);
      ex.ret = 1;
      ex.u.proc.status = 1;
      f.write(dir + name);
      continue;
    }
    if (late) {
      c.ret = -1;
      c.err = ECONNREFUSED;
    } else {
      auto& so = f.add(RDZV_EV_SOCKOPT, RDZV_OP_SETSOCKOPT, arrive + 0.01);
      so.flags = RDZV_F_STORE;
      so.u.net.size = 20;  // SO_RCVTIMEO
      so.u.net.timeout_ms = static_cast<std::int64_t>(timeout * 1000);
      auto& rv = f.add(RDZV_EV_RECV, RDZV_OP_RECV, arrive + 0.02);
      rv.flags = RDZV_F_STORE | RDZV_F_TIMEOUT;
      rv.ret = -1;
      rv.err = EAGAIN;
      rv.dur_ns = static_cast<std::uint64_t>(timeout * 1e9);
      rv.u.net.peer = addr(0, port);
    }
    auto& ex = f.add(RDZV_EV_PROC_EXIT, RDZV_OP_EXIT, late ? 96.0 : arrive + timeout + 0.1);
    ex.ret = 1;
    ex.u.proc.status = 1;
    f.write(dir + name);
  }
  return 0;
}
