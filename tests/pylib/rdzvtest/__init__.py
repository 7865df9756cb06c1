"""Helpers shared by the Python test scripts of tests/ (standard library only, Python >= 3.8).

ctest puts tests/pylib on PYTHONPATH (rdzvscope_python_tests() in tests/CMakeLists.txt); a
script run by hand adds it itself when `rdzvtest` is not importable.

    ports        free_port, free_ports: free TCP ports on 127.0.0.1
    checks       Fail, check, expect and the exit/text assertions on launched processes, log,
                 finish_scenario
    cli          running the rdzvscope binary: run_cli (clean environment), dump (parsed
                 `rdzvscope dump`), the case driver of the CLI tests
    traces       queries on parsed dump output: rank_of, events, port_of, wall_ns, ...
    trace_patch  rewriting fields of real trace files (run id, host, clock, addresses)
    launch       launching jobs: job_env, Proc, Launcher (waiting, terminating, dump, analyze),
                 torch_version, torchrun_cmd, RANK_SCRIPT; leaving nothing behind:
                 become_subreaper, kill_descendants, reap_orphans
    report       check_timeline_file: the Perfetto timeline's validator
    cluster      the test cluster (tests/cluster/cluster.sh): Cluster (up, exec_prefix, run_on,
                 down), missing_requirements
    preflight    running `rdzvscope preflight` on cluster hosts and reading its reports
    corpus       the labelled log corpus of tests/corpus: read_manifest, analyze_logs, judge, score
    scenarios    the scenario list of tests/pylib/scenarios.txt (also read by CMake)
    retries      note_retry: the harness's own retries, counted for the end of the run
    e2e          the real PyTorch fault scenarios of tests/e2e/harness.py, also run by
                 tests/golden/capture.py; its launcher (Harness) and fault makers (network
                 namespaces, node_view_prefix: a node's own hosts file and host name) also
                 serve the fault matrix, tests/matrix
"""
