// Slurm's hostlist syntax (preflight's node list from SLURM_JOB_NODELIST), the nodes taking part
// in the meeting, and which node this is under torchrun or Slurm (job_size.h).
#include <catch2/catch.hpp>

#include "preflight/hostlist.h"
#include "preflight/job_size.h"

using namespace rdzvscope::preflight;
using V = std::vector<std::string>;

TEST_CASE("Slurm hostlists expand as scontrol show hostnames does", "[preflight][hostlist]") {
  CHECK(expand_hostlist("node0").value() == V{"node0"});
  CHECK(expand_hostlist("a,b.example.com").value() == V{"a", "b.example.com"});
  CHECK(expand_hostlist("node[0-3,7],gpu[01-02]").value() ==
        V{"node0", "node1", "node2", "node3", "node7", "gpu01", "gpu02"});
  CHECK(expand_hostlist("n[08-11]").value() == V{"n08", "n09", "n10", "n11"});
  CHECK(expand_hostlist("n[8-10]").value() == V{"n8", "n9", "n10"});
  CHECK(expand_hostlist("n[001-002,010]").value() == V{"n001", "n002", "n010"});
  CHECK(expand_hostlist("rack[1-2]-n[1-2]").value() ==
        V{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"});
  CHECK(expand_hostlist("x[3]").value() == V{"x3"});
  CHECK(expand_hostlist("gpu[1-2].cluster,login").value() ==
        V{"gpu1.cluster", "gpu2.cluster", "login"});
}

TEST_CASE("a malformed hostlist is one line that says what is wrong", "[preflight][hostlist]") {
  const std::pair<const char*, const char*> cases[] = {
      {"", "empty"},
      {"node[0-3", "'[' without ']'"},
      {"node0-3]", "']' without '['"},
      {"node[]", "empty brackets"},
      {"node[1,,2]", "empty range"},
      {"node[a-b]", "not a number"},
      {"node[1-2-3]", "not a number"},
      {"node[5-3]", "runs backwards"},
      {"a,,b", "empty name"},
      {",a", "empty name"},
      {"a,", "empty name"},
      {"n[[1]]", "nested"},
      {"node 1", "a space"},
      {"node[0-99999999]", "more than"},
      {"r[0-9999]-n[0-9999]", "more than"},
  };
  for (const auto& [text, want] : cases) {
    INFO("'" << text << "'");
    auto r = expand_hostlist(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().find(want) != std::string::npos);
    CHECK(r.error().message().find("hostlist '" + std::string(text) + "'") == 0);
    CHECK(r.error().message().find('\n') == std::string::npos);
  }
}

TEST_CASE("the nodes meeting: --nodes, else --world-size or PET_NNODES, names from Slurm",
          "[preflight][hostlist]") {
  const NodeSetEnv none{};
  auto given = node_set(std::nullopt, "--world-size", {"a", "b"}, NodeSetEnv{"4", "x[1-4]"});
  REQUIRE(given.ok());
  CHECK(given.value().world_size == 2);
  CHECK(given.value().names == V{"a", "b"});
  CHECK_FALSE(node_set(3u, "--world-size", {"a", "b"}, none).ok());

  auto slurm = node_set(std::nullopt, "--world-size", {}, NodeSetEnv{std::nullopt, "gpu[01-03]"});
  REQUIRE(slurm.ok());
  CHECK(slurm.value().world_size == 3);
  CHECK(slurm.value().world_size_source == "SLURM_JOB_NODELIST");
  CHECK(slurm.value().names == V{"gpu01", "gpu02", "gpu03"});

  auto pet = node_set(std::nullopt, "--world-size", {}, NodeSetEnv{"2:2", "gpu[01-02]"});
  REQUIRE(pet.ok());
  CHECK(pet.value().world_size == 2);
  CHECK(pet.value().world_size_source == "PET_NNODES");
  CHECK(pet.value().names_source == "SLURM_JOB_NODELIST");

  // A Slurm allocation larger than the job: the count wins, the names are set aside, said.
  auto more = node_set(2u, "--nnodes", {}, NodeSetEnv{std::nullopt, "gpu[01-04]"});
  REQUIRE(more.ok());
  CHECK(more.value().world_size == 2);
  CHECK(more.value().names.empty());
  CHECK(more.value().note.find("SLURM_JOB_NODELIST names 4") != std::string::npos);

  auto elastic = node_set(std::nullopt, "--world-size", {}, NodeSetEnv{"1:4", std::nullopt});
  REQUIRE(elastic.ok());
  CHECK(elastic.value().world_size == 0);
  CHECK(elastic.value().note.find("PET_NNODES=1:4") != std::string::npos);

  auto broken = node_set(std::nullopt, "--world-size", {}, NodeSetEnv{std::nullopt, "gpu[01-"});
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message().find("SLURM_JOB_NODELIST: hostlist 'gpu[01-'") == 0);

  CHECK(node_set(std::nullopt, "--world-size", {}, none).value().world_size == 0);
  CHECK(fixed_nnodes("4") == 4u);
  CHECK(fixed_nnodes("4:4") == 4u);
  CHECK_FALSE(fixed_nnodes("1:4"));
  CHECK_FALSE(fixed_nnodes("0"));
  CHECK_FALSE(fixed_nnodes("four"));
}

TEST_CASE("the node is told by PET_NODE_RANK, SLURM_NODEID, GROUP_RANK or its place in the list",
          "[preflight][hostlist]") {
  const V names{"gpu01", "gpu02"};
  auto id = node_id(NodeIdEnv{"1", "0", "0"}, "gpu01", names);
  CHECK(id.rank == 1u);
  CHECK(id.source == "PET_NODE_RANK");
  id = node_id(NodeIdEnv{std::nullopt, "0", "1"}, "gpu02", names);
  CHECK(id.rank == 0u);
  CHECK(id.source == "SLURM_NODEID");
  id = node_id(NodeIdEnv{std::nullopt, std::nullopt, "1"}, "x", {});
  CHECK(id.rank == 1u);
  CHECK(id.source == "GROUP_RANK");
  id = node_id(NodeIdEnv{"x", std::nullopt, std::nullopt}, "gpu02.cluster", names);
  CHECK(id.rank == 1u);
  CHECK(id.source == "node list");
  id = node_id(NodeIdEnv{}, "login", names);
  CHECK_FALSE(id.rank);
}
