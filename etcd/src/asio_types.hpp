#pragma once
/// The Asio objects behind Loop and TlsContext (transport.hpp), for the files that compile Asio.

// Boost 1.74 Asio under g++ 12 in C++20 needs <utility> before it (rendezvous/src/asio.hpp).
#include <utility>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>

#include "transport.hpp"

namespace ptrun::etcd::detail {

struct Loop::Impl {
    boost::asio::io_context io{1};
};

struct TlsContext::Impl {
    boost::asio::ssl::context ctx{boost::asio::ssl::context::tls_client};
    bool has_client_cert = false;
};

}  // namespace ptrun::etcd::detail
