#include "ptrun/rendezvous/prefix_store.hpp"

namespace ptrun::rdzv {

PrefixStore::PrefixStore(std::string prefix, Store& inner)
    : prefix_(std::move(prefix)), inner_(inner) {}

std::string PrefixStore::full_key(std::string_view key) const {
    std::string out;
    out.reserve(prefix_.size() + 1 + key.size());
    out.append(prefix_).append("/").append(key);
    return out;
}

std::vector<std::string> PrefixStore::full_keys(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    out.reserve(keys.size());
    for (const auto& k : keys) out.push_back(full_key(k));
    return out;
}

void PrefixStore::set(std::string_view key, std::string_view value) {
    inner_.set(full_key(key), value);
}
std::string PrefixStore::get(std::string_view key, Duration timeout) {
    return inner_.get(full_key(key), timeout);
}
std::int64_t PrefixStore::add(std::string_view key, std::int64_t delta) {
    return inner_.add(full_key(key), delta);
}
std::string PrefixStore::compare_set(std::string_view key, std::string_view expected,
                                     std::string_view desired) {
    return inner_.compare_set(full_key(key), expected, desired);
}
bool PrefixStore::check(const std::vector<std::string>& keys) {
    return inner_.check(full_keys(keys));
}
void PrefixStore::wait(const std::vector<std::string>& keys, Duration timeout) {
    inner_.wait(full_keys(keys), timeout);
}
bool PrefixStore::delete_key(std::string_view key) { return inner_.delete_key(full_key(key)); }
std::int64_t PrefixStore::num_keys() { return inner_.num_keys(); }
void PrefixStore::append(std::string_view key, std::string_view value) {
    inner_.append(full_key(key), value);
}
std::vector<std::string> PrefixStore::multi_get(const std::vector<std::string>& keys,
                                                Duration timeout) {
    return inner_.multi_get(full_keys(keys), timeout);
}
std::vector<std::optional<std::string>> PrefixStore::peek(const std::vector<std::string>& keys) {
    return inner_.peek(full_keys(keys));
}

void PrefixStore::queue_push_many(std::string_view key, const std::vector<std::string>& values) {
    inner_.queue_push_many(full_key(key), values);
}
void PrefixStore::multi_set(const std::vector<std::string>& keys,
                            const std::vector<std::string>& values) {
    inner_.multi_set(full_keys(keys), values);
}
void PrefixStore::queue_push(std::string_view key, std::string_view value) {
    inner_.queue_push(full_key(key), value);
}
std::string PrefixStore::queue_pop(std::string_view key, Duration timeout) {
    return inner_.queue_pop(full_key(key), timeout);
}
std::int64_t PrefixStore::queue_len(std::string_view key) {
    return inner_.queue_len(full_key(key));
}
std::vector<std::string> PrefixStore::queue_pop_batch(std::string_view key, std::size_t max,
                                                      Duration timeout) {
    return inner_.queue_pop_batch(full_key(key), max, timeout);
}
void PrefixStore::interrupt() noexcept { inner_.interrupt(); }
std::vector<std::string> PrefixStore::list_keys() {
    const std::string head = prefix_ + "/";
    std::vector<std::string> out;
    for (auto& k : inner_.list_keys()) {
        if (k.size() >= head.size() && k.compare(0, head.size(), head) == 0) {
            out.push_back(k.substr(head.size()));
        }
    }
    return out;
}

}  // namespace ptrun::rdzv
