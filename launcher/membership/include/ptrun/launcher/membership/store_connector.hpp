#pragma once
/// How the rendezvous session and coordinator open their store connections: a TCP client in
/// ptrun, any rdzv::Store (an InMemoryStore handle) in unit tests.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "ptrun/etcd/etcd_store.hpp"
#include "ptrun/launcher/cli/endpoint.hpp"
#include "ptrun/rendezvous/store.hpp"

namespace ptrun::launcher {

/// Opens one connection, private to the thread that owns it (its interrupt() stops that thread);
/// `io_timeout` bounds each non-waiting call. Throws rdzv::StoreError (ConnectionLost when it
/// cannot connect in time).
using StoreConnector =
    std::function<std::unique_ptr<rdzv::Store>(std::chrono::milliseconds io_timeout)>;

/// A connector opening TcpStoreClients to `store`, each connecting (with retries) within
/// `connect_timeout` at first and on the reconnect after a lost connection.
StoreConnector tcp_store_connector(HostPort store, std::chrono::milliseconds connect_timeout);

/// A connector opening EtcdStores on the etcd keys as given (no root), each with `client`'s
/// members and options, its io_timeout capped at the connection's; with `fence`, every write is
/// fenced (etcd_store.hpp).
StoreConnector etcd_store_connector(etcd::ClientOptions client,
                                    std::optional<etcd::Fence> fence = std::nullopt);

/// A connector opening FileStores on the rendezvous file `path` (store_type=file); io_timeout
/// does not apply (each call holds the file's lock for one read and one write).
StoreConnector file_store_connector(std::string path);

}  // namespace ptrun::launcher
