#pragma once
/// The client options the store tests connect with.

#include <chrono>
#include <cstdint>

#include "ptrun/rendezvous/dialect.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"

namespace ptrun::rdzv::test {

/// A client of 127.0.0.1:`port` in `dialect`, with 10 s to connect and for each reply.
inline TcpStoreClientOptions client_options(std::uint16_t port, Dialect dialect = Dialect::Modern) {
    TcpStoreClientOptions o;
    o.port = port;
    o.dialect = dialect;
    o.connect_timeout = std::chrono::seconds(10);
    o.io_timeout = std::chrono::seconds(10);
    return o;
}

}  // namespace ptrun::rdzv::test
