#include "ptrun/launcher/cli/rdzv_backend.hpp"

#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {

std::string_view backend_name(RdzvBackend backend) {
    switch (backend) {
        case RdzvBackend::Static:
            return "static";
        case RdzvBackend::C10d:
            return "c10d";
    }
    return "static";  // not reached: every enumerator is a case
}

RdzvBackend parse_rdzv_backend(const RawValue& raw) {
    for (auto backend : {RdzvBackend::Static, RdzvBackend::C10d}) {
        if (raw.value == backend_name(backend)) return backend;
    }
    if (raw.value == "etcd" || raw.value == "etcd-v2") {
        throw NotSupportedError(as_given(Option::RdzvBackend, raw) +
                                ": the etcd backends are not supported; use c10d or static");
    }
    throw UsageError(as_given(Option::RdzvBackend, raw) + ": expected c10d or static");
}

}  // namespace ptrun::launcher
