#include "flight_recorder.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "file_tree.h"
#include "pickle.h"

namespace rdzvscope {

namespace {

// A dump holds at most TORCH_FR_BUFFER_SIZE entries (2000 by default), each a few hundred
// bytes, more with stack frames; a file far larger is no dump of ours.
constexpr std::size_t kMaxDumpBytes = 256u << 20;

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::optional<std::int64_t> int_at(const pickle::Value& d, std::string_view key) {
  const pickle::Value* v = d.get(key);
  if (!v) return std::nullopt;
  if (const auto* i = v->as_int()) return *i;
  if (const auto* b = v->as_bool()) return *b ? 1 : 0;
  // The JSON dump and pg_status write numbers as text ("3"); so may a re-pickled one.
  if (const auto* s = v->as_str()) {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(s->c_str(), &end, 10);
    if (!s->empty() && *end == '\0' && errno == 0) return n;
  }
  return std::nullopt;
}

std::string str_at(const pickle::Value& d, std::string_view key) {
  const pickle::Value* v = d.get(key);
  const std::string* s = v ? v->as_str() : nullptr;
  return s ? *s : std::string();
}

bool bool_at(const pickle::Value& d, std::string_view key) {
  const pickle::Value* v = d.get(key);
  const bool* b = v ? v->as_bool() : nullptr;
  return b && *b;
}

// "[0, 1, 2, 3]": pg_config writes a group's ranks as the text of a list.
std::vector<int> ranks_in_text(const std::string& s) {
  std::vector<int> out;
  long long n = -1;
  for (char ch : s) {
    if (ch >= '0' && ch <= '9') {
      n = (n < 0 ? 0 : n * 10) + (ch - '0');
      if (n > 1'000'000'000) return {};
    } else if (n >= 0) {
      out.push_back(static_cast<int>(n));
      n = -1;
    }
  }
  if (n >= 0) out.push_back(static_cast<int>(n));
  return out;
}

Result<FrEntry> entry_of(const pickle::Value& e, std::size_t i, const std::string& path) {
  if (!e.as_dict()) return Error{path, fmt::format("entry {} is not a dict", i), std::nullopt};
  FrEntry out;
  const auto seq = int_at(e, "collective_seq_id");
  const std::string name = str_at(e, "profiling_name");
  if (!seq || name.empty())
    return Error{path, fmt::format("entry {} has no collective_seq_id or profiling_name", i), std::nullopt};
  out.collective_seq_id = *seq;
  out.p2p_seq_id = int_at(e, "p2p_seq_id").value_or(0);
  out.op_id = int_at(e, "op_id").value_or(0);
  out.is_p2p = bool_at(e, "is_p2p");
  const auto colon = name.find(':');
  out.backend = colon == std::string::npos ? "" : name.substr(0, colon);
  out.op = colon == std::string::npos ? name : name.substr(colon + 1);
  out.state = str_at(e, "state");
  if (const pickle::Value* pg = e.get("process_group"); pg && pg->as_list() && pg->as_list()->size() == 2) {
    const auto& l = *pg->as_list();
    if (l[0].as_str()) out.pg_name = *l[0].as_str();
    if (l[1].as_str()) out.pg_desc = *l[1].as_str();
  }
  if (out.pg_name.empty()) out.pg_name = std::to_string(int_at(e, "pg_id").value_or(0));
  out.time_created_ns = int_at(e, "time_created_ns");
  out.timeout_ms = int_at(e, "timeout_ms");
  out.retired = bool_at(e, "retired");
  return out;
}

void read_pg_config(const pickle::Value& root, FrDump& d) {
  const pickle::Value* cfg = root.get("pg_config");
  if (!cfg || !cfg->as_dict()) return;
  for (const auto& [name, g] : *cfg->as_dict()) d.pg_ranks[name] = ranks_in_text(str_at(g, "ranks"));
}

void read_pg_status(const pickle::Value& root, FrDump& d) {
  const pickle::Value* st = root.get("pg_status");
  if (!st || !st->as_dict()) return;
  for (const auto& [pg_id, s] : *st->as_dict())
    if (const auto n = int_at(s, "last_enqueued_collective")) d.last_enqueued[pg_id] = *n;
}

Result<std::string> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path, std::string("cannot open: ") + std::strerror(errno), std::nullopt};
  std::string bytes;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    bytes.append(buf, static_cast<std::size_t>(in.gcount()));
    if (bytes.size() > kMaxDumpBytes)
      return Error{path, fmt::format("larger than {} MiB: not a Flight Recorder dump", kMaxDumpBytes >> 20), std::nullopt};
  }
  if (in.bad()) return Error{path, "read error", std::nullopt};
  return bytes;
}

bool opens_a_pickle(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  return in.get(c) && static_cast<unsigned char>(c) == 0x80;
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::optional<int> rank_of_dump_name(const std::string& file_name) {
  const std::string b = base_name(file_name);
  std::size_t i = b.size();
  while (i > 0 && b[i - 1] >= '0' && b[i - 1] <= '9') --i;
  if (i == b.size() || b.size() - i > 9) return std::nullopt;
  return std::stoi(b.substr(i));
}

bool is_default_dump_name(const std::string& file_name) {
  const std::string b = base_name(file_name);
  constexpr std::string_view kPrefix = "nccl_trace_rank_";
  return b.size() > kPrefix.size() && b.compare(0, kPrefix.size(), kPrefix) == 0 && rank_of_dump_name(b);
}

Result<FrDump> decode_flight_recorder_dump(std::string_view bytes, const std::string& path, int rank) {
  auto root = pickle::decode(bytes, path);
  if (!root) return root.error();
  const pickle::Value& r = root.value();
  const pickle::Value* entries = r.get("entries");
  if (!r.as_dict() || !r.get("version") || (entries && !entries->as_list()))
    return Error{path, "a pickle, but not a Flight Recorder dump (no dict with version and entries)", std::nullopt};
  FrDump d;
  d.path = path;
  d.rank = rank;
  d.version = str_at(r, "version");
  read_pg_config(r, d);
  read_pg_status(r, d);
  if (entries)
    for (std::size_t i = 0; i < entries->as_list()->size(); ++i) {
      auto e = entry_of((*entries->as_list())[i], i, path);
      if (!e) return e.error();
      d.entries.push_back(std::move(e.value()));
    }
  return d;
}

Result<FrDump> read_flight_recorder_dump(const std::string& path, std::optional<int> rank) {
  const auto r = rank_of_dump_name(path) ? rank_of_dump_name(path) : rank;
  if (!r)
    return Error{path, "a Flight Recorder dump's name ends in its rank (<prefix><rank>, as TORCH_FR_DUMP_TEMP_FILE "
                       "names it); this one does not", std::nullopt};
  auto bytes = slurp(path);
  if (!bytes) return bytes.error();
  return decode_flight_recorder_dump(bytes.value(), path, *r);
}

FrInputs load_flight_recorder(const std::vector<std::string>& paths, const std::vector<std::string>& trace_dirs) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    if (!is_dir(p)) {
      files.push_back(p);
      continue;
    }
    std::vector<std::string> below;
    files_below(p, [](const std::string& n, unsigned char t) { return t != DT_DIR && rank_of_dump_name(n); }, below);
    for (const auto& f : below)
      if (opens_a_pickle(f)) files.push_back(f);
  }
  for (const std::string& dir : trace_dirs)
    if (is_dir(dir)) files_below(dir, [](const std::string& n, unsigned char t) { return t != DT_DIR && is_default_dump_name(n); }, files);

  FrInputs in;
  std::set<std::string> seen_paths;
  std::map<int, std::string> by_rank;
  for (const std::string& f : files) {
    if (!seen_paths.insert(f).second) continue;
    auto d = read_flight_recorder_dump(f);
    if (!d) {
      in.errors.push_back(d.error());
      continue;
    }
    const auto [it, fresh] = by_rank.emplace(d.value().rank, f);
    if (!fresh) {
      in.errors.push_back(Error{f, fmt::format("a second dump of rank {} (the first: {}); this one is left out",
                                               d.value().rank, it->second), std::nullopt});
      continue;
    }
    in.dumps.push_back(std::move(d.value()));
  }
  std::sort(in.dumps.begin(), in.dumps.end(), [](const FrDump& a, const FrDump& b) { return a.rank < b.rank; });
  return in;
}

}  // namespace rdzvscope
