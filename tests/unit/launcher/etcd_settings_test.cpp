#include "ptrun/launcher/cli/etcd_settings.hpp"

#include <catch2/catch.hpp>
#include <fstream>

#include "ptrun/launcher/cli/usage_error.hpp"
#include "temp_dir.hpp"

using namespace ptrun::launcher;
using ptrun::launcher::test::TempDir;

namespace {

EtcdSettings settings(const std::string& endpoints, const std::string& conf = "") {
    return etcd_settings(endpoints, parse_rdzv_conf(conf));
}

/// A PEM-looking file in `dir`; returns its path.
std::string pem(const TempDir& dir, const std::string& name) {
    auto path = (dir.path / name).string();
    std::ofstream(path) << "-----BEGIN CERTIFICATE-----\n";
    return path;
}

}  // namespace

TEST_CASE("etcd settings: every member in order, 2379 when the port is missing",
          "[launcher][config][etcd]") {
    auto s = settings("etcd1:2379,etcd2,[fd00::1]:2380,[::1],10.0.0.7:12379");
    CHECK(s.endpoints == std::vector<HostPort>{{"etcd1", 2379},
                                               {"etcd2", 2379},
                                               {"fd00::1", 2380},
                                               {"::1", 2379},
                                               {"10.0.0.7", 12379}});
    CHECK_FALSE(s.https);
    CHECK(s.cacert.empty());
    CHECK(s.cert.empty());
    CHECK(s.key.empty());
    CHECK(settings("one").endpoints == std::vector<HostPort>{{"one", 2379}});
    CHECK(settings(" a:1 , b ").endpoints == std::vector<HostPort>{{"a", 1}, {"b", 2379}});
}

TEST_CASE("etcd settings: a member may be an URL whose scheme sets the protocol",
          "[launcher][config][etcd]") {
    auto s = settings("https://a:2379,https://b/,c");
    CHECK(s.https);
    CHECK(s.endpoints == std::vector<HostPort>{{"a", 2379}, {"b", 2379}, {"c", 2379}});
    CHECK_FALSE(settings("http://a:1,b").https);
    CHECK(settings("HTTPS://[::1]:2379").endpoints == std::vector<HostPort>{{"::1", 2379}});
    CHECK(settings("https://a", "protocol=https").https);
    CHECK_FALSE(settings("http://a", "protocol=http").https);
}

TEST_CASE("etcd settings: protocol is http or https, read as torchrun reads it",
          "[launcher][config][etcd]") {
    CHECK(settings("a", "protocol=https").https);
    CHECK(settings("a", "protocol=HTTPS").https);
    CHECK(settings("a", "protocol= https ").https);
    CHECK_FALSE(settings("a", "protocol=http").https);
    CHECK_THROWS_WITH(settings("a", "protocol=ftp"),
                      "--rdzv-conf protocol=ftp: expected http or https");
    CHECK_THROWS_WITH(settings("a", "protocol="), Catch::Contains("--rdzv-conf protocol=:"));
}

TEST_CASE("etcd settings: a malformed member list names the list and the member",
          "[launcher][config][etcd]") {
    CHECK_THROWS_WITH(settings(""),
                      Catch::Contains("--rdzv-endpoint '': expected the etcd members"));
    CHECK_THROWS_WITH(settings("a,,b"),
                      "--rdzv-endpoint 'a,,b': member 2 is empty (expected "
                      "HOST[:PORT],HOST[:PORT],...)");
    CHECK_THROWS_WITH(settings("a,"), Catch::Contains("'a,': member 2 is empty"));
    CHECK_THROWS_WITH(settings(",a"), Catch::Contains("member 1 is empty"));
    CHECK_THROWS_WITH(settings("a,b:x"),
                      "--rdzv-endpoint 'a,b:x': member 'b:x': expected "
                      "HOST[:PORT] with PORT from 1 to 65535");
    CHECK_THROWS_WITH(settings("a:70000"),
                      "--rdzv-endpoint 'a:70000': expected HOST[:PORT] "
                      "with PORT from 1 to 65535");
    CHECK_THROWS_WITH(settings("a,b:0"), Catch::Contains("member 'b:0': expected a port from 1"));
    CHECK_THROWS_WITH(settings("a,[::1"), Catch::Contains("member '[::1'"));
    CHECK_THROWS_WITH(settings("a,:2379"), Catch::Contains("member ':2379'"));
    CHECK_THROWS_WITH(settings("a:2379,b,A"),
                      "--rdzv-endpoint 'a:2379,b,A': members 'a:2379' and "
                      "'A' are the same member (A:2379); expected each once");
    CHECK_THROWS_WITH(settings("http://b,b:2379"),
                      Catch::Contains("members 'http://b' and 'b:2379'"));
    CHECK_THROWS_WITH(settings("ftp://a"),
                      "--rdzv-endpoint 'ftp://a': expected http:// or "
                      "https:// before HOST[:PORT]");
    CHECK_THROWS_WITH(settings("http://a/v3"), Catch::Contains("without a path"));
    CHECK_THROWS_WITH(settings("https://"), "--rdzv-endpoint 'https://': expected HOST[:PORT]");
}

TEST_CASE("etcd settings: schemes that disagree with each other or with protocol are refused",
          "[launcher][config][etcd]") {
    CHECK_THROWS_WITH(settings("http://a,https://b"),
                      "--rdzv-endpoint 'http://a,https://b': members 'http://a' and 'https://b' "
                      "name different protocols; expected one for every member");
    CHECK_THROWS_WITH(settings("https://a,b", "protocol=http"),
                      "--rdzv-endpoint 'https://a,b': member 'https://a' says https but "
                      "--rdzv-conf protocol=http; expected one protocol");
    CHECK_THROWS_WITH(settings("http://a", "protocol=https"),
                      Catch::Contains("'http://a' says http") && Catch::Contains("protocol=https"));
}

TEST_CASE("etcd settings: TLS files with torchrun's names and their aliases",
          "[launcher][config][etcd]") {
    TempDir dir;
    const auto ca = pem(dir, "ca.pem"), crt = pem(dir, "c.pem"), key = pem(dir, "k.pem");
    auto s = settings("a", "protocol=https,cacert=" + ca + ",cert=" + crt + ",key=" + key);
    CHECK(s.https);
    CHECK(s.cacert == ca);
    CHECK(s.cert == crt);
    CHECK(s.key == key);
    s = settings("https://a", "ca_cert=" + ca + ",ssl_cert=" + crt + ",ssl_cert_key=" + key);
    CHECK(s.cacert == ca);
    CHECK(s.cert == crt);
    CHECK(s.key == key);
    CHECK(settings("a", "protocol=https,cacert=" + ca).cert.empty());
    CHECK(settings("a", "protocol=https,cacert=" + ca + ",ca_cert=" + ca).cacert == ca);
    CHECK(settings("a", "protocol=https").cacert.empty());  // the system's CAs
}

TEST_CASE("etcd settings: TLS files that cannot be used are refused naming the key",
          "[launcher][config][etcd]") {
    TempDir dir;
    const auto ca = pem(dir, "ca.pem"), crt = pem(dir, "c.pem"), key = pem(dir, "k.pem");
    const auto missing = (dir.path / "missing.pem").string();
    CHECK_THROWS_WITH(settings("a", "protocol=https,cert=" + crt),
                      "--rdzv-conf cert=" + crt +
                          ": expected key=FILE too (the client certificate's private key)");
    CHECK_THROWS_WITH(settings("a", "protocol=https,ssl_cert_key=" + key),
                      Catch::Contains("--rdzv-conf ssl_cert_key=" + key + ": expected cert=FILE"));
    CHECK_THROWS_WITH(
        settings("a", "protocol=https,cacert=" + missing),
        "--rdzv-conf cacert=" + missing + ": cannot read it: No such file or directory");
    CHECK_THROWS_WITH(settings("a", "protocol=https,cert=" + crt + ",key=" + missing),
                      Catch::Contains("--rdzv-conf key=" + missing + ": cannot read it"));
    CHECK_THROWS_WITH(settings("a", "protocol=https,cacert=" + dir.path.string()),
                      Catch::Contains("not a regular file"));
    CHECK_THROWS_WITH(settings("a", "protocol=https,cacert="),
                      "--rdzv-conf cacert=: expected the path of a PEM file");
    CHECK_THROWS_WITH(settings("a", "protocol=https,cacert=" + ca + ",ca_cert=" + crt),
                      Catch::Contains("--rdzv-conf cacert=" + ca + " and ca_cert=" + crt +
                                      ": expected one of them"));
}

TEST_CASE("etcd settings: TLS files need https", "[launcher][config][etcd]") {
    TempDir dir;
    const auto ca = pem(dir, "ca.pem");
    CHECK_THROWS_WITH(
        settings("a", "cacert=" + ca),
        "--rdzv-conf cacert=" + ca +
            ": TLS files need protocol=https, but the protocol is http (the default)");
    CHECK_THROWS_WITH(settings("a", "protocol=http,ca_cert=" + ca),
                      Catch::Contains("TLS files need protocol=https, but --rdzv-conf "
                                      "protocol=http says http"));
    CHECK_THROWS_WITH(settings("http://a", "cacert=" + ca),
                      Catch::Contains("but member 'http://a' says http"));
    // The protocol is checked before the files are read: a missing file over http says http.
    CHECK_THROWS_WITH(settings("a", "cacert=/no/such.pem"), Catch::Contains("protocol=https"));
}

TEST_CASE("etcd settings: which --rdzv-conf keys are etcd's", "[launcher][config][etcd]") {
    for (auto key : {"protocol", "cacert", "ca_cert", "cert", "ssl_cert", "key", "ssl_cert_key"})
        CHECK(is_etcd_conf_key(key));
    for (auto key : {"join_timeout", "is_host", "key_file", "endpoint", ""})
        CHECK_FALSE(is_etcd_conf_key(key));
}
