#include "ptrun/placement/binding_report.hpp"

namespace ptrun::placement {

std::string binding_report_line(const WorkerPlacement& w) {
    std::string line = "[" + w.host + "] rank " + std::to_string(w.rank) + " (local " +
                       std::to_string(w.local_rank) + "): cpus " + to_list(w.cpus) +
                       (w.bound ? " bound" : " inherited") + ", memory ";
    if (w.mems.empty()) {
        line += "default";
    } else {
        line +=
            std::string("preferred on node") + (w.mems.size() > 1 ? "s " : " ") + to_list(w.mems);
    }
    line += ", gpus " + (w.gpus.empty() ? std::string("none") : w.gpus);
    return line;
}

}  // namespace ptrun::placement
