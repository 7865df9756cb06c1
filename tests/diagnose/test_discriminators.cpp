// Discriminators are typed values (diagnosis.h): the JSON view writes them as the schema
// always had them, the text and HTML views word them.
#include <catch2/catch.hpp>

#include "report/report.h"
#include "job_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

TEST_CASE("discriminators in words") {
  CHECK(discriminator_words(RankSet{{5, 0, 1, 2}}) == "0-2, 5");
  CHECK(discriminator_words(RankSet{}) == "none");
  CHECK(discriminator_words(NameList{{"node1", "node2"}}) == "node1, node2");
  CHECK(discriminator_words(NameList{}) == "none");
  CHECK(discriminator_words(NotKnown{}) == "none");
  CHECK(discriminator_words(std::string()) == "none");
  CHECK(discriminator_words(std::string("2.4.1")) == "2.4.1");
  CHECK(discriminator_words(std::int64_t{29500}) == "29500");
  CHECK(discriminator_words(Seconds{3.456}) == "3.46 s");
  CHECK(discriminator_words(TimeoutFact{3000, false, "set by the job"}) == "3.00 s (configured: set by the job)");
  CHECK(discriminator_words(TimeoutFact{300000, true, "Store::kDefaultTimeout (300 s)"}) ==
        "300.00 s (internal default: Store::kDefaultTimeout (300 s))");
  CHECK(discriminator_words(AfterRendezvous{"+5.00 s", 2, "+7.00 s"}) ==
        "completed at +5.00 s; rank 2 failed first, at +7.00 s");
  CHECK(discriminator_words(std::vector<AbsentNode>{{"GROUP_RANK", 3, {12, 13, 14, 15}}}) ==
        "node 3 by GROUP_RANK: rank(s) 12-15");
  MismatchedSetting m{"MASTER_PORT", "29500", {{"29500", {"rank 0", "rank 1"}}, {"29501", {"rank 2"}}}, {"rank 2"}};
  CHECK(discriminator_words(std::vector<MismatchedSetting>{m}) ==
        "MASTER_PORT expected 29500: 29500 on rank 0, rank 1; 29501 on rank 2 (differing: rank 2)");
}

TEST_CASE("a discriminator set again keeps its place and takes the new value") {
  Discriminators ds;
  ds.set("failed_ranks", RankSet{{1}});
  ds.set("pytorch", NotKnown{});
  ds.set("which_ranks_failed", RankSet{{1}});
  ds.set("pytorch", std::string("2.4.1"));
  REQUIRE(ds.size() == 3);
  CHECK(discriminators_json(ds).dump() == R"({"failed_ranks":[1],"pytorch":"2.4.1","which_ranks_failed":[1]})");
  REQUIRE(ds.get<std::string>("pytorch"));
  CHECK(*ds.get<std::string>("pytorch") == "2.4.1");
  CHECK_FALSE(ds.get<RankSet>("pytorch"));
  CHECK_FALSE(ds.contains("timeout"));
}

// The rules set these shapes; the JSON must stay what rdzvscope.diagnosis/1 always had.
TEST_CASE("every shape a rule sets is written as the schema has it") {
  Discriminators ds;
  ds.set("port", std::int64_t{29500});
  ds.set("seconds_late", Seconds{3.52});
  ds.set("seconds_refused_before_listen", Seconds{0.0});  // stays a float: 0.0, not 0
  ds.set("port_holder", std::string("pid 7 on node0"));
  ds.set("pytorch", NotKnown{});
  ds.set("late_ranks", RankSet{{3, 1}});  // in the order found, not sorted
  ds.set("hosts_refused", NameList{{"node1"}});
  ds.set("failed_on_ranks", RankSet{});
  ds.set("hosts_that_reached_the_store", NameList{});
  ds.set("mismatched_settings",
         std::vector<MismatchedSetting>{{"MASTER_PORT", "29500", {{"29500", {"rank 0"}}, {"29501", {"rank 1"}}}, {"rank 1"}}});
  CHECK(discriminators_json(ds).dump() ==
        R"({"port":29500,"seconds_late":3.52,"seconds_refused_before_listen":0.0,"port_holder":"pid 7 on node0",)"
        R"("pytorch":null,"late_ranks":[3,1],"hosts_refused":["node1"],"failed_on_ranks":[],)"
        R"("hosts_that_reached_the_store":[],"mismatched_settings":[{"setting":"MASTER_PORT","expected":"29500",)"
        R"("values":{"29500":["rank 0"],"29501":["rank 1"]},"differing":["rank 1"]}]})");
}

TEST_CASE("the text report words the discriminators, no JSON in it") {
  Job job;
  Proc& p0 = job.proc(0, 1000);
  p0.bind(0.9, 0).listen(0.9).connect(1.0, 0, kPort, 0.001, 40000).exit(3.0, 1);
  job.proc(1, 1001).connect(1.0, 0, kPort, 0.001, 40001).exit(3.0, 1);
  job.proc(2, 1002).connect(1.0, 0, kPort, 0.001, 40002).exit(3.0, 1);
  const Diagnosis d = job.diagnose_it();
  const std::string text = diagnosis_text(d);
  const auto at = text.find("DISCRIMINATORS");
  REQUIRE(at != std::string::npos);
  const std::string section = text.substr(at, text.find("\nREAD", at) - at);
  CHECK(section.find("which_ranks_failed") != std::string::npos);
  CHECK(section.find(" 0-2\n") != std::string::npos);
  CHECK(section.find('[') == std::string::npos);
  CHECK(section.find("null") == std::string::npos);
}
