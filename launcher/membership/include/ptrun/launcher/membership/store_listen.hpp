#pragma once
/// Where the multi-node store host listens: only on the address the other nodes reach it at (the
/// rendezvous endpoint), never on every interface when the endpoint says otherwise (a loopback
/// endpoint must not open the store to the network).

#include <string>
#include <vector>

namespace ptrun::launcher {

/// One address the endpoint's host resolves to on this machine.
struct ResolvedAddress {
    std::string text;    ///< numeric form
    bool local = false;  ///< an address of this machine (it can be bound here)
    bool loopback = false;
};

/// The choice: one address, or every interface (`address` empty) with the reason in `why`.
struct ListenChoice {
    std::string address;
    std::string why;
};

/// Pure rule. A numeric endpoint is listened on as it is. A name is listened on at the address it
/// resolves to here (the first local one, non-loopback first); a name that resolves here only to
/// loopback is listened on there too, unless it is this machine's own hostname (Debian maps that
/// to 127.0.1.1, which the other nodes cannot reach): then, and when no resolved address is
/// local (is_host=true), every interface.
ListenChoice choose_listen_address(const std::string& endpoint_host, bool numeric,
                                   const std::vector<ResolvedAddress>& resolved,
                                   const std::string& own_hostname);

/// Resolves `host` on this machine (numeric forms without a lookup) and tells each address's kind.
/// Sets `numeric` when `host` is an IP literal.
std::vector<ResolvedAddress> resolve_for_listen(const std::string& host, bool& numeric);

/// A listening TCP socket on `address` (empty: every interface, IPv6 dual-stack when `v6`) at
/// `port`, or -1 with errno set (EADDRINUSE: another process on this machine holds it).
int listen_on(const std::string& address, std::uint16_t port, bool v6);

}  // namespace ptrun::launcher
