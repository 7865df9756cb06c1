// One candidate line -> LogEvent: the line's damage undone, the rank prefix, the family (the
// rows of families.cpp, tried in order), the values every line may carry, those of its family.
// Runs only on lines the prefilter picked, so it is written for clarity, not speed.
#include <cerrno>
#include <cstring>
#include <ctime>

#include "classify.h"
#include "families.h"
#include "line_text.h"
#include "logs/log_scan.h"

namespace rdzv::logs {
namespace {

using sv = std::string_view;
using detail::family_row;
using detail::family_rows;
using detail::FamilyRow;
using detail::is_alnum;
using detail::is_digit;
using detail::number_after;
using detail::number_at;
using detail::Scope;
constexpr size_t npos = sv::npos;

// "N" followed by a unit at s[pos...]: "600000ms", "1800s", "60 s", "1801 seconds",
// "60000 ms", "67438 milliseconds", "10 minutes"; or a Python timedelta "0:30:00",
// "1 day, 0:00:00". Result in ms.
std::optional<int64_t> duration_at(sv s, size_t pos) {
  size_t p = pos;
  auto n = number_at(s, p, &p);
  if (!n || *n < 0) return std::nullopt;
  // timedelta: [D day[s], ]H:MM:SS[.ffffff]
  int64_t days = 0;
  if (s.substr(p, 4) == " day") {
    days = *n;
    p += 4;
    if (p < s.size() && s[p] == 's') ++p;
    if (s.substr(p, 2) != ", ") return days * 86400000;
    p += 2;
    n = number_at(s, p, &p);
    if (!n) return days * 86400000;
  }
  if (p < s.size() && s[p] == ':') {
    size_t q = p + 1;
    auto mm = number_at(s, q, &q);
    if (!mm || q >= s.size() || s[q] != ':') return std::nullopt;
    auto ss = number_at(s, q + 1, &q);
    if (!ss) return std::nullopt;
    int64_t ms = ((days * 24 + *n) * 60 + *mm) * 60000 + *ss * 1000;
    if (q < s.size() && s[q] == '.') {  // fraction of a second
      int64_t frac = 0, scale = 1000;
      for (++q; q < s.size() && is_digit(s[q]); ++q) {
        if (scale > 1) { scale /= 10; frac += (s[q] - '0') * scale; }
      }
      ms += frac;
    }
    return ms;
  }
  if (days) return std::nullopt;
  if (p < s.size() && s[p] == ' ') ++p;  // "60000 ms", "1801 seconds"
  sv u = s.substr(p);
  auto unit_end = [&](size_t len) { return len >= u.size() || !is_alnum(u[len]); };
  if ((u.starts_with("ms") && unit_end(2)) || (u.starts_with("milliseconds") && unit_end(12)) ||
      (u.starts_with("millisecond") && unit_end(11)))
    return *n;
  if ((u.starts_with("s") && unit_end(1)) || (u.starts_with("sec") && unit_end(3)) ||
      (u.starts_with("secs") && unit_end(4)) || (u.starts_with("seconds") && unit_end(7)) ||
      (u.starts_with("second") && unit_end(6)))
    return *n * 1000;
  if ((u.starts_with("min") && unit_end(3)) || (u.starts_with("minutes") && unit_end(7)) ||
      (u.starts_with("mins") && unit_end(4)))
    return *n * 60000;
  return std::nullopt;
}

std::optional<int64_t> duration_after(sv s, sv key) {
  for (size_t p = s.find(key); p != npos; p = s.find(key, p + 1)) {
    if (auto v = duration_at(s, p + key.size())) return v;
  }
  return std::nullopt;
}

std::optional<int64_t> find_timeout(sv s) {
  if (auto v = number_after(s, "Timeout(ms)=")) return *v;
  if (auto v = duration_after(s, "timeout=")) return v;
  if (auto v = duration_after(s, "timed out after ")) return v;
  if (auto v = duration_after(s, "Timed out after ")) return v;
  if (auto v = duration_after(s, "Timed out waiting ")) return v;  // gloo: "Timed out waiting 4000ms for ..."
  if (auto v = duration_after(s, "timeout after ")) return v;
  if (auto v = duration_after(s, "timeout was ")) return v;
  if (auto v = duration_after(s, "Timeout was ")) return v;
  if (auto v = duration_after(s, " after ")) return v;
  return std::nullopt;
}

std::optional<int> errno_from_text(sv s) {
  struct M { sv text; int err; };
  static constexpr M kMap[] = {
      {"Broken pipe", EPIPE},
      {"Connection reset by peer", ECONNRESET},
      {"Connection timed out", ETIMEDOUT},
      {"Address already in use", EADDRINUSE},
      {"address already in use", EADDRINUSE},
      {"Connection refused", ECONNREFUSED},
      {"No route to host", EHOSTUNREACH},
      {"Network is unreachable", ENETUNREACH},
      {"Cannot assign requested address", EADDRNOTAVAIL},
  };
  size_t best = npos;
  std::optional<int> err;
  for (const auto& m : kMap) {  // the earliest in the line wins
    const size_t p = s.find(m.text);
    if (p < best) { best = p; err = m.err; }
  }
  return err;
}

std::optional<int> find_errno(sv s) {
  if (auto v = number_after(s, "errno: ")) return static_cast<int>(*v);
  if (auto v = number_after(s, "system error: ")) {  // Windows WSA codes
    switch (*v) {
      case 10048: return EADDRINUSE;
      case 10049: return EADDRNOTAVAIL;
      case 10054: return ECONNRESET;
      case 10060: return ETIMEDOUT;
      case 10061: return ECONNREFUSED;
      case 10065: return EHOSTUNREACH;
      default: break;
    }
  }
  if (auto v = number_after(s, "code: -")) return static_cast<int>(*v);  // libuv: code: -98
  return errno_from_text(s);
}

bool host_char(char c) {
  return is_alnum(c) || c == '.' || c == '-' || c == '_' || c == ':' || c == '%';
}

// "[H]:P" or "H:P" at s[pos...] (the whole token).
bool addr_at(sv s, size_t pos, std::string& host, std::optional<int>& port) {
  if (pos >= s.size()) return false;
  size_t p = pos;
  sv h;
  if (s[p] == '[') {
    const size_t close = s.find(']', p);
    if (close == npos || close + 1 >= s.size() || s[close + 1] != ':') return false;
    h = s.substr(p + 1, close - p - 1);
    p = close + 2;
  } else {
    size_t q = p;
    while (q < s.size() && host_char(s[q])) ++q;
    const size_t colon = s.rfind(':', q);
    if (colon == npos || colon < p || colon + 1 >= q) return false;
    h = s.substr(p, colon - p);
    p = colon + 1;
  }
  size_t after = p;
  auto v = number_at(s, p, &after);
  if (h.empty() || !v || *v < 0 || *v > 65535) return false;
  for (char c : h)
    if (c == ' ' || c == '(' || c == ')' || c == ',') return false;
  host.assign(h);
  port = static_cast<int>(*v);
  return true;
}

void find_host_port(sv s, std::string& host, std::optional<int>& port) {
  // 1. SocketImpl(fd=.., addr=.., remote=[H]:P): the peer.
  if (size_t p = s.find("remote="); p != npos && addr_at(s, p + 7, host, port)) return;
  // 2. "(H, P)"
  for (size_t p = s.find('('); p != npos; p = s.find('(', p + 1)) {
    const size_t comma = s.find(", ", p);
    const size_t close = s.find(')', p);
    if (comma == npos || close == npos || comma > close) continue;
    sv h = s.substr(p + 1, comma - p - 1);
    size_t after = 0;
    auto v = number_at(s, comma + 2, &after);
    if (!v || after != close || h.empty() || *v < 0 || *v > 65535) continue;
    bool ok = true;
    for (char c : h) ok = ok && c != '=' && c != ' ' && c != '(';
    if (!ok) continue;
    host.assign(h);
    port = static_cast<int>(*v);
    return;
  }
  // 3. "host H:P" (TCP client failed to connect/validate to host H:P)
  if (size_t p = s.find("to host "); p != npos && addr_at(s, p + 8, host, port)) return;
  // 4. "to [H]:P" / "to H:P" / "on [H]:P" (connect to, bind to, listen on, server socket on)
  for (sv key : {sv("to "), sv("on ")}) {
    for (size_t p = s.find(key); p != npos; p = s.find(key, p + 1)) {
      if (p > 0 && is_alnum(s[p - 1])) continue;
      if (addr_at(s, p + key.size(), host, port)) return;
    }
  }
  // 5. any " [H]:P"
  for (size_t p = s.find(" ["); p != npos; p = s.find(" [", p + 1)) {
    if (addr_at(s, p + 1, host, port)) return;
  }
  // 6. libuv "port: P"; "The server socket on P has failed to bind"
  if (auto v = number_after(s, "port: ")) {
    if (*v >= 0 && *v <= 65535) port = static_cast<int>(*v);
  }
}

// The reason that starts at s[from]: the rest of the line, without the spaces and dots that
// end it, cut to 200 bytes.
std::string reason_at(sv s, size_t from) {
  if (from >= s.size()) return {};
  sv r = s.substr(from);
  while (!r.empty() && (r.back() == ' ' || r.back() == '.' || r.back() == '\t')) r.remove_suffix(1);
  return std::string(r.substr(0, 200));
}

// A host name as a log prefix writes it: a letter, then letters, digits, '.', '-', '_'; not a
// log level ("INFO:3: ..."), a source file ("train.py:12: UserWarning") or an exception type.
bool is_host_word(sv w) {
  if (w.empty() || w.size() > 64 || is_digit(w[0]) || !is_alnum(w[0])) return false;
  for (char c : w)
    if (!is_alnum(c) && c != '.' && c != '-' && c != '_') return false;
  for (sv tail : {sv(".py"), sv(".pyx"), sv(".c"), sv(".cc"), sv(".cpp"), sv(".cu"), sv(".h"), sv(".hpp"),
                  sv(".sh"), sv("Error"), sv("Exception"), sv("Warning")})
    if (w.ends_with(tail)) return false;
  std::string upper(w);
  for (auto& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  for (sv level : {sv("INFO"), sv("WARNING"), sv("WARN"), sv("ERROR"), sv("DEBUG"), sv("CRITICAL"), sv("FATAL"),
                   sv("TRACE"), sv("NOTICE"), sv("E"), sv("W"), sv("I"), sv("F"), sv("D")})
    if (upper == level) return false;
  return true;
}

// kubectl logs --prefix: "[pod/NAME/CONTAINER] " at body[p]: the pod NAME, and *after past the
// space; "" when there is none.
sv kubectl_pod_at(sv body, size_t p, size_t* after) {
  if (!body.substr(p).starts_with("[pod/")) return {};
  const size_t name = p + 5;
  const size_t slash = body.find('/', name);
  const size_t close = body.find(']', name);
  if (slash == npos || close == npos || slash >= close || slash == name || close + 1 >= body.size() ||
      body[close + 1] != ' ')
    return {};
  *after = close + 2;
  return body.substr(name, slash - name);
}

// "HOST:N:" or "HOST: N: " at body[p] (pdsh/clush over srun -l, or a tool's host:rank
// prefix): the rank, *host and *after past the prefix (and one space); -1 when there is none.
int host_rank_at(sv body, size_t p, sv* host, size_t* after) {
  const size_t colon = body.find(':', p);
  if (colon == npos || !is_host_word(body.substr(p, colon - p))) return -1;
  size_t q = colon + 1;
  if (q < body.size() && body[q] == ' ') ++q;
  size_t end = 0;
  auto v = number_at(body, q, &end);
  if (!v || *v < 0 || end - q > 6 || end >= body.size() || body[end] != ':') return -1;
  *host = body.substr(p, colon - p);
  *after = end + 1 < body.size() && body[end + 1] == ' ' ? end + 2 : end + 1;
  return static_cast<int>(*v);
}

// One rank prefix found at body[p]: the rank it names (-1 for kubectl's, which names none),
// the host or pod it names, and where the text after it starts.
struct RankPrefix {
  int rank = -1;
  std::optional<sv> origin;
  size_t after = 0;
};

// kubectl's "[pod/NAME/CONTAINER] ": no rank, the pod is the origin.
std::optional<RankPrefix> kubectl_prefix_at(sv body, size_t p) {
  size_t after = 0;
  const sv pod = kubectl_pod_at(body, p, &after);
  if (pod.empty()) return std::nullopt;
  return RankPrefix{-1, pod, after};
}

std::optional<RankPrefix> host_rank_prefix_at(sv body, size_t p) {
  sv host;
  size_t after = 0;
  const int r = host_rank_at(body, p, &host, &after);
  if (r < 0) return std::nullopt;
  return RankPrefix{r, host, after};
}

// torchx's "trainer/0 [1]:": a role/replica word before the "[N]:" prefix.
std::optional<RankPrefix> torchx_prefix_at(sv body, size_t p) {
  if (p >= body.size() || body[p] == '[') return std::nullopt;
  const size_t sp = body.find(' ', p);
  const sv word = body.substr(p, sp == npos ? npos : sp - p);
  if (sp == npos || word.find('/') == npos || word.find('[') != npos ||
      !body.substr(sp + 1).starts_with("["))
    return std::nullopt;
  size_t after = 0;
  auto v = number_at(body, sp + 2, &after);
  if (!v || *v < 0 || !body.substr(after).starts_with("]:")) return std::nullopt;
  return RankPrefix{static_cast<int>(*v), std::nullopt, after + 2};
}

// "[host:N]" (pdsh/clush-style merged output) followed by ':' or a space.
std::optional<RankPrefix> bracketed_host_rank_at(sv body, size_t p) {
  if (p >= body.size() || body[p] != '[') return std::nullopt;
  const size_t close = body.find(']', p);
  const size_t colon = body.find(':', p);
  if (close == npos || colon == npos || colon <= p + 1 || colon >= close) return std::nullopt;
  bool host_ok = true;
  for (size_t k = p + 1; k < colon && host_ok; ++k)
    host_ok = is_alnum(body[k]) || body[k] == '.' || body[k] == '-' || body[k] == '_';
  size_t after = 0;
  auto v = number_at(body, colon + 1, &after);
  if (!host_ok || !v || *v < 0 || after != close || close + 1 >= body.size() ||
      (body[close + 1] != ':' && body[close + 1] != ' '))
    return std::nullopt;
  return RankPrefix{static_cast<int>(*v), body.substr(p + 1, colon - p - 1), close + 2};
}

// "[rank3]:", "[default3]:", "[3]:", "[Rank3]:", "[local_rank3]:", with optional
// "<stdout>"/"<stderr>" before the colon; and "[rank3] " (a script's own prefix, as the
// project's e2e ranks and many training scripts print it): followed by a space only with the
// word rank, since a bare "[3] " is as often a count or a device index; body[p] is '['.
std::optional<RankPrefix> bracketed_rank_at(sv body, size_t p) {
  size_t q = p + 1;
  sv named;
  for (sv word : {sv("rank"), sv("default"), sv("Rank"), sv("local_rank")}) {
    if (body.substr(q).starts_with(word)) {
      q += word.size();
      named = word;
      break;
    }
  }
  size_t after = 0;
  auto v = number_at(body, q, &after);
  if (!v || after >= body.size() || body[after] != ']' || *v < 0) return std::nullopt;
  size_t r = after + 1;
  for (sv tag : {sv("<stdout>"), sv("<stderr>")})
    if (body.substr(r).starts_with(tag)) r += tag.size();
  if (r < body.size() && body[r] == ':') return RankPrefix{static_cast<int>(*v), std::nullopt, r + 1};
  const bool rank_word = named == "rank" || named == "Rank";
  if (rank_word && r == after + 1 && r < body.size() && body[r] == ' ')
    return RankPrefix{static_cast<int>(*v), std::nullopt, r + 1};
  return std::nullopt;
}

// srun -l's "  3: ".
std::optional<RankPrefix> srun_rank_at(sv body, size_t p) {
  size_t after = 0;
  auto v = number_at(body, p, &after);
  if (!v || *v < 0 || after - p > 6 || after + 1 >= body.size() || body[after] != ':' ||
      body[after + 1] != ' ')
    return std::nullopt;
  return RankPrefix{static_cast<int>(*v), std::nullopt, after + 2};
}

// The first prefix form that matches at body[p]. A '[' that is neither "[host:N]" nor a
// "[rankN]:" form ends the prefixes: it is the message's own text.
std::optional<RankPrefix> rank_prefix_at(sv body, size_t p, bool first_round) {
  if (auto m = kubectl_prefix_at(body, p)) return m;
  if (auto m = host_rank_prefix_at(body, p)) return m;
  if (first_round) {
    if (auto m = torchx_prefix_at(body, p)) return m;
  }
  if (auto m = bracketed_host_rank_at(body, p)) return m;
  if (p < body.size() && body[p] == '[') return bracketed_rank_at(body, p);
  return srun_rank_at(body, p);
}

// Rank prefixes at the start of a line: "[rank3]:", "[default3]:", "[3]:", "[Rank3]:", with
// optional "<stdout>"/"<stderr>" before the colon, srun -l's "  3: ", "[host:3]", "host:3:",
// torchx's "role/0 [3]:", and kubectl's "[pod/NAME/CONTAINER] " (no rank: the pod is the
// origin). Returns the rank, sets *origin to the host or pod a prefix names (when not null)
// and advances `body` past every prefix.
int strip_rank_prefix(sv& body, std::string* origin = nullptr) {
  int rank = -1;
  for (int round = 0; round < 4; ++round) {
    size_t p = 0;
    while (p < body.size() && body[p] == ' ') ++p;
    const auto prefix = rank_prefix_at(body, p, round == 0);
    if (!prefix) break;
    if (origin && prefix->origin) origin->assign(*prefix->origin);
    if (prefix->rank >= 0) rank = prefix->rank;
    body.remove_prefix(prefix->after);
  }
  return rank;
}

int rank_in_text(sv s) {
  if (auto v = number_after(s, "rank: "); v && *v >= 0) return static_cast<int>(*v);
  for (size_t p = s.find("Rank "); p != npos; p = s.find("Rank ", p + 1)) {
    size_t after = 0;
    auto v = number_at(s, p + 5, &after);
    if (v && *v >= 0 && after < s.size() && s[after] == ']') return static_cast<int>(*v);
    // monitored_barrier's "Rank 3 successfully reached monitoredBarrier": the line's own rank.
    if (v && *v >= 0 && s.substr(after).starts_with(" successfully reached")) return static_cast<int>(*v);
  }
  if (size_t p = s.find("] is setting up NCCL communicator"); p != npos) {
    size_t b = s.rfind('[', p);
    size_t after = 0;
    if (b != npos) {
      auto v = number_at(s, b + 1, &after);
      if (v && *v >= 0 && after == p) return static_cast<int>(*v);
    }
  }
  return -1;
}

int two(sv s, size_t p) {
  if (p + 2 > s.size() || !is_digit(s[p]) || !is_digit(s[p + 1])) return -1;
  return (s[p] - '0') * 10 + (s[p + 1] - '0');
}

double frac_at(sv s, size_t& p) {
  double f = 0, scale = 0.1;
  if (p < s.size() && (s[p] == '.' || s[p] == ',')) {
    for (++p; p < s.size() && is_digit(s[p]); ++p, scale /= 10) f += (s[p] - '0') * scale;
  }
  return f;
}

std::optional<double> local_time(int y, int mo, int d, int h, int mi, int se, double frac) {
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = se;
  tm.tm_isdst = -1;
  const time_t t = std::mktime(&tm);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return static_cast<double>(t) + frac;
}

// The stamp at the start of body (after an optional '['): glog "W1129 23:19:18.123456" or ISO
// "2026-11-29 23:19:18,123" / "2026-11-29T23:19:18.5Z" / "...+02:00".
std::optional<double> find_wall_time(sv body, const TimeContext& tc) {
  size_t p = 0;
  while (p < body.size() && body[p] == ' ') ++p;
  if (p < body.size() && body[p] == '[') ++p;
  sv s = body.substr(p);
  if (s.size() >= 14 && (s[0] == 'I' || s[0] == 'W' || s[0] == 'E' || s[0] == 'F')) {
    const int mo = two(s, 1), d = two(s, 3), h = two(s, 6), mi = two(s, 9), se = two(s, 12);
    if (mo < 0 || d < 0 || h < 0 || mi < 0 || se < 0 || s[5] != ' ' || s[8] != ':' || s[11] != ':')
      return std::nullopt;
    if (tc.year <= 0) return std::nullopt;
    // The file was written after its lines: a month later than the file's is last year's.
    const int year = (tc.month > 0 && mo > tc.month) ? tc.year - 1 : tc.year;
    size_t q = 14;
    const double f = frac_at(s, q);
    return local_time(year, mo, d, h, mi, se, f);
  }
  if (s.size() >= 19 && s[4] == '-' && s[7] == '-' && (s[10] == ' ' || s[10] == 'T') &&
      s[13] == ':' && s[16] == ':') {
    const int y1 = two(s, 0), y2 = two(s, 2), mo = two(s, 5), d = two(s, 8), h = two(s, 11),
              mi = two(s, 14), se = two(s, 17);
    if (y1 < 0 || y2 < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || se < 0) return std::nullopt;
    size_t q = 19;
    const double f = frac_at(s, q);
    const int year = y1 * 100 + y2;
    if (q < s.size() && (s[q] == 'Z' || ((s[q] == '+' || s[q] == '-') && two(s, q + 1) >= 0))) {
      int off = 0;
      if (s[q] != 'Z') {
        const int oh = two(s, q + 1);
        size_t r = q + 3;
        if (r < s.size() && s[r] == ':') ++r;
        const int om = two(s, r) < 0 ? 0 : two(s, r);
        off = (s[q] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
      }
      std::tm tm{};
      tm.tm_year = year - 1900;
      tm.tm_mon = mo - 1;
      tm.tm_mday = d;
      tm.tm_hour = h;
      tm.tm_min = mi;
      tm.tm_sec = se;
      const time_t t = timegm(&tm);
      if (t == static_cast<time_t>(-1)) return std::nullopt;
      return static_cast<double>(t) - off + f;
    }
    return local_time(year, mo, d, h, mi, se, f);
  }
  return std::nullopt;
}

// Replaces what is not printable UTF-8 text (control bytes, broken sequences) with '?' and
// drops ANSI colour sequences, so the text can go into JSON; cuts to `limit` bytes on a
// character boundary.
std::string clean_text(sv s, size_t limit) {
  std::string out;
  out.reserve(std::min(s.size(), limit));
  size_t i = 0;
  while (i < s.size() && out.size() < limit) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b && i + 1 < s.size() && s[i + 1] == '[') {  // CSI ... final byte
      size_t j = i + 2;
      while (j < s.size() && static_cast<unsigned char>(s[j]) >= 0x20 &&
             static_cast<unsigned char>(s[j]) < 0x40) ++j;
      i = j < s.size() ? j + 1 : j;
      continue;
    }
    if (c < 0x80) {
      out.push_back((c < 0x20 && c != '\t') || c == 0x7f ? '?' : static_cast<char>(c));
      ++i;
      continue;
    }
    size_t len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    if (c >= 0xf5) len = 0;
    bool ok = len != 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && len == 3) {  // no overlongs, no surrogates
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);
    }
    if (ok && len == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (!ok) {
      out.push_back('?');
      ++i;
      continue;
    }
    if (out.size() + len > limit) break;
    out.append(s.substr(i, len));
    i += len;
  }
  return out;
}

// The JSON string whose body starts at s[q] (just past its opening quote), unescaped as far as
// a log line needs: "\n", "\t" and "\r" become spaces, "\uXXXX" a '?'.
std::string json_string_from(sv s, size_t q) {
  std::string r;
  for (; q < s.size() && s[q] != '"'; ++q) {
    if (s[q] != '\\' || q + 1 >= s.size()) {
      r.push_back(s[q]);
      continue;
    }
    const char e = s[++q];
    if (e == 'n' || e == 't' || e == 'r')
      r.push_back(' ');
    else if (e == 'u' && q + 4 < s.size()) {
      r.push_back('?');
      q += 4;
    } else {
      r.push_back(e);  // \" \\ \/
    }
  }
  return r;
}

// The message of a JSON-lines record from a log collector ({"log": "...", ...} / "message" /
// "msg" / "MESSAGE"); empty when `s` is no such record.
std::string json_log_message(sv s) {
  size_t p = 0;
  while (p < s.size() && s[p] == ' ') ++p;
  if (p >= s.size() || s[p] != '{') return {};
  for (sv key : {sv("\"log\":"), sv("\"message\":"), sv("\"msg\":"), sv("\"MESSAGE\":")}) {
    size_t k = s.find(key);
    if (k == npos) continue;
    size_t q = k + key.size();
    while (q < s.size() && s[q] == ' ') ++q;
    if (q >= s.size() || s[q] != '"') continue;
    return json_string_from(s, q + 1);
  }
  return {};
}

// Where the ANSI CSI sequence (ESC '[' ... final byte) at s[i] ends; npos when none starts there.
size_t ansi_sequence_end(sv s, size_t i) {
  if (s[i] != 0x1b || i + 1 >= s.size() || s[i + 1] != '[') return npos;
  size_t j = i + 2;
  while (j < s.size() && static_cast<unsigned char>(s[j]) >= 0x20 &&
         static_cast<unsigned char>(s[j]) < 0x40)
    ++j;
  return j < s.size() ? j + 1 : j;
}

// Where the "[0m" / "[1;31m" remnant at s[i] ends: what a paste leaves of a colour sequence
// once the ESC byte is lost. npos when none starts there.
size_t colour_remnant_end(sv s, size_t i) {
  if (s[i] != '[' || i + 2 >= s.size() || !is_digit(s[i + 1])) return npos;
  size_t j = i + 1;
  while (j < s.size() && j - i < 9 && (is_digit(s[j]) || s[j] == ';')) ++j;
  if (j < s.size() && s[j] == 'm' && (j + 1 == s.size() || !is_alnum(s[j + 1]))) return j + 1;
  return npos;
}

// `s` without its ANSI colour sequences and their remnants; sets *dropped when there were any.
std::string without_colour_codes(sv s, bool* dropped) {
  std::string r;
  r.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t end = ansi_sequence_end(s, i);
    if (end == npos) end = colour_remnant_end(s, i);
    if (end != npos) {
      i = end;
      *dropped = true;
      continue;
    }
    r.push_back(s[i++]);
  }
  return r;
}

// What pasting and log pipelines do to a line, undone: a JSON-lines record from a log collector
// ({"log": "...", ...} / "message" / "msg") becomes its message; ANSI colour sequences, and the
// "[0m" remnants a paste leaves of them once the ESC byte is lost, are dropped; a trailing '\r'
// goes. Returns false when nothing changed (then `out` is untouched).
bool normalize(sv line, std::string& out) {
  sv s = line;
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  const std::string json_msg = json_log_message(s);
  if (!json_msg.empty()) s = json_msg;
  bool changed = !json_msg.empty() || s.size() != line.size();
  std::string r = without_colour_codes(s, &changed);
  if (!changed) return false;
  out = std::move(r);
  return true;
}

// Hard wraps: a message broken inside a word by a run of spaces ("failed to conn      ect to").
// `collapse`: runs of 2+ spaces become one; else they are removed. Leading spaces stay.
std::string unwrap(sv s, bool collapse) {
  std::string r;
  size_t p = 0;
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) r.push_back(s[p++]);
  for (size_t i = p; i < s.size();) {
    if (s[i] == ' ' || s[i] == '\t') {
      size_t j = i;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      if (j - i >= 2 && j < s.size()) {
        if (collapse) r.push_back(' ');
      } else {
        r.append(s.substr(i, j - i));
      }
      i = j;
      continue;
    }
    r.push_back(s[i++]);
  }
  return r;
}

bool has_inner_space_run(sv s) {
  size_t p = s.find_first_not_of(" \t");
  if (p == npos) return false;
  const size_t q = s.find("  ", p);
  return q != npos && s.find_first_not_of(" \t", q) != npos;
}

// Adds family `f` to the event: the first family found is the event's, the others its `also`.
void add_family(Family f, bool& found, LogEvent& ev) {
  if (!found)
    ev.family = f;
  else
    ev.also |= std::uint64_t{1} << static_cast<int>(f);
  found = true;
}

// The families of `body`, the rows tried scope by scope in the table's order (families.h says
// what each scope means). Setting rows are left to classify_body.
bool detect(sv body, LogEvent& ev) {
  for (const FamilyRow& row : family_rows(Scope::Alone)) {
    if (row.matches(body)) {
      ev.family = row.family;
      return true;
    }
  }
  bool found = false;
  for (const FamilyRow& row : family_rows(Scope::Ranked))
    if (row.matches(body)) add_family(row.family, found, ev);
  for (const FamilyRow& row : family_rows(Scope::Fallback))
    if (!found && row.matches(body)) add_family(row.family, found, ev);
  for (const FamilyRow& row : family_rows(Scope::Error))
    if (row.matches(body)) add_family(row.family, found, ev);
  return found;
}

// A line that no other family matched, even unwrapped, may still state a launch setting.
bool detect_setting(sv body, LogEvent& ev) {
  for (const FamilyRow& row : family_rows(Scope::Setting)) {
    if (row.matches(body)) {
      ev.family = row.family;
      return true;
    }
  }
  return false;
}

// The families of `body` (see detect). A hard-wrapped line is tried with its inner runs of
// spaces collapsed, then removed, when that finds a family the line as it is did not (an error
// line alone is no better); then `body` views the unwrapped text, kept in `unwrapped`.
bool detect_unwrapping(sv& body, std::string& unwrapped, LogEvent& ev) {
  bool found = detect(body, ev);
  if ((found && ev.family != Family::ErrorLine) || !has_inner_space_run(body)) return found;
  for (bool collapse : {true, false}) {
    std::string u = unwrap(body, collapse);
    LogEvent e2;
    if (detect(u, e2) && e2.family != Family::ErrorLine) {
      unwrapped = std::move(u);
      body = unwrapped;
      ev = e2;
      return true;
    }
  }
  return found;
}

// The values any family's line may carry: timeout, errno, getaddrinfo code, host:port, time.
void find_common_values(sv body, const TimeContext& tc, LogEvent& ev) {
  ev.timeout_ms = find_timeout(body);
  ev.err = find_errno(body);
  if (auto g = number_after(body, "gai error: ")) ev.gai_code = static_cast<int>(*g);
  find_host_port(body, ev.host, ev.port);
  ev.wall_time = find_wall_time(body, tc);
}

// The values only the line's own family carries (its row): the reason after the row's key,
// and the row's own values.
void find_family_values(sv body, LogEvent& ev) {
  const FamilyRow& row = family_row(ev.family);
  for (sv key : row.reason_after) {
    if (key.empty()) break;
    if (size_t p = body.find(key); p != npos) {
      ev.reason = reason_at(body, p + key.size());
      break;
    }
  }
  if (row.values) row.values(body, ev);
}

}  // namespace

std::optional<LogEvent> classify_body(sv line, int default_rank, const TimeContext& tc) {
  std::string normalized;
  sv body = normalize(line, normalized) ? sv(normalized) : line;
  std::string origin;
  const int prefix_rank = strip_rank_prefix(body, &origin);
  LogEvent ev;
  std::string unwrapped;
  const bool found = detect_unwrapping(body, unwrapped, ev);
  if (!found && !detect_setting(body, ev)) return std::nullopt;

  const int text_rank = rank_in_text(body);
  ev.rank = prefix_rank >= 0 ? prefix_rank : text_rank >= 0 ? text_rank : default_rank;
  ev.text = clean_text(body, 500);
  ev.origin = std::move(origin);
  find_common_values(body, tc, ev);
  find_family_values(body, ev);
  return ev;
}

int line_prefix_rank(sv s) { return strip_rank_prefix(s); }

std::string version_in_line(sv s) {
  for (size_t p = 0; p + 5 <= s.size(); ++p) {
    // case-insensitive "torch", not inside another word except "py" before it
    bool m = true;
    for (size_t k = 0; k < 5 && m; ++k) m = (s[p + k] | 0x20) == "torch"[k];
    if (!m) continue;
    if (p > 0 && is_alnum(s[p - 1])) {
      const bool py = p >= 2 && (s[p - 2] | 0x20) == 'p' && (s[p - 1] | 0x20) == 'y' &&
                      (p == 2 || !is_alnum(s[p - 3]));
      if (!py) continue;
    }
    size_t q = p + 5;
    for (sv tail : {sv(".__version__"), sv(" version"), sv(" Version"), sv("_version")}) {
      if (s.substr(q).starts_with(tail)) { q += tail.size(); break; }
    }
    if (q < s.size() && is_alnum(s[q])) continue;  // torchvision, torchrun, ...
    size_t seps = 0;
    while (q < s.size() && seps < 4 &&
           (s[q] == ' ' || s[q] == ':' || s[q] == '=' || s[q] == '\t' || s[q] == '-' ||
            s[q] == '"' || s[q] == '\'' || s[q] == '(')) {
      ++q;
      ++seps;
    }
    if (seps == 0) continue;
    if (q < s.size() && s[q] == 'v') ++q;
    // MAJOR.MINOR[...]
    size_t r = q;
    while (r < s.size() && is_digit(s[r])) ++r;
    if (r == q || r - q > 2 || r >= s.size() || s[r] != '.' || r + 1 >= s.size() || !is_digit(s[r + 1]))
      continue;
    size_t e = r;
    while (e < s.size() && (is_alnum(s[e]) || s[e] == '.' || s[e] == '+' || s[e] == '_')) ++e;
    sv v = s.substr(q, e - q);
    while (!v.empty() && v.back() == '.') v.remove_suffix(1);
    return std::string(v);
  }
  return {};
}

std::optional<LogEvent> classify_line(std::string_view line, int default_rank, int year) {
  TimeContext tc;
  tc.year = year;
  return classify_body(line, default_rank, tc);
}

}  // namespace rdzv::logs
