// The pure parts of `rdzvscope run`: port lists, LD_PRELOAD merging, where the shim is
// looked for, and the trace directory.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "out_dir.h"
#include "run_env.h"
#include "shim_locator.h"
#include "temp_dir.h"
#include "trace_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::cli;
using rdzvscope::test::TempDir;

TEST_CASE("port lists accept 1..65535, comma separated, and nothing else", "[cli]") {
  auto ok = parse_ports("29500,1,65535,29500");
  REQUIRE(ok.ok());
  CHECK(ok.value() == std::vector<std::uint16_t>{29500, 1, 65535});
  CHECK(join_ports(ok.value()) == "29500,1,65535");
  for (const char* bad : {"", "0", "65536", "-1", "29500,", ",29500", "29500,,1", "abc",
                          "12x", " 29500", "99999999999999999999"}) {
    INFO("'" << bad << "'");
    auto r = parse_ports(bad);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message(), Catch::Contains("invalid port"));
  }
}

TEST_CASE("LD_PRELOAD: the shim first, other entries kept, no second shim", "[cli]") {
  const std::string shim = "/opt/rdzvscope/lib/librdzvscope.so";
  CHECK(merge_ld_preload(shim, nullptr) == shim);
  CHECK(merge_ld_preload(shim, "") == shim);
  CHECK(merge_ld_preload(shim, "/usr/lib/libjemalloc.so") == shim + ":/usr/lib/libjemalloc.so");
  CHECK(merge_ld_preload(shim, "/a.so /b.so") == shim + ":/a.so:/b.so");
  CHECK(merge_ld_preload(shim, shim.c_str()) == shim);
  CHECK(merge_ld_preload(shim, ("/a.so:" + shim + ":/b.so").c_str()) == shim + ":/a.so:/b.so");
  CHECK(merge_ld_preload(shim, "/old/build/lib/librdzvscope.so:/a.so") == shim + ":/a.so");
  CHECK(merge_ld_preload(shim, "::/a.so::") == shim + ":/a.so");
}

TEST_CASE("the shim is looked for beside the executable, in lib and the install libdir", "[cli]") {
  CHECK(shim_candidates("/opt/x/bin", "lib") ==
        std::vector<std::string>{"/opt/x/lib/librdzvscope.so"});
  CHECK(shim_candidates("/usr/bin", "lib/x86_64-linux-gnu") ==
        std::vector<std::string>{"/usr/lib/librdzvscope.so",
                                 "/usr/lib/x86_64-linux-gnu/librdzvscope.so"});
  CHECK(shim_candidates("/usr/bin", "/opt/lib64") ==
        std::vector<std::string>{"/usr/lib/librdzvscope.so", "/opt/lib64/librdzvscope.so"});
}

TEST_CASE("find_shim: an explicit path is the only one tried, errors name every place", "[cli]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("bin"));
  std::filesystem::create_directories(dir.file("lib64"));
  const std::string bin = dir.file("bin");

  auto none = find_shim("", bin, "lib64");
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.error().message(), Catch::Contains(dir.file("lib/librdzvscope.so")));
  CHECK_THAT(none.error().message(), Catch::Contains(dir.file("lib64/librdzvscope.so")));

  rdzvscope::test::write_file(dir.file("lib64/librdzvscope.so"), "not really an ELF");
  auto found = find_shim("", bin, "lib64");
  REQUIRE(found.ok());
  CHECK(found.value() == dir.file("lib64/librdzvscope.so"));

  auto missing = find_shim(dir.file("nope.so"), bin, "lib64");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message(), Catch::Contains(dir.file("nope.so")));
  CHECK_THAT(missing.error().message(), !Catch::Contains("lib64"));

  // A relative --shim comes back absolute: the traced command may chdir.
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  auto rel = find_shim("lib64/librdzvscope.so", "/nowhere", "lib");
  std::filesystem::current_path(cwd);
  REQUIRE(rel.ok());
  CHECK(rel.value() == dir.file("lib64/librdzvscope.so"));

  auto a_dir = find_shim(dir.file("lib64"), bin, "lib");
  CHECK_FALSE(a_dir.ok());
}

TEST_CASE("default trace directory: per Slurm job, else per start time", "[cli]") {
  CHECK(default_out_dir("12345", 0) == "rdzvscope-12345");
  const std::string stamped = default_out_dir(nullptr, 1796080758);
  CHECK(stamped.size() == std::string("rdzvscope-YYYYmmdd-HHMMSS").size());
  CHECK(stamped.rfind("rdzvscope-2026", 0) == 0);
  CHECK(default_out_dir("", 1796080758) == stamped);
}

TEST_CASE("prepare_out_dir with placeholders: made up to the first, the rest kept for each process",
          "[cli]") {
  TempDir dir;
  auto made = prepare_out_dir(dir.file("base/%Y/%j/%h"));
  REQUIRE(made.ok());
  CHECK(made.value() == dir.file("base") + "/%Y/%j/%h");
  struct stat st {};
  REQUIRE(::stat(dir.file("base").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  CHECK(::stat(dir.file("base/%Y").c_str(), &st) != 0);  // a process makes it, expanded
  rdzvscope::test::write_file(dir.file("file"), "x");
  CHECK_FALSE(prepare_out_dir(dir.file("file/%h")).ok());  // the fixed part must be usable
  ::setenv("SLURM_JOB_ID", "31", 1);
  CHECK(expand_out_dir("/b/%j/x") == "/b/31/x");
  ::unsetenv("SLURM_JOB_ID");
  CHECK(expand_out_dir("/b/plain") == "/b/plain");
}

TEST_CASE("run --verdict reads the job's directory above the per-host ones", "[cli]") {
  ::setenv("SLURM_JOB_ID", "31", 1);
  CHECK(job_trace_root("/s/%j/%h") == "/s/31");
  CHECK(job_trace_root("/s/%j/node-%h/x") == "/s/31");
  CHECK(job_trace_root("/s/%j") == "/s/31");
  CHECK(job_trace_root("/%h") == "/");
  CHECK(job_trace_root("/plain") == "/plain");
  ::unsetenv("SLURM_JOB_ID");
}

TEST_CASE("prepare_out_dir creates private directories and refuses unusable ones", "[cli]") {
  TempDir dir;
  const std::string target = dir.file("a/b/traces");
  auto made = prepare_out_dir(target);
  REQUIRE(made.ok());
  CHECK(made.value() == target);
  struct stat st {};
  REQUIRE(::stat(target.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  REQUIRE(::stat(dir.file("a").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);

  auto again = prepare_out_dir(target + "/");  // existing: fine, mode left alone
  REQUIRE(again.ok());
  CHECK(again.value() == target);

  rdzvscope::test::write_file(dir.file("file"), "x");
  auto on_file = prepare_out_dir(dir.file("file"));
  REQUIRE_FALSE(on_file.ok());
  CHECK_THAT(on_file.error().message(), Catch::Contains("not a directory"));
  auto under_file = prepare_out_dir(dir.file("file/sub"));
  CHECK_FALSE(under_file.ok());

  if (::geteuid() != 0) {  // root may write anywhere: the check cannot fail for root
    std::filesystem::create_directories(dir.file("ro"));
    ::chmod(dir.file("ro").c_str(), 0500);
    auto ro = prepare_out_dir(dir.file("ro"));
    ::chmod(dir.file("ro").c_str(), 0700);
    REQUIRE_FALSE(ro.ok());
    CHECK_THAT(ro.error().message(), Catch::Contains("not writable"));
  }
}
