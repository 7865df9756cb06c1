#include "dump_json.h"

#include <fmt/format.h>

#include <algorithm>

#include "names.h"

namespace rdzvscope {

using json = nlohmann::ordered_json;

namespace {

// Identity fields use -1 / "" for "not in the environment": print those as null, so that a
// consumer never mistakes rank -1 for a rank.
json int_or_null(std::int32_t v) { return v == -1 ? json(nullptr) : json(v); }

json string_or_null(std::string s) { return s.empty() ? json(nullptr) : json(std::move(s)); }

json addr_or_null(const rdzv_sockaddr& sa) {
  auto s = format_sockaddr(sa);
  return s ? json(*s) : json(nullptr);
}

json identity_json(const rdzv_identity& id) {
  return json{
      {"rank", int_or_null(id.rank)},
      {"local_rank", int_or_null(id.local_rank)},
      {"world_size", int_or_null(id.world_size)},
      {"group_rank", int_or_null(id.group_rank)},
      {"master_port", int_or_null(id.master_port)},
      {"restart_count", int_or_null(id.restart_count)},
      {"slurm_procid", int_or_null(id.slurm_procid)},
      {"slurm_nodeid", int_or_null(id.slurm_nodeid)},
      {"master_addr", string_or_null(bounded_string(id.master_addr))},
      {"run_id", string_or_null(bounded_string(id.run_id))},
      {"slurm_job_id", string_or_null(bounded_string(id.slurm_job_id))},
  };
}

void add_net(json& j, const rdzv_ev_net& n) {
  j["peer"] = addr_or_null(n.peer);
  j["local"] = addr_or_null(n.local);
  j["size"] = n.size;
  j["timeout_ms"] = n.timeout_ms;
  j["nfds"] = n.nfds;
  j["tcp_state"] = n.tcp_state;
}

void add_resolve(json& j, const rdzv_record& r) {
  const rdzv_ev_resolve& x = r.u.resolve;
  j["host"] = bounded_string(x.host);
  j["service"] = bounded_string(x.service);
  j["family"] = x.family;
  j["socktype"] = x.socktype;
  j["ai_flags"] = x.ai_flags;
  j["naddrs"] = x.naddrs;
  j["first"] = addr_or_null(x.first);
  j["gai_error"] = r.ret != 0 ? json(resolver_error_name(r.op, r.ret)) : json(nullptr);
}

void add_close(json& j, const rdzv_ev_close& c) {
  j["peer"] = addr_or_null(c.peer);
  j["local"] = addr_or_null(c.local);
  j["bytes_sent"] = c.bytes_sent;
  j["bytes_recv"] = c.bytes_recv;
  j["calls_send"] = c.calls_send;
  j["calls_recv"] = c.calls_recv;
  j["open_ns"] = c.open_ns;
  j["tcp_state"] = c.tcp_state;
}

void add_snapshot(json& j, const rdzv_record& r) {
  const rdzv_ev_snapshot& s = r.u.snap;
  j["reason"] = snapshot_reason_name(r.op);
  j["utime_us"] = s.utime_us;
  j["stime_us"] = s.stime_us;
  j["rchar"] = s.rchar;
  j["wchar"] = s.wchar;
  j["read_bytes"] = s.read_bytes;
  j["write_bytes"] = s.write_bytes;
  j["vol_ctxsw"] = s.vol_ctxsw;
  j["invol_ctxsw"] = s.invol_ctxsw;
  j["maxrss_kb"] = s.maxrss_kb;
  j["since_start_ns"] = s.since_start_ns;
}

void add_proc(json& j, const rdzv_ev_proc& p) {
  j["status"] = p.status;
  j["child_pid"] = p.child_pid;
  j["path"] = bounded_string(p.path);
}

// bpf traces written before the RDZV_F_SOCK_ERROR / RDZV_F_RESET_* flags existed named the
// probe of a tcp_state record in net.nfds (1 error report, 2 reset received, 3 reset sent):
// such records are named as if they had the flag, so old and new files dump alike.
unsigned named_flags(const rdzv_file_header& h, const rdzv_record& r) {
  constexpr unsigned kProbeFlags = RDZV_F_SOCK_ERROR | RDZV_F_RESET_RECEIVED | RDZV_F_RESET_SENT;
  if (r.kind != RDZV_EV_TCP_STATE || h.source != RDZV_SOURCE_BPF || (r.flags & kProbeFlags)) return r.flags;
  switch (r.u.net.nfds) {
    case 1:
      return r.flags | RDZV_F_SOCK_ERROR;
    case 2:
      return r.flags | RDZV_F_RESET_RECEIVED;
    case 3:
      return r.flags | RDZV_F_RESET_SENT;
    default:
      return r.flags;
  }
}

// The origin (RDZV_FEAT_ORIGIN), or null for a file without one.
json origin_json(const rdzv_file_header& h) {
  if (!(h.features & RDZV_FEAT_ORIGIN)) return nullptr;
  const rdzv_origin& o = h.origin;
  std::string boot;
  for (std::uint8_t b : o.boot_id) boot += fmt::format("{:02x}", b);
  return json{{"boot_id", boot},
              {"pid_namespace", o.pidns_inode},
              {"net_namespace", o.netns_inode},
              {"ns_pid", o.ns_pid},
              {"host_pid", o.host_pid},
              {"start_ticks", o.start_ticks},
              {"container_id", bounded_string(o.container_id)}};
}

}  // namespace

json header_json(const Trace& trace) {
  const rdzv_file_header& h = trace.header;
  json ports = json::array();
  for (auto p : h.store_ports) {
    if (p != 0) ports.push_back(p);
  }
  return json{
      {"type", "header"},
      {"file", trace.path},
      {"version", h.version},
      {"source", source_name(h.source)},
      {"pid", h.pid},
      {"ppid", h.ppid},
      {"host", bounded_string(h.host)},
      {"exe", bounded_string(h.exe)},
      {"cmdline", bounded_string(h.cmdline)},
      {"start_realtime_ns", h.start_realtime_ns},
      {"start_time", iso8601_utc(static_cast<std::int64_t>(h.start_realtime_ns))},
      {"clock_realtime_ns", h.clock_realtime_ns},
      {"clock_monotonic_ns", h.clock_monotonic_ns},
      {"capacity", h.capacity},
      {"next_slot", h.next_slot},
      {"dropped", h.dropped},
      {"lost", h.lost},
      {"store_ports", std::move(ports)},
      {"exec_generation", h.exec_generation},
      {"features", feature_names(h.features)},
      {"identity", identity_json(h.ident)},
      {"origin", origin_json(h)},
      {"torch_version", (h.features & RDZV_FEAT_TORCH_VERSION) ? json(bounded_string(h.torch_version)) : json(nullptr)},
      // RDZV_FEAT_STORE_RECV: when a receive on a store socket last returned bytes (null: unknown or none)
      {"last_store_recv_ns", (h.features & RDZV_FEAT_STORE_RECV) && h.last_store_recv_ns ? json(h.last_store_recv_ns) : json(nullptr)},
      {"last_store_recv_time", (h.features & RDZV_FEAT_STORE_RECV) && h.last_store_recv_ns
                                   ? json(iso8601_utc(wall_ns(h, h.last_store_recv_ns))) : json(nullptr)},
  };
}

json event_json(const rdzv_file_header& h, const Record& rec) {
  const rdzv_record& r = rec.raw;
  const std::int64_t wall = wall_ns(h, r.ts_ns);
  // Modular difference, then signed: an event may precede the recorded process start.
  const auto since_start =
      static_cast<std::int64_t>(static_cast<std::uint64_t>(wall) - h.start_realtime_ns);
  // A snapshot's op field holds its reason, not a call: it was made by no call.
  const unsigned op = r.kind == RDZV_EV_SNAPSHOT ? unsigned{RDZV_OP_NONE} : r.op;
  json j{
      {"type", "event"},
      {"slot", rec.slot.value},
      {"kind", kind_name(r.kind)},
      {"op", op_name(op)},
      {"flags", flag_names(named_flags(h, r))},
      {"tid", r.tid},
      {"ts_ns", r.ts_ns},
      {"time", iso8601_utc(wall)},
      {"since_start_s", static_cast<double>(since_start) / 1e9},
      {"dur_ns", r.dur_ns},
      {"ret", r.ret},
      {"fd", r.fd},
      {"errno", r.err},
      {"errno_name", r.err != 0 ? json(errno_name(r.err)) : json(nullptr)},
  };
  switch (rdzv_payload_of(r.kind)) {
    case RDZV_PAYLOAD_NET: add_net(j, r.u.net); break;
    case RDZV_PAYLOAD_RESOLVE: add_resolve(j, r); break;
    case RDZV_PAYLOAD_CLOSE: add_close(j, r.u.close); break;
    case RDZV_PAYLOAD_SNAPSHOT: add_snapshot(j, r); break;
    case RDZV_PAYLOAD_PROC: add_proc(j, r.u.proc); break;
    case RDZV_PAYLOAD_NONE: break;  // the reader delivers only known kinds
  }
  return j;
}

std::uint64_t last_clock_ns(const Trace& trace) {
  std::uint64_t last = trace.header.clock_monotonic_ns;
  for (const auto& rec : trace.records) last = std::max(last, rec.raw.ts_ns + rec.raw.dur_ns);
  for (const auto& call : trace.inflight) last = std::max(last, call.start_ns);
  return last;
}

json inflight_json(const Trace& trace, const rdzv_inflight& call) {
  const rdzv_file_header& h = trace.header;
  const std::uint64_t last = last_clock_ns(trace);
  json j{
      {"type", "inflight"},
      {"kind", kind_name(call.kind)},
      {"op", op_name(call.op)},
      {"flags", flag_names(call.flags)},
      {"tid", call.owner},
      {"fd", call.fd},
      {"start_ns", call.start_ns},
      {"time", iso8601_utc(wall_ns(h, call.start_ns))},
      {"age_at_last_clock_s", static_cast<double>(last - call.start_ns) / 1e9},
      {"timeout_ms", (call.has & RDZV_INFLIGHT_HAS_TIMEOUT) ? json(call.timeout_ms) : json(nullptr)},
      {"size", (call.has & RDZV_INFLIGHT_HAS_SIZE) ? json(call.size) : json(nullptr)},
      {"peer", (call.has & RDZV_INFLIGHT_HAS_PEER) ? addr_or_null(call.u.peer) : json(nullptr)},
      {"host", (call.has & RDZV_INFLIGHT_HAS_HOST) ? json(bounded_string(call.u.host))
                                                   : json(nullptr)},
  };
  return j;
}

json summary_json(const Trace& trace) {
  return json{
      {"type", "summary"},
      {"file", trace.path},
      {"records", trace.records.size()},
      {"torn", trace.torn},
      {"invalid", trace.invalid},
      {"dropped", trace.dropped()},
      {"lost", trace.header.lost},
      {"inflight", trace.inflight.size()},
  };
}

std::string json_line(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace rdzvscope
