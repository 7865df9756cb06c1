// libFuzzer target: `rdzvscope analyze` end to end on mutated trace directories.
// Input: a mode byte, then pieces separated by kSplit. With two pieces or more the last one is
// a merged job log; the others (at most 8) become trace files p<i>.rzt of one directory.
// Mode bit 0: reseal the traces (fuzz_util.h) so mutated records get past the reader. Then
// load_traces(dir) + load_logs(log) + diagnose + every report (JSON, text, timeline, HTML,
// markdown), as the CLI runs them. Any crash, sanitizer report or escaping exception is a finding.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/log_facts.h"
#include "report/report.h"
#include "rules/rules.h"
#include "fuzz_util.h"

namespace {

constexpr std::string_view kSplit = "\n=RDZVSPLIT=\n";
constexpr std::size_t kMaxTraces = 8;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool reseal = (data[0] & 1) != 0;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);

  std::vector<std::string_view> pieces;
  for (;;) {
    const std::size_t at = rest.find(kSplit);
    if (at == std::string_view::npos) {
      pieces.push_back(rest);
      break;
    }
    pieces.push_back(rest.substr(0, at));
    rest.remove_prefix(at + kSplit.size());
  }
  std::string_view log;
  const bool has_log = pieces.size() >= 2;
  if (has_log) {
    log = pieces.back();
    pieces.pop_back();
  }
  if (pieces.size() > kMaxTraces) pieces.resize(kMaxTraces);

  static const std::string base = rdzvscope::fuzz::scratch_dir();
  static const std::string dir = [] {
    std::string d = base + "/traces";
    ::mkdir(d.c_str(), 0700);
    return d;
  }();
  static const std::string log_path = base + "/job.log";
  for (std::size_t i = 0; i < kMaxTraces; ++i) {
    const std::string p = dir + "/p" + std::to_string(i) + ".rzt";
    if (i >= pieces.size()) {
      ::unlink(p.c_str());
    } else if (reseal) {
      const auto sealed = rdzvscope::fuzz::reseal(pieces[i]);
      rdzvscope::fuzz::write_file(p, sealed.data(), sealed.size());
    } else {
      rdzvscope::fuzz::write_file(p, pieces[i].data(), pieces[i].size());
    }
  }
  std::vector<std::string> logs;
  if (has_log) {
    rdzvscope::fuzz::write_file(log_path, log.data(), log.size());
    logs.push_back(log_path);
  }

  const rdzvscope::TraceInputs traces = rdzvscope::load_traces({dir});
  const rdzvscope::LogFacts facts = rdzvscope::load_logs(logs);
  const rdzvscope::Context model(traces, facts);
  const rdzvscope::Diagnosis d = rdzvscope::diagnose(model);
  const std::string json = rdzvscope::diagnosis_json(d).dump(
      2, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string text = rdzvscope::diagnosis_text(d);
  // The other views read the same garbage: the timeline, the HTML page and the markdown.
  // The timeline is serialized by hand, event by event: it must still be JSON.
  const std::string timeline = rdzvscope::timeline_json(d, model);
  if (!nlohmann::json::accept(timeline)) __builtin_trap();
  // The live view and the metrics read the same model.
  const rdzvscope::JoinStatus live = rdzvscope::join_status(model, model.t0().value_or(0) + 5'000'000'000);
  const std::string prom = rdzvscope::prometheus_text(live, d, 0);
  const auto screen = rdzvscope::join_status_lines(live, d, 40);
  const std::string watch_json = rdzvscope::join_status_json(live, d).dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (prom.empty() || screen.empty() || watch_json.empty()) __builtin_trap();
  const std::string html = rdzvscope::diagnosis_html(d);
  const std::string markdown = rdzvscope::diagnosis_markdown(d, model);
  if (json.empty() || text.empty() || timeline.empty() || html.empty() || markdown.empty()) __builtin_trap();
  return 0;
}
