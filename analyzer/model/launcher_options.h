// torchrun's options as an agent's command line (the trace header's cmdline) gives them: the
// rendezvous settings that must agree across nodes (rule_config_mismatch) and the number of
// nodes the job expects (Context::find_missing_agents).
#pragma once

#include <map>
#include <optional>
#include <string>

namespace rdzvscope {

// "--rdzv-endpoint X", "--rdzv-endpoint=X", "--rdzv_endpoint X" -> {"rdzv-endpoint": "X"}, for
// rdzv-endpoint, rdzv-id, rdzv-backend, nnodes, master-addr and master-port; the first of each.
std::map<std::string, std::string> torchrun_options(const std::string& cmdline);

// The nodes a rendezvous needs before it completes: --nnodes N, or MIN of --nnodes MIN:MAX.
// nullopt when the option is missing or not a number in 1..1,048,576.
std::optional<int> torchrun_min_nodes(const std::map<std::string, std::string>& options);

}  // namespace rdzvscope
