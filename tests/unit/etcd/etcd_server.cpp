#include "etcd_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::etcd::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

void run_openssl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"openssl"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = ptrun::test::run_child(argv, {}, 30s);
    if (r.exit_code != 0) throw std::runtime_error("openssl failed: " + r.output);
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path);
}

/// A P-256 key and a certificate signed by the CA in `dir`, with extensions `ext`.
void issue(const std::string& dir, const std::string& name, const std::string& cn,
           const std::string& ext) {
    const auto base = dir + "/" + name;
    run_openssl({"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                 base + ".key"});
    run_openssl(
        {"req", "-new", "-key", base + ".key", "-subj", "/CN=" + cn, "-out", base + ".csr"});
    write_file(base + ".ext", ext);
    run_openssl({"x509", "-req", "-in", base + ".csr", "-CA", dir + "/ca.crt", "-CAkey",
                 dir + "/ca.key", "-CAcreateserial", "-days", "2", "-extfile", base + ".ext",
                 "-out", base + ".crt"});
}

}  // namespace

TempDir::TempDir(const std::string& tag) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/ptrun-" + tag + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::runtime_error("mkdtemp " + pattern + " failed");
    }
    path_ = pattern;
}

TempDir::~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

int loopback_listener(std::uint16_t& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("socket failed");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 16) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        ::close(fd);
        throw std::runtime_error("listening on 127.0.0.1:0 failed");
    }
    port = ntohs(a.sin_port);
    return fd;
}

std::uint16_t free_port() {
    std::uint16_t port = 0;
    ::close(loopback_listener(port));
    return port;
}

TestPki::TestPki(const std::string& dir) {
    ca = dir + "/ca.crt";
    run_openssl({"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                 dir + "/ca.key"});
    run_openssl({"req", "-x509", "-new", "-key", dir + "/ca.key", "-subj", "/CN=ptrun-test-ca",
                 "-days", "2", "-out", ca});
    issue(dir, "server", "127.0.0.1",
          "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n");
    issue(dir, "client", "ptrun-test-client", "extendedKeyUsage=clientAuth\n");
    server_cert = dir + "/server.crt";
    server_key = dir + "/server.key";
    client_cert = dir + "/client.crt";
    client_key = dir + "/client.key";
}

EtcdCluster::EtcdCluster(int members, const TestPki* pki) : dir_("etcd"), pki_(pki) {
    std::string initial;
    for (int i = 0; i < members; ++i) {
        Member m;
        m.name = "m" + std::to_string(i);
        m.client_port = free_port();
        m.peer_port = free_port();
        initial +=
            (i == 0 ? "" : ",") + m.name + "=http://127.0.0.1:" + std::to_string(m.peer_port);
        members_.push_back(std::move(m));
    }
    const std::string scheme = pki != nullptr ? "https" : "http";
    for (auto& m : members_) {
        const auto client_url = scheme + "://127.0.0.1:" + std::to_string(m.client_port);
        const auto peer_url = "http://127.0.0.1:" + std::to_string(m.peer_port);
        std::vector<std::string> argv{
            "etcd", "--name=" + m.name, "--data-dir=" + dir() + "/" + m.name + ".data",
            "--listen-client-urls=" + client_url, "--advertise-client-urls=" + client_url,
            "--listen-peer-urls=" + peer_url, "--initial-advertise-peer-urls=" + peer_url,
            "--initial-cluster=" + initial, "--initial-cluster-state=new",
            "--initial-cluster-token=ptrun-test", "--logger=zap", "--log-level=warn",
            "--log-outputs=" + dir() + "/" + m.name + ".log",
            // A lone member elects itself at once; a cluster re-elects within a second.
            members == 1 ? "--heartbeat-interval=10" : "--heartbeat-interval=50",
            members == 1 ? "--election-timeout=100" : "--election-timeout=500"};
        if (pki != nullptr) {
            argv.insert(argv.end(),
                        {"--cert-file=" + pki->server_cert, "--key-file=" + pki->server_key,
                         "--trusted-ca-file=" + pki->ca, "--client-cert-auth"});
        }
        m.process = std::make_unique<ptrun::test::ChildProcess>(argv);
    }
    wait_ready(20s);
}

EtcdCluster::~EtcdCluster() {
    for (auto& m : members_) m.process.reset();  // SIGKILL and reap, before the dir goes
}

Endpoint EtcdCluster::endpoint(int member) const {
    return Endpoint{"127.0.0.1", members_.at(static_cast<std::size_t>(member)).client_port};
}

ClientOptions EtcdCluster::client_options() const {
    ClientOptions o;
    for (std::size_t i = 0; i < members_.size(); ++i)
        o.endpoints.push_back(endpoint(static_cast<int>(i)));
    if (pki_ != nullptr) {
        o.https = true;
        o.cacert = pki_->ca;
        o.cert = pki_->client_cert;
        o.key = pki_->client_key;
    }
    return o;
}

std::map<std::string, long> EtcdCluster::by_method(const std::string& metric, int member) const {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("by_method: socket failed");
    timeval bound{5, 0};  // a member that does not answer fails the test, never hangs it
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(endpoint(member).port);
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::string text;
    const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::connect(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0 &&
        ::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
        char buf[65536];
        for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0 && text.size() < (64u << 20);)
            text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    if (text.find(metric + "{") == std::string::npos)
        throw std::runtime_error("by_method: no " + metric + " in etcd's /metrics");
    std::map<std::string, long> out;
    std::size_t at_line = 0;
    while (at_line < text.size()) {
        std::size_t end = text.find('\n', at_line);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(at_line, end - at_line);
        at_line = end + 1;
        if (line.rfind(metric + "{", 0) != 0) continue;
        const auto m = line.find("grpc_method=\"");
        const auto space = line.rfind(' ');
        if (m == std::string::npos || space == std::string::npos) continue;
        const auto name_end = line.find('"', m + 13);
        out[line.substr(m + 13, name_end - m - 13)] += std::atol(line.c_str() + space + 1);
    }
    return out;
}

void EtcdCluster::kill(int member) {
    members_.at(static_cast<std::size_t>(member)).process.reset();
}

void EtcdCluster::wait_ready(std::chrono::milliseconds timeout) {
    // Startup has no event to wait on from outside: a short retry loop under a deadline.
    const auto deadline = Clock::now() + timeout;
    std::string last;
    for (std::size_t i = 0; i < members_.size(); ++i) {
        auto options = client_options();
        options.endpoints = {endpoint(static_cast<int>(i))};
        options.io_timeout = 2s;
        Client client(options);
        for (;;) {
            try {
                client.range("ptrun-test-ready");
                break;
            } catch (const rdzv::StoreError& e) {
                last = e.what();
            }
            if (auto ended = members_[i].process->wait(0ms)) {
                throw std::runtime_error("etcd " + members_[i].name + " exited (code " +
                                         std::to_string(ended->exit_code) + "): " + ended->output);
            }
            if (Clock::now() > deadline) {
                throw std::runtime_error("etcd " + members_[i].name + " not ready after " +
                                         std::to_string(timeout.count()) + " ms: " + last);
            }
            std::this_thread::sleep_for(20ms);
        }
    }
}

}  // namespace ptrun::etcd::test
