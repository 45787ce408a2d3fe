#include <catch2/catch.hpp>

#include "etcd_server.hpp"
#include "ptrun/etcd/client.hpp"
#include "ptrun/etcd/etcd_store.hpp"
#include "ptrun/rendezvous/errors.hpp"

using namespace ptrun::etcd;
using namespace ptrun::etcd::test;
using namespace std::chrono_literals;

TEST_CASE("etcd Client speaks HTTPS with a client certificate", "[etcd][client][tls]") {
    TempDir pki_dir("pki");
    TestPki pki(pki_dir.path());
    EtcdCluster etcd(1, &pki);

    Client c(etcd.client_options());
    c.put("/tls", "yes");
    CHECK(c.range("/tls").kvs.at(0).value == "yes");
    CHECK(c.watch("/tls", "", 1, 5s).size() == 1);
    CHECK(c.lease_keepalive(c.lease_grant(10)) > 0);

    EtcdStoreOptions store_options;
    store_options.client = etcd.client_options();
    store_options.root = "/tls-store/";
    EtcdStore store(store_options);
    store.set("k", "v");
    CHECK(store.get("k", 5s) == "v");

    SECTION("without the client certificate the member refuses, and says so") {
        auto options = etcd.client_options();
        options.cert.clear();
        options.key.clear();
        options.io_timeout = 2s;
        Client anonymous(options);
        CHECK_THROWS_WITH(anonymous.range("/tls"),
                          Catch::Contains("cannot reach etcd at 127.0.0.1:") &&
                              Catch::Contains("wants a client certificate"));
    }
    SECTION("a server the CA did not sign fails verification") {
        TempDir other_dir("pki2");
        TestPki other(other_dir.path());
        auto options = etcd.client_options();
        options.cacert = other.ca;
        Client wrong(options);
        CHECK_THROWS_WITH(wrong.range("/tls"), Catch::Contains("certificate verify failed"));
    }
    SECTION("plain HTTP to an HTTPS member fails as a transport error") {
        auto options = etcd.client_options();
        options.https = false;
        options.io_timeout = 2s;
        Client plain(options);
        CHECK_THROWS_AS(plain.range("/tls"), ptrun::rdzv::StoreError);
    }
}

TEST_CASE("etcd Client names an unreadable certificate file", "[etcd][client][tls]") {
    ClientOptions options;
    options.endpoints = {{"127.0.0.1", 2379}};
    options.https = true;
    options.cacert = "/nonexistent/ca.pem";
    CHECK_THROWS_WITH(Client(options), Catch::Contains("'/nonexistent/ca.pem'"));
    options.cacert.clear();
    options.cert = "/nonexistent/client.pem";
    CHECK_THROWS_WITH(Client(options), Catch::Contains("needs its key"));
}
