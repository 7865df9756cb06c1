#!/usr/bin/env bash
# run.sh GEN_JOB RDZVSCOPE WORKDIR [N]: generates an N-rank job (default 16384; 8 ranks per
# host) and times `rdzvscope analyze` on it: the JSON report alone, then with the timeline and
# the HTML page as well (wall time and peak memory of each; docs/performance.md has figures),
# then `rdzvscope watch` (CPU per refresh: the first, then two of unchanged files), and watch
# with its metrics on the same job while it hangs (every rank but the last blocked on the store
# in a call in flight: the per-rank blocked calls and who they wait for).
# The bar (issue 11): 131,072 ranks in at most 5 s and 1 GiB on the 2-core test machine.
set -euo pipefail
gen=$1 rdzvscope=$2 work=$3 n=${4:-16384}
rm -rf "$work/job" && mkdir -p "$work"
"$gen" "$work/job" "$n"
echo "analyze: $n trace files in $work/job ($(du -sh "$work/job" | cut -f1)), $(nproc) cores"
/usr/bin/time -f "analyze $n ranks, JSON: %e s wall, %M KiB max RSS" \
  "$rdzvscope" analyze "$work/job" --format json >"$work/diagnosis.json"
/usr/bin/time -f "analyze $n ranks, JSON + timeline + HTML: %e s wall, %M KiB max RSS" \
  "$rdzvscope" analyze "$work/job" --format json --timeline "$work/timeline.json" --html "$work/report.html" \
  >/dev/null
echo "timeline $(du -h "$work/timeline.json" | cut -f1), HTML $(du -h "$work/report.html" | cut -f1)"
python3 -c "import json,sys; v=json.load(open(sys.argv[1]))['verdict']; print('verdict:', v['class'], 'rank', v['initiating_rank'])" "$work/diagnosis.json"
# watch: the first refresh decodes every file, the later ones only files whose header moved.
"$rdzvscope" watch "$work/job" --count 3 --interval 0.2 --format json -v 2>&1 >"$work/watch.json" |
  grep "refresh:" | sed 's/^rdzvscope watch: /watch /'
# watch on the job while it hangs, metrics included: the wait-for model and one series per
# blocked rank at every refresh.
rm -rf "$work/hung" && "$gen" "$work/hung" "$n" hung
/usr/bin/time -f "watch (hung, --prom), the whole command (3 refreshes, 3 metrics files, the report): %U s user + %S s sys, %M KiB max RSS" \
  "$rdzvscope" watch "$work/hung" --count 3 --interval 0.2 --format json --prom "$work/hung.prom" -v 2>&1 \
  >"$work/watch-hung.json" | grep -E "refresh:|the whole command" | sed 's/^rdzvscope watch: /watch (hung, --prom) /'
python3 -c "import json,sys; print('hung:', json.load(open(sys.argv[1]))['waiting_on']['headline'])" "$work/watch-hung.json"
