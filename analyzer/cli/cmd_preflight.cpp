// rdzvscope preflight [--endpoint|--rdzv-endpoint HOST:PORT] [--world-size|--nnodes N] [--nodes H,...] [--ranks N]
//                     [--job-id ID] [--timeout S] [--out DIR] [--format text|json]
// Run on every node before the job starts, with the job's environment: will this node get
// through the rendezvous? The checks are in preflight/ (preflight.h says which run where);
// this file reads the options and the environment, prints the report and writes --out.
// Exit: 0 the job can rendezvous (warnings allowed), 3 it cannot, 2 bad usage.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "diagnostics.h"
#include "out_dir.h"
#include "preflight/job_size.h"
#include "preflight/preflight.h"
#include "preflight/report.h"

namespace rdzvscope::cli {
namespace {

inline constexpr int kExitCannotRendezvous = 3;

std::shared_ptr<spdlog::logger> preflight_log() { return log_for("preflight"); }

struct PreflightOptions {
  std::optional<std::string> endpoint;
  std::optional<unsigned> world_size;
  std::optional<std::string> nnodes;  // torchrun's --nnodes: N, or MIN:MAX with MIN == MAX
  std::vector<std::string> nodes;
  std::optional<unsigned long> ranks;
  std::optional<std::string> job_id;
  double timeout_s = 30;
  std::string out;
  std::string format = "text";
};

int usage_error(const std::string& message) {
  preflight_log()->error("{}", message);
  return kExitUsage;
}

// Writes DIR/preflight.<host>.json; false, said on stderr, when it cannot.
bool write_report(const std::string& dir, const preflight::Report& r) {
  auto prepared = prepare_out_dir(dir);
  if (!prepared) {
    preflight_log()->error("{}", prepared.error().message());
    return false;
  }
  const std::string path = prepared.value() + "/" + preflight::report_file_name(r.host);
  const std::string text = preflight::report_json(r).dump(2, ' ', false,
                                                          nlohmann::json::error_handler_t::replace);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (f) f << text << '\n';
  if (f) f.close();
  if (!f) {
    preflight_log()->error("writing {}: {}", path, std::strerror(errno));
    return false;
  }
  preflight_log()->debug("wrote {}", path);
  return true;
}

// The number of nodes the options give and the option that gave it: --world-size, or --nnodes
// in its place (fixed, and the same as --world-size when both are given).
struct PreflightWorldSize {
  std::optional<unsigned> world_size;
  std::string option = "--world-size";
};

Result<PreflightWorldSize> preflight_world_size(const PreflightOptions& opt) {
  PreflightWorldSize w;
  w.world_size = opt.world_size;
  if (!opt.nnodes) return w;
  const auto n = preflight::fixed_nnodes(*opt.nnodes);
  if (!n)
    return Error{"", fmt::format("--nnodes '{}': want the number of nodes, N or N:N (an elastic "
                                 "MIN:MAX range has no fixed number of nodes to wait for)",
                                 *opt.nnodes),
                 std::nullopt};
  if (w.world_size && *w.world_size != *n)
    return Error{"", fmt::format("--world-size {} but --nnodes {}", *w.world_size, *n),
                 std::nullopt};
  w.world_size = n;
  w.option = "--nnodes";
  return w;
}

preflight::Options preflight_options(const PreflightOptions& opt,
                                     const preflight::Endpoint& endpoint,
                                     const preflight::NodeSet& set,
                                     const preflight::RankCount& ranks,
                                     const preflight::JobKey& job) {
  const std::string hostname = preflight::this_hostname();
  const preflight::NodeId id =
      preflight::node_id(preflight::node_id_env_from_process(), hostname, set.names);
  preflight::Options o;
  o.endpoint = endpoint;
  o.world_size = set.world_size;
  o.node_names = set.names;
  o.node_rank = id.rank;
  o.node_rank_source = id.source;
  o.job = job.key;
  o.job_source = job.source;
  o.ranks = ranks.count;
  o.ranks_source = ranks.source;
  o.timeout_s = opt.timeout_s;
  o.hostname = hostname;
  o.progress = [](const std::string& what) { preflight_log()->debug("{}", what); };
  return o;
}

// -v: what the preflight will check against, and where each setting came from.
void log_preflight_settings(const preflight::Options& o, const preflight::NodeSet& set) {
  preflight_log()->debug("endpoint {} (from {}), {} node(s) (from {}{}), {} rank(s) (from {}), timeout {} s",
               o.endpoint.text(), o.endpoint.source, o.world_size,
               set.world_size_source.empty() ? "nothing" : set.world_size_source,
               set.names_source.empty() ? "" : ", names from " + set.names_source,
               o.ranks, o.ranks_source, o.timeout_s);
}

std::string preflight_report_in_format(const preflight::Report& report,
                                       const std::string& format) {
  return format == "json" ? preflight::report_json(report).dump(
                                2, ' ', false, nlohmann::json::error_handler_t::replace) +
                                "\n"
                          : preflight::report_text(report);
}

// Prints the report, writes it to --out: the command's exit code.
int print_preflight_report(const PreflightOptions& opt, const preflight::Report& report) {
  const std::string out = preflight_report_in_format(report, opt.format);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (std::fflush(stdout) != 0)
    return usage_error(fmt::format("writing the report: {}", std::strerror(errno)));
  if (!opt.out.empty() && !write_report(opt.out, report)) return kExitUsage;
  return report.can_rendezvous() ? kExitOk : kExitCannotRendezvous;
}

int run_preflight_command(const PreflightOptions& opt) {
  auto endpoint = preflight::choose_endpoint(opt.endpoint, preflight::endpoint_env_from_process());
  if (!endpoint) return usage_error(endpoint.error().message());
  const auto world_size = preflight_world_size(opt);
  if (!world_size) return usage_error(world_size.error().message());
  auto set = preflight::node_set(world_size.value().world_size, world_size.value().option,
                                 opt.nodes, preflight::node_set_env_from_process());
  if (!set) return usage_error(set.error().message());
  if (!set.value().note.empty()) preflight_log()->warn("{}", set.value().note);
  const preflight::RankCount ranks = preflight::rank_count(opt.ranks,
                                                           preflight::job_size_env_from_process(),
                                                           set.value().world_size);
  const auto job = preflight::job_key(opt.job_id, preflight::job_key_env_from_process());
  if (!job) return usage_error(job.error().message());

  const preflight::Options o =
      preflight_options(opt, endpoint.value(), set.value(), ranks, job.value());
  log_preflight_settings(o, set.value());
  return print_preflight_report(opt, preflight::run_preflight(o));
}

}  // namespace

Command add_preflight_command(CLI::App& app) {
  auto opt = std::make_shared<PreflightOptions>();
  CLI::App* sub = app.add_subcommand(
      "preflight",
      "Before the job starts, on every node: will it get through the rendezvous? (resolve, bind or "
      "connect, "
      "limits, clocks; with --world-size all nodes meet at the store host)");
  sub->add_option(
         "--endpoint,-e,--rdzv-endpoint", opt->endpoint,
         "The rendezvous store, as torchrun's --rdzv-endpoint (default: $PET_RDZV_ENDPOINT, else "
         "$MASTER_ADDR:$MASTER_PORT)")
      ->type_name("HOST:PORT");
  sub->add_option("--world-size,-n", opt->world_size,
                  "Number of NODES running this preflight (not ranks): the store host's preflight "
                  "listens on the "
                  "endpoint and waits for the others")
      ->type_name("N")
      ->check(CLI::Range(1u, 1u << 20));
  sub->add_option("--nnodes", opt->nnodes,
                  "As torchrun's --nnodes: the same as --world-size (N or N:N; default "
                  "$PET_NNODES when it is fixed)")
      ->type_name("N");
  sub->add_option("--nodes", opt->nodes,
                  "The nodes' host names, so that the missing ones are named (sets --world-size; "
                  "default: $SLURM_JOB_NODELIST, Slurm's hostlist syntax)")
      ->delimiter(',')
      ->type_name("H,...");
  sub->add_option(
         "--ranks", opt->ranks,
         "Processes that will connect to the store, for the backlog and open-file checks (default: "
         "$WORLD_SIZE, else $PET_NNODES x ($PET_NPROC_PER_NODE + 1), else --world-size)")
      ->type_name("N")
      ->check(CLI::Range(1ul, 1ul << 24));
  sub->add_option("--job-id", opt->job_id,
                  "The job this preflight is for: the store host turns away (and reports) hellos "
                  "of another job on its endpoint (default: $PET_RDZV_ID, else "
                  "$TORCHELASTIC_RUN_ID, else $SLURM_JOB_ID; none: every hello is welcome)")
      ->type_name("ID");
  sub->add_option("--timeout,-t", opt->timeout_s,
                  "Seconds to wait for the store (nodes) or for the nodes (store host)")
      ->type_name("S")
      ->check(CLI::Range(0.1, 86400.0));
  sub->add_option("--out,-o", opt->out,
                  "Also write DIR/preflight.<host>.json (created 0700; a trace directory)")
      ->type_name("DIR");
  sub->add_option("--format", opt->format, "Report format")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("text|json");
  return Command{sub, [opt] { return run_preflight_command(*opt); }};
}

}  // namespace rdzvscope::cli
