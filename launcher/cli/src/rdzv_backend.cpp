#include "ptrun/launcher/cli/rdzv_backend.hpp"

#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {

std::string_view backend_name(RdzvBackend backend) {
    switch (backend) {
        case RdzvBackend::Static:
            return "static";
        case RdzvBackend::C10d:
            return "c10d";
        case RdzvBackend::Etcd:
            return "etcd-v2";
    }
    return "static";  // not reached: every enumerator is a case
}

RdzvBackend parse_rdzv_backend(const RawValue& raw) {
    for (auto backend : {RdzvBackend::Static, RdzvBackend::C10d, RdzvBackend::Etcd}) {
        if (raw.value == backend_name(backend)) return backend;
    }
    if (raw.value == "etcd") return RdzvBackend::Etcd;  // torchrun's first etcd backend's name
    throw UsageError(as_given(Option::RdzvBackend, raw) +
                     ": expected static, c10d or etcd-v2 (or etcd, its older name)");
}

}  // namespace ptrun::launcher
