#include "ptrun/launcher/membership/store_connector.hpp"

#include <algorithm>

#include "ptrun/rendezvous/file_store.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"

namespace ptrun::launcher {

StoreConnector tcp_store_connector(HostPort store, std::chrono::milliseconds connect_timeout) {
    return [store = std::move(store), connect_timeout](std::chrono::milliseconds io_timeout) {
        rdzv::TcpStoreClientOptions c;
        c.host = store.host;
        c.port = store.port;
        c.connect_timeout = connect_timeout;
        c.io_timeout = io_timeout;
        return std::unique_ptr<rdzv::Store>(std::make_unique<rdzv::TcpStoreClient>(c));
    };
}

StoreConnector etcd_store_connector(etcd::ClientOptions client, std::optional<etcd::Fence> fence) {
    return [client = std::move(client),
            fence = std::move(fence)](std::chrono::milliseconds io_timeout) {
        etcd::EtcdStoreOptions o;
        o.client = client;
        o.client.io_timeout = std::min(o.client.io_timeout, io_timeout);
        o.fence = fence;
        return std::unique_ptr<rdzv::Store>(std::make_unique<etcd::EtcdStore>(std::move(o)));
    };
}

StoreConnector file_store_connector(std::string path) {
    return [path = std::move(path)](std::chrono::milliseconds) {
        return std::unique_ptr<rdzv::Store>(
            std::make_unique<rdzv::FileStore>(rdzv::FileStoreOptions{path, {}}));
    };
}

}  // namespace ptrun::launcher
