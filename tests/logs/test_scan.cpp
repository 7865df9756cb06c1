// Whole files through scan_log: streaming across chunk boundaries, line numbers, ranks in
// per-rank and merged files, versions, CRLF, '\r' redraws, long lines, binary garbage, empty
// and missing files, and the anchors that bench/logscan/patterns.txt shares with grep.
#include <catch2/catch.hpp>

#include "log_test_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "logs/families.h"
#include "logs/log_scan.h"
#include "../../analyzer/logs/prefilter.h"

using namespace rdzv::logs;

namespace {

using TempDir = rdzv::logs::test::LogDir;

LogScan must_scan(const std::string& path, int default_rank = -1, ScanOptions opt = {}) {
  auto r = scan_log(path, default_rank, opt);
  INFO((r ? "" : r.error().message));
  REQUIRE(r.ok());
  return std::move(r).value();
}

const std::string kFiller = "[rank0]:2026-11-29 10:00:00,000 INFO train.py:10 step 100 loss=2.3456 lr=1e-4\n";

}  // namespace

TEST_CASE("every family table example is found in a file, with its line number", "[scan]") {
  TempDir d;
  std::string content;
  std::vector<uint64_t> want_lines;
  uint64_t line = 0;
  const auto rows = detail::family_table();
  for (const auto& row : rows) {
    for (int i = 0; i < 3; ++i, ++line) content += kFiller;
    content += row.example;
    content += '\n';
    want_lines.push_back(++line);
  }
  const auto f = d.write("merged.log", content);
  auto scan = must_scan(f);
  REQUIRE(scan.events.size() == rows.size());
  for (size_t i = 0; i < scan.events.size(); ++i) {
    INFO(rows[i].example);
    CHECK(scan.events[i].family == rows[i].family);
    CHECK(scan.events[i].line == want_lines[i]);
    CHECK(scan.events[i].file == f);
  }
  CHECK(scan.lines == line);
  // `matched` counts the c10d lines; those that are no store failure (issue 13), torchrun's
  // launch settings, their agents' word that the workers succeeded and the lines of their
  // failure summaries are not.
  size_t c10d = 0;
  for (const auto& e : scan.events) c10d += rdzv::logs::is_rendezvous_message(e.family);
  // 3 other errors, a launch setting, a success, a restart, a summary line, a process's end, a
  // stack frame, Lightning's announcement of init_process_group, ProcessGroupNCCL's warning at
  // exit, gloo's loopback fallback, c10d's IPv6 socket warning (a bare "No route to host" is a
  // connect's failure since issue 29: connect_timeout reads it)
  CHECK(c10d + 13 == scan.events.size());
  CHECK(scan.matched == c10d);
  CHECK(scan.bytes == content.size());
}

TEST_CASE("matches straddling every chunk boundary are found (buffer sizes 1..97)", "[scan]") {
  TempDir d;
  std::string content;
  for (int i = 0; i < 4; ++i) {
    content += kFiller;
    content += "[rank" + std::to_string(i) + "]:[W1129 10:00:00.123456 1 TCPStore.cpp:106] [c10d] sendBytes failed on "
               "SocketImpl(fd=81, addr=[n3]:50612, remote=[n0]:29500): Broken pipe\n";
    content += "torch==2.7.1\n";
  }
  const auto f = d.write("chunks.log", content);
  const auto ref = must_scan(f);
  REQUIRE(ref.events.size() == 4);
  for (size_t bs : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{7}, size_t{13}, size_t{31}, size_t{64},
                    size_t{97}}) {
    INFO("buffer_size " << bs);
    ScanOptions opt;
    opt.buffer_size = bs;
    auto s = must_scan(f, -1, opt);
    REQUIRE(s.events.size() == ref.events.size());
    for (size_t i = 0; i < s.events.size(); ++i) {
      CHECK(s.events[i].line == ref.events[i].line);
      CHECK(s.events[i].rank == static_cast<int>(i));
      CHECK(s.events[i].text == ref.events[i].text);
    }
    CHECK(s.lines == ref.lines);
    CHECK(s.torch_version == "2.7.1");
  }
}

TEST_CASE("rank attribution: per-rank file names, explicit default, merged prefixes", "[scan]") {
  TempDir d;
  const std::string plain = "RuntimeError: Socket Timeout\n";
  CHECK(must_scan(d.write("rank3.log", plain)).events.at(0).rank == 3);
  CHECK(must_scan(d.write("worker-5.out", plain)).events.at(0).rank == 5);
  CHECK(must_scan(d.write("train.log", plain)).events.at(0).rank == -1);
  CHECK(must_scan(d.write("train2.log", plain), 9).events.at(0).rank == 9);
  // a file named for one rank, but lines of another rank's prefix: the prefix wins
  CHECK(must_scan(d.write("rank1.log", "[rank2]:" + plain)).events.at(0).rank == 2);

  const auto merged = d.write("all.log",
                              "[rank0]:RuntimeError: Socket Timeout\n"
                              "[default1]:RuntimeError: Socket Timeout\n" +
                                  kFiller +
                                  "[2]:RuntimeError: Socket Timeout\n"
                                  "RuntimeError: Socket Timeout\n"
                                  "[rank3]:Waiting in store based barrier to initialize process group for rank: 3, "
                                  "key: store_based_barrier_key:1 (world_size=4, worker_count=3, timeout=0:30:00)\n");
  auto s = must_scan(merged);
  REQUIRE(s.events.size() == 5);
  CHECK(s.events[0].rank == 0);
  CHECK(s.events[1].rank == 1);
  CHECK(s.events[2].rank == 2);
  CHECK(s.events[2].line == 4);
  CHECK(s.events[3].rank == -1);
  CHECK(s.events[4].rank == 3);
}

TEST_CASE("torch version from the file, first one wins; hint when unknown", "[scan]") {
  TempDir d;
  auto s = must_scan(d.write("v.log", kFiller + "[rank0]:PyTorch version: 2.3.1\n" + kFiller +
                                          "torch==2.5.0\nRuntimeError: Socket Timeout\n"));
  CHECK(s.torch_version == "2.3.1");
  CHECK(version_hint(s).empty());
  s = must_scan(d.write("nov.log", kFiller + "RuntimeError: Socket Timeout\n"));
  CHECK(s.torch_version.empty());
  CHECK(version_hint(s) == "<=2.4");
}

TEST_CASE("CRLF files and '\\r' redraws", "[scan]") {
  TempDir d;
  auto s = must_scan(d.write("crlf.log", "a\r\nRuntimeError: Broken pipe\r\nb\r\n"));
  REQUIRE(s.events.size() == 1);
  CHECK(s.events[0].text == "RuntimeError: Broken pipe");
  CHECK(s.events[0].line == 2);
  CHECK(s.lines == 3);
  // tqdm: one '\n' line made of '\r' redraws; the error is its own segment, the rank comes
  // from the prefix at the start of the line.
  s = must_scan(d.write("tqdm.log", "[rank4]: 10%|#  |\r 20%|## |\rRuntimeError: Socket Timeout\nnext\n"));
  REQUIRE(s.events.size() == 1);
  CHECK(s.events[0].rank == 4);
  CHECK(s.events[0].text == "RuntimeError: Socket Timeout");
  CHECK(s.lines == 2);
}

TEST_CASE("very long lines are cut, counted, and do not hide the next lines", "[scan]") {
  TempDir d;
  std::string content = "RuntimeError: Broken pipe " + std::string(100000, 'x') + " Socket Timeout\n";
  content += "RuntimeError: Connection reset by peer\n";
  content += std::string(300000, 'y');  // unterminated long last line
  ScanOptions opt;
  opt.max_line = 4096;
  opt.buffer_size = 1000;
  auto s = must_scan(d.write("long.log", content), -1, opt);
  REQUIRE(s.events.size() == 2);
  CHECK(s.events[0].family == Family::BrokenPipe);  // found in the kept head of the line
  CHECK_FALSE(s.events[0].has(Family::SocketTimeout));  // in the cut tail
  CHECK(s.events[0].text.size() == 500);
  CHECK(s.events[1].family == Family::ConnectionReset);
  CHECK(s.events[1].line == 2);
  CHECK(s.cut_lines == 2);
  CHECK(s.lines == 3);
  CHECK(s.bytes == content.size());
}

TEST_CASE("binary garbage: no crash, NUL lines skipped, real lines still found", "[scan]") {
  TempDir d;
  std::mt19937 rng(42);
  std::string content;
  for (int i = 0; i < 200000; ++i) content += static_cast<char>(rng() & 0xff);
  content += "\nRuntimeError: Broken pipe\n";
  content += std::string("RuntimeError: Socket Timeout\0garbage\n", 38);
  for (int i = 0; i < 100000; ++i) content += static_cast<char>(rng() & 0xff);
  ScanOptions opt;
  opt.max_line = 1024;
  opt.buffer_size = 4096;
  auto s = must_scan(d.write("bin.log", content), -1, opt);
  std::vector<Family> fams;
  for (const auto& e : s.events) fams.push_back(e.family);
  CHECK(std::count(fams.begin(), fams.end(), Family::BrokenPipe) == 1);
  CHECK(std::count(fams.begin(), fams.end(), Family::SocketTimeout) == 0);
  CHECK(s.binary_lines >= 1);
  CHECK(s.bytes == content.size());
  for (const auto& e : s.events)
    for (char c : e.text) CHECK(static_cast<unsigned char>(c) >= 0x09);
}

TEST_CASE("empty file, file with no newline, file of newlines", "[scan]") {
  TempDir d;
  auto s = must_scan(d.write("empty.log", ""));
  CHECK(s.lines == 0);
  CHECK(s.bytes == 0);
  CHECK(s.events.empty());
  s = must_scan(d.write("nonl.log", "x\nRuntimeError: Broken pipe"));
  REQUIRE(s.events.size() == 1);
  CHECK(s.events[0].line == 2);
  CHECK(s.lines == 2);
  s = must_scan(d.write("nl.log", "\n\n\n"));
  CHECK(s.lines == 3);
  CHECK(s.events.empty());
}

TEST_CASE("missing file, directory: one-line errors naming the file", "[scan]") {
  TempDir d;
  auto r = scan_log(d.path() + "/nope.log");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find(d.path() + "/nope.log") != std::string::npos);
  CHECK(r.error().message.find("No such file") != std::string::npos);
  CHECK(r.error().message.find('\n') == std::string::npos);
  r = scan_log(d.path());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find(d.path()) != std::string::npos);
  CHECK(r.error().message.find("directory") != std::string::npos);
}

TEST_CASE("glog stamps take their year from the file's mtime", "[scan]") {
  TempDir d;
  const auto f = d.write("g.log", "[rank1]:[W0305 10:00:00.500000 1 socket.cpp:204] [c10d] The hostname of the "
                                  "client socket cannot be retrieved. err=-3\n"
                                  "[W1231 23:00:00.000000 1 socket.cpp:204] [c10d] The hostname of the client "
                                  "socket cannot be retrieved. err=-3\n");
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mon = 5;  // June 2025
  tm.tm_mday = 1;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  const time_t mt = std::mktime(&tm);
  struct timespec ts[2] = {{mt, 0}, {mt, 0}};
  REQUIRE(::utimensat(AT_FDCWD, f.c_str(), ts, 0) == 0);
  auto s = must_scan(f);
  REQUIRE(s.events.size() == 2);
  std::tm want{};
  want.tm_year = 2025 - 1900;
  want.tm_mon = 2;
  want.tm_mday = 5;
  want.tm_hour = 10;
  want.tm_isdst = -1;
  REQUIRE(s.events[0].wall_time.has_value());
  CHECK(*s.events[0].wall_time == Approx(static_cast<double>(std::mktime(&want)) + 0.5));
  // December is after the file's June: last year's
  want = {};
  want.tm_year = 2024 - 1900;
  want.tm_mon = 11;
  want.tm_mday = 31;
  want.tm_hour = 23;
  want.tm_isdst = -1;
  REQUIRE(s.events[1].wall_time.has_value());
  CHECK(*s.events[1].wall_time == Approx(static_cast<double>(std::mktime(&want))));
}

TEST_CASE("prefilter: finds each anchor at every offset, and patterns.txt holds the same anchors", "[scan]") {
  const auto& pf = rdzv::logs::detail::default_prefilter();
  for (size_t i = 0; i < pf.anchors().size(); ++i) {
    const std::string a(pf.anchors()[i]);
    for (size_t off = 0; off < 9; ++off) {
      const std::string text = std::string(off, '.') + a + "...";
      size_t which = 99;
      const char* p = pf.find(text.data(), text.data() + text.size(), &which);
      INFO(a << " at " << off);
      CHECK(p == text.data() + off);
      CHECK(which == i);
      // the anchor as the last bytes of the buffer
      const char* r = pf.find(text.data(), text.data() + off + a.size(), &which);
      CHECK(r == text.data() + off);
      // cut one byte short: not found
      const char* q = pf.find(text.data(), text.data() + off + a.size() - 1);
      CHECK(q == text.data() + off + a.size() - 1);
    }
  }
  std::ifstream in(RDZV_PATTERNS_TXT);
  REQUIRE(in.good());
  std::set<std::string> file, code;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) file.insert(l);
  for (auto a : pf.anchors()) code.insert(std::string(a));
  CHECK(file == code);
}

// Issue 29: the progress lines the reader keeps (logs/progress.h): each process's first after
// each of its lines that a family matched, and the file's first; and the last unread anchor line.
TEST_CASE("progress: the first after each event of the same process, and the file's first", "[scan]") {
  TempDir d;
  const std::string warn = "[W socket.cpp:558] [c10d] The IPv6 network addresses of (node0, 29500) cannot be "
                           "retrieved (gai error: -2 - Name or service not known).\n";
  const auto f = d.write("all.log",
                         "[rank0]:Epoch 1/10 loss 2.5\n"      // the file's first (line 1)
                         "[rank0]:Epoch 2/10 loss 2.4\n"      // nothing awaits it
                         "[rank1]:" + warn +                  // line 3: rank 1 awaits
                         "[rank0]:Epoch 3/10 loss 2.3\n"      // rank 0's: not rank 1's
                         "[rank1]:Epoch 3/10 loss 2.2\n"      // line 5: rank 1's first after it
                         "[rank1]:Epoch 4/10 loss 2.1\n");
  const LogScan s = must_scan(f);
  REQUIRE(s.progress.size() == 2);
  CHECK(s.progress[0].line == 1);
  CHECK(s.progress[1].line == 5);
  CHECK(s.progress[1].rank == 1);
  CHECK(s.unread.empty());
}

TEST_CASE("progress: what counts, and what does not", "[scan]") {
  for (const char* yes : {"For gpu:3. Running epoch: 2", "Epoch [3/10]", " iteration       10/ 1000 | loss 3.2",
                          "step 100 loss=2.3456", "valid_loss: 0.94", "===== 5 passed in 3.21s =====",
                          "tests/test_dp.py::test_daso PASSED", "test_daso (heat.optim.TestDASO) ... ok",
                          "Training completed in 3h", "[rank0] e2e: all_reduce ok (10)", "barrier done"}) {
    INFO(yes);
    CHECK(says_job_progressed(yes));
  }
  for (const char* no : {"Namespace(epochs=100, lr=0.1)", "max_iterations: 1000", "Loading checkpoint shards",
                         "the epoch argument is deprecated", "test_daso (heat.optim.TestDASO) ... ",
                         "glossary 3", "broadcasting the model", "waiting for all_reduce"}) {
    INFO(no);
    CHECK_FALSE(says_job_progressed(no));
  }
}

TEST_CASE("progress: the last unread anchor line of a process is kept, and awaits progress", "[scan]") {
  TempDir d;
  const auto f = d.write("rank0.log",
                         "Epoch 1 loss 2.5\n"
                         "Exception raised from ncclCommWatchdog at ProcessGroupNCCL.cpp:1521 (most recent call first):\n"
                         "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96\n");
  const LogScan s = must_scan(f);
  REQUIRE(s.unread.size() == 1);
  CHECK(s.unread[0].line == 3);  // "c10::Error" holds the "Error" anchor too
  REQUIRE(s.progress.size() == 1);
  CHECK(s.progress[0].line == 1);
}
