#include "asio_types.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::etcd::detail {

namespace ssl = boost::asio::ssl;
using boost::system::error_code;

TlsContext::TlsContext(const ClientOptions& options) : impl_(std::make_unique<Impl>()) {
    auto& ctx = impl_->ctx;
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    auto fail = [](const std::string& what, const std::string& path, const error_code& ec) {
        throw rdzv::StoreError("etcd: cannot load " + what + " '" + path + "': " + ec.message());
    };
    error_code ec;
    if (options.cacert.empty()) {
        ctx.set_default_verify_paths(ec);
        if (ec) fail("the system's CA certificates", "", ec);
    } else if (ctx.load_verify_file(options.cacert, ec); ec) {
        fail("CA certificate", options.cacert, ec);
    }
    if (options.cert.empty() != options.key.empty()) {
        throw rdzv::StoreError(
            "etcd: a client certificate needs its key and a key its certificate "
            "(cert '" +
            options.cert + "', key '" + options.key + "')");
    }
    if (!options.cert.empty()) {
        if (ctx.use_certificate_chain_file(options.cert, ec); ec) {
            fail("client certificate", options.cert, ec);
        }
        if (ctx.use_private_key_file(options.key, ssl::context::pem, ec); ec) {
            fail("client key", options.key, ec);
        }
        impl_->has_client_cert = true;
    }
}

TlsContext::~TlsContext() = default;

}  // namespace ptrun::etcd::detail
