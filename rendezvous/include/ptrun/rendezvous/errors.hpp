#pragma once
/// The store's exception family. Every message names the operation, the key(s) and the numbers.

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::rdzv {

/// Base of every store failure (bad reply, rejected request, unsupported verb, ...).
class StoreError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// A blocking call ran out of time; carries the keys it waited for and how long it waited.
class StoreTimeout : public StoreError {
  public:
    /// Message: "<operation> timed out after <ms> ms waiting for 2 key(s): 'a', 'b'".
    StoreTimeout(std::string_view operation, std::vector<std::string> keys,
                 std::chrono::milliseconds waited);

    const std::vector<std::string>& keys() const noexcept { return keys_; }
    std::chrono::milliseconds waited() const noexcept { return waited_; }

  private:
    std::vector<std::string> keys_;
    std::chrono::milliseconds waited_;
};

/// A wait that Store::wake() cut short, before its time was up.
class StoreWoken : public StoreTimeout {
  public:
    using StoreTimeout::StoreTimeout;
};

/// A reply did not come within the client's io timeout: the connection was out of step and was
/// dropped (the next call reconnects).
class StoreNoReply : public StoreTimeout {
  public:
    using StoreTimeout::StoreTimeout;
};

/// The connection to the store server could not be made or broke (deadline, reset, EOF, garbage).
class ConnectionLost : public StoreError {
  public:
    using StoreError::StoreError;
};

/// Renders keys for messages: quoted, non-printable bytes as \xNN, at most 8 then "(+N more)".
std::string describe_keys(const std::vector<std::string>& keys);

}  // namespace ptrun::rdzv
