// Where logs come from (issue 13's input side): gzip logs (whole, multi-member, truncated,
// corrupt), standard input, `--log DIR` (recursion, order, depth, binary files, errors), the
// per-task file names of Slurm and torchrun, and the host:rank / kubectl line prefixes.
#include <catch2/catch.hpp>

#include "log_test_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "logs/log_scan.h"
#include "logs/log_source.h"

using namespace rdzv::logs;

namespace {

using TempDir = rdzv::logs::test::LogDir;

// One gzip member holding `text`.
std::string gzip_of(const std::string& text) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

const std::string kFiller = "2026-11-29 10:00:00,000 INFO train.py:10 step 100 loss=2.3456 lr=1e-4\n";
const std::string kBrokenPipe =
    "[W1129 10:00:01.000000 77 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=81, "
    "addr=[node1]:50612, remote=[node0]:29500): Broken pipe\n";

// Many filler lines with a Broken pipe line at the start and one near the end.
std::string two_errors_log() {
  std::string s = kBrokenPipe;
  for (int i = 0; i < 20000; ++i) s += kFiller;
  s += kBrokenPipe;
  return s;
}

// Runs f with standard input read from `path`, then puts standard input back.
template <typename F>
void with_stdin_from(const std::string& path, F f) {
  const int saved = ::dup(STDIN_FILENO);
  REQUIRE(saved >= 0);
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::dup2(fd, STDIN_FILENO) == STDIN_FILENO);
  ::close(fd);
  f();
  REQUIRE(::dup2(saved, STDIN_FILENO) == STDIN_FILENO);
  ::close(saved);
}

}  // namespace

TEST_CASE("gzip: a .gz log gives the events, lines and ranks of the plain one", "[sources]") {
  TempDir d;
  const std::string text = two_errors_log();
  const std::string plain = d.write("rank2.log", text);
  const std::string gz = d.write("rank2.log.gz", gzip_of(text));
  auto a = scan_log(plain), b = scan_log(gz, -1, ScanOptions{.buffer_size = 4096});
  INFO((b ? "" : b.error().message));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(b->lines == a->lines);
  CHECK(b->bytes == text.size());
  REQUIRE(b->events.size() == 2);
  CHECK(b->events[1].line == a->events[1].line);
  CHECK(b->events[1].has(Family::BrokenPipe));
  CHECK(b->events[1].rank == 2);  // "rank2.log.gz": the .gz does not hide the rank
  CHECK(b->events[1].file == gz);
}

TEST_CASE("gzip: concatenated members are one log, told by content, not by name", "[sources]") {
  TempDir d;
  const std::string f = d.write("job.out", gzip_of(kFiller + kBrokenPipe) + gzip_of(kFiller + kBrokenPipe));
  auto r = scan_log(f);
  INFO((r ? "" : r.error().message));
  REQUIRE(r.ok());
  CHECK(r->lines == 4);
  REQUIRE(r->events.size() == 2);
  CHECK(r->events[1].line == 4);
}

TEST_CASE("gzip: a truncated .gz is an error naming it, with what was read before kept", "[sources]") {
  TempDir d;
  const std::string gz = gzip_of(two_errors_log());
  const std::string f = d.write("cut.log.gz", gz.substr(0, gz.size() / 2));
  auto r = scan_log(f, -1, ScanOptions{.buffer_size = 4096});
  REQUIRE_FALSE(r.ok());
  const std::string& msg = r.error().message;
  CHECK(msg.find(f) != std::string::npos);
  CHECK(msg.find("truncated gzip data") != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);
  REQUIRE(r.partial() != nullptr);
  REQUIRE(r.partial()->events.size() == 1);  // the first Broken pipe, not the second
  CHECK(r.partial()->events[0].line == 1);
  CHECK(r.partial()->lines > 100);

  // Only the magic bytes; a header cut short.
  for (const std::string& bytes : {gz.substr(0, 2), gz.substr(0, 7)}) {
    auto t = scan_log(d.write("tiny.gz", bytes));
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message.find("truncated gzip data") != std::string::npos);
  }
}

TEST_CASE("gzip: corrupt data and trailing garbage are errors, never a crash", "[sources]") {
  TempDir d;
  std::string gz = gzip_of(two_errors_log());
  std::string flipped = gz;
  for (size_t i = 20; i < flipped.size() - 8; i += 97) flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
  auto r = scan_log(d.write("bad.gz", flipped));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("bad.gz: corrupt gzip data") != std::string::npos);

  std::string crc = gz;  // the CRC of the trailer
  crc[crc.size() - 6] = static_cast<char>(crc[crc.size() - 6] ^ 1);
  auto c = scan_log(d.write("crc.gz", crc));
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("incorrect data check") != std::string::npos);
  REQUIRE(c.partial() != nullptr);
  CHECK(c.partial()->events.size() == 2);  // every line was read before the check failed

  auto t = scan_log(d.write("tail.gz", gzip_of(kBrokenPipe) + "garbage after it\n"));
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().message.find("no gzip member") != std::string::npos);
  REQUIRE(t.partial() != nullptr);
  CHECK(t.partial()->events.size() == 1);
}

TEST_CASE("stdin: `-` reads standard input, plain or gzip, called <stdin>", "[sources]") {
  TempDir d;
  const std::string plain = d.write("in.log", kFiller + "[rank3]:" + kBrokenPipe);
  with_stdin_from(plain, [] {
    auto r = scan_log("-");
    INFO((r ? "" : r.error().message));
    REQUIRE(r.ok());
    REQUIRE(r->events.size() == 1);
    CHECK(r->events[0].file == "<stdin>");
    CHECK(r->events[0].rank == 3);
    CHECK(r->events[0].line == 2);
  });
  const std::string gz = d.write("in.gz", gzip_of(kFiller + kBrokenPipe));
  with_stdin_from(gz, [] {
    auto r = scan_log("-");
    REQUIRE(r.ok());
    REQUIRE(r->events.size() == 1);
    CHECK(r->events[0].rank == -1);  // no file name to give a rank
  });
  const std::string cut = d.write("cut.gz", gzip_of(two_errors_log()).substr(0, 300));
  with_stdin_from(cut, [] {
    auto r = scan_log("-");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.rfind("log <stdin>: truncated gzip data", 0) == 0);
  });
  CHECK(log_display_name("-") == "<stdin>");
}

TEST_CASE("log directories: every log below it, sorted, binary files skipped and counted", "[sources]") {
  TempDir d;
  d.write("job/b/rank1.log", kBrokenPipe);
  d.write("job/a/rank0.log.gz", gzip_of(kBrokenPipe));
  d.write("job/rank2.out", kFiller);
  d.write("job/traces/rank0.rzt", "RZT1 text-looking but a trace");
  d.write("job/core.bin", std::string("ELF\0\0\0binary", 12));
  d.write("job/bundle.tar.gz", gzip_of(std::string("name\0\0\0tar header", 18)));
  d.write("job/1/2/3/4/5/deep.log", kFiller);     // 5 levels down: read
  d.write("job/1/2/3/4/5/6/deeper.log", kFiller); // 6 levels down: not entered
  const LogInputs in = expand_log_args({d.file("job")});
  CHECK(in.errors.empty());
  CHECK(in.files == std::vector<std::string>{d.file("job/1/2/3/4/5/deep.log"), d.file("job/a/rank0.log.gz"),
                                             d.file("job/b/rank1.log"), d.file("job/rank2.out")});
  REQUIRE(in.notes.size() == 1);
  CHECK(in.notes[0].find("skipped 3 binary files (1 of them *.rzt traces") != std::string::npos);
  CHECK(in.notes[0].find("did not enter 1 directory more than 6 levels down") != std::string::npos);
  CHECK(in.notes[0].find("4 log files read") != std::string::npos);
}

TEST_CASE("log arguments: files and stdin kept in order, bad arguments named", "[sources]") {
  TempDir d;
  const std::string f = d.write("a.log", kFiller);
  d.write("empty/traces/x.rzt", "trace");
  const LogInputs in = expand_log_args({"-", f, d.file("missing.log"), d.file("empty"), "-"});
  CHECK(in.files == std::vector<std::string>{"-", f, "-"});
  REQUIRE(in.errors.size() == 3);
  CHECK(in.errors[0] == "log " + d.file("missing.log") + ": No such file or directory");
  CHECK(in.errors[1] == "log directory " + d.file("empty") + ": no log file in it (1 binary file skipped)");
  CHECK(in.errors[2] == "log -: standard input is given more than once");
  CHECK(is_binary_file(d.file("empty/traces/x.rzt")));
  CHECK_FALSE(is_binary_file(f));
}

TEST_CASE("per-task file names: Slurm %j-%t, torchrun --log-dir, other numbers are no rank", "[sources]") {
  CHECK(rank_from_filename("/out/job-123-3.out") == 3);
  CHECK(rank_from_filename("slurm-4242-7.out") == 7);        // slurm-%j-%t.out
  CHECK(rank_from_filename("train.rank-3.log") == 3);
  CHECK(rank_from_filename("rank3.log.gz") == 3);
  CHECK(rank_from_filename("/logs/r1/attempt_0/3/stderr.log") == 3);
  CHECK(rank_from_filename("/logs/r1/attempt_2/11/stdout.log") == 11);
  CHECK(rank_from_filename("/logs/r1/attempt_0/3/error.json") == -1);
  CHECK(rank_from_filename("/logs/r1/3/stderr.log") == -1);   // no attempt_N above it
  CHECK(rank_from_filename("slurm-4242.out") == -1);          // %j alone
  CHECK(rank_from_filename("slurm-4242_3.out") == -1);        // %A_%a: an array task
  CHECK(rank_from_filename("train-3.log") == -1);             // a number, but no pattern
  CHECK(rank_from_filename("train-12345.out") == -1);         // a job id
  CHECK(rank_from_filename("myrank3.log") == -1);             // not the word rank

  TempDir d;
  const std::string f = d.write("job-123-3.out", kFiller + kBrokenPipe + "[rank5]:" + kBrokenPipe);
  auto r = scan_log(f);
  REQUIRE(r.ok());
  REQUIRE(r->events.size() == 2);
  CHECK(r->events[0].rank == 3);   // the file's task
  CHECK(r->events[1].rank == 5);   // the line's own prefix wins
  const std::string t = d.write("run/attempt_0/2/stderr.log", kBrokenPipe);
  auto tr = scan_log(t);
  REQUIRE(tr.ok());
  REQUIRE(tr->events.size() == 1);
  CHECK(tr->events[0].rank == 2);
}

TEST_CASE("line prefixes: host:rank:, kubectl --prefix, and what is no prefix", "[sources]") {
  const std::string msg = "[c10d] sendBytes failed on SocketImpl(fd=81, remote=[node0]:29500): Broken pipe";
  auto ev = [](const std::string& line) {
    auto e = classify_line(line);
    REQUIRE(e.has_value());
    return *e;
  };
  auto a = ev("node07:3: " + msg);
  CHECK(a.rank == 3);
  CHECK(a.origin == "node07");
  CHECK(a.text.rfind("[c10d]", 0) == 0);
  auto b = ev("gpu-a100.cluster: 12: " + msg);  // pdsh "host: " over srun -l "12: "
  CHECK(b.rank == 12);
  CHECK(b.origin == "gpu-a100.cluster");
  auto c = ev("[pod/trainer-worker-1/pytorch] [rank6]:" + msg);
  CHECK(c.rank == 6);
  CHECK(c.origin == "trainer-worker-1");
  CHECK(c.text.rfind("[c10d]", 0) == 0);
  auto k = ev("[pod/trainer-master-0/pytorch] " + msg);
  CHECK(k.rank == -1);
  CHECK(k.origin == "trainer-master-0");
  CHECK(ev("[node2:5] " + msg).origin == "node2");
  // Not prefixes: a source file, a log level, an exception type.
  CHECK(ev("train.py:12: " + msg).rank == -1);
  CHECK(ev("INFO:3: " + msg).rank == -1);
  CHECK(ev("RuntimeError: 3: " + msg).rank == -1);
  CHECK(ev("[rank4]:" + msg).origin.empty());
}
