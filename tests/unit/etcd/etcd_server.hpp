#pragma once
/// Real etcd members for the tests: started on 127.0.0.1 with free ports and a fresh data
/// directory, waited for (bounded), and killed, reaped and deleted by the destructor whatever
/// the test did. Needs /usr/bin/etcd (Debian's etcd-server) and, for TLS, the openssl command.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "ptrun/etcd/client.hpp"

namespace ptrun::etcd::test {

/// A directory under $TMPDIR (or /tmp), removed with everything in it by the destructor.
class TempDir {
  public:
    explicit TempDir(const std::string& tag);
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

/// A port nothing listens on now (bound to 127.0.0.1:0 and released).
std::uint16_t free_port();

/// A socket listening on 127.0.0.1 at an ephemeral port (backlog 16); sets `port`. Throws
/// std::runtime_error when it cannot.
int loopback_listener(std::uint16_t& port);

/// A CA, a server certificate for IP 127.0.0.1 and a client certificate, made with openssl.
struct TestPki {
    explicit TestPki(const std::string& dir);
    std::string ca, server_cert, server_key, client_cert, client_key;
};

/// A cluster of `members` etcd processes on 127.0.0.1 (one by default), serving HTTPS with
/// client-certificate authentication when `pki` is given.
class EtcdCluster {
  public:
    explicit EtcdCluster(int members = 1, const TestPki* pki = nullptr);
    ~EtcdCluster();
    EtcdCluster(const EtcdCluster&) = delete;
    EtcdCluster& operator=(const EtcdCluster&) = delete;

    Endpoint endpoint(int member = 0) const;
    /// Options for a client of every member (with the client certificate under TLS).
    ClientOptions client_options() const;
    /// The requests member `member` has handled so far, by gRPC method ("Put", "Txn", ...),
    /// from its /metrics (plain HTTP only). Throws std::runtime_error when it cannot read them.
    std::map<std::string, long> handled(int member = 0) const {
        return by_method("grpc_server_handled_total", member);
    }
    /// The calls member `member` has started so far, by gRPC method: a watch stream counts
    /// when it opens ("handled" counts it when it ends).
    std::map<std::string, long> started(int member = 0) const {
        return by_method("grpc_server_started_total", member);
    }
    /// The sums of counter `metric` from member `member`'s /metrics by its grpc_method label.
    std::map<std::string, long> by_method(const std::string& metric, int member = 0) const;
    /// How many more calls of `method` counts `now` has than `before` (two of the maps above).
    static long calls_since(const std::map<std::string, long>& before,
                            const std::map<std::string, long>& now, const std::string& method) {
        auto of = [&method](const std::map<std::string, long>& m) {
            const auto it = m.find(method);
            return it == m.end() ? 0L : it->second;
        };
        return of(now) - of(before);
    }
    /// SIGKILLs member `member` and reaps it.
    void kill(int member);
    /// The temporary directory (data directories, logs, certificates).
    const std::string& dir() const { return dir_.path(); }

  private:
    struct Member {
        std::string name;
        std::uint16_t client_port = 0;
        std::uint16_t peer_port = 0;
        std::unique_ptr<ptrun::test::ChildProcess> process;
    };
    void wait_ready(std::chrono::milliseconds timeout);

    TempDir dir_;
    const TestPki* pki_;
    std::vector<Member> members_;
};

}  // namespace ptrun::etcd::test
