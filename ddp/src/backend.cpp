#include "ptrun/ddp/backend.hpp"

#include <string>

#include "ptrun/ddp/errors.hpp"

namespace ptrun::ddp {

std::string_view backend_name(Backend backend) {
    switch (backend) {
        case Backend::Auto:
            return "auto";
        case Backend::Cpu:
            return "cpu";
        case Backend::Nccl:
            return "nccl";
    }
    return "?";
}

Backend parse_backend(std::string_view text) {
    for (auto backend : {Backend::Auto, Backend::Cpu, Backend::Nccl}) {
        if (text == backend_name(backend)) return backend;
    }
    throw CollectiveError("init_process_group: unknown backend '" + std::string(text) +
                          "' (expected cpu, nccl or auto)");
}

}  // namespace ptrun::ddp
