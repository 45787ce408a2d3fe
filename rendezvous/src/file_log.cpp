#include "file_log.hpp"

#include <cstring>

#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::rdzv::detail {
namespace {

constexpr std::string_view kMagic = "PTRUNFS1";
constexpr std::size_t kRecordHead = 9;  // op, key length, value length

void put_le(std::string& out, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_le(std::string_view in, std::size_t at, std::size_t bytes) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes; ++i)
        v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
    return v;
}

bool known_op(char op) { return op == 'S' || op == 'A' || op == 'D' || op == 'Q' || op == 'P'; }

}  // namespace

std::string FileLog::header(std::uint64_t epoch) {
    std::string out(kMagic);
    put_le(out, epoch, 8);
    return out;
}

std::uint64_t FileLog::epoch_of(std::string_view bytes, const std::string& path) {
    if (bytes.size() < kFileHeaderBytes || bytes.substr(0, kMagic.size()) != kMagic) {
        throw StoreError("rendezvous file " + path +
                         ": not a ptrun rendezvous file (its first bytes are not PTRUNFS1); "
                         "expected a path no other program writes");
    }
    return get_le(bytes, kMagic.size(), 8);
}

std::string FileLog::record(FileOp op, std::string_view key, std::string_view value) {
    std::string out;
    out.reserve(kRecordHead + key.size() + value.size());
    out.push_back(static_cast<char>(op));
    put_le(out, key.size(), 4);
    put_le(out, value.size(), 4);
    out.append(key);
    out.append(value);
    return out;
}

std::size_t FileLog::apply_records(std::string_view bytes, const std::string& path,
                                   std::uint64_t offset) {
    std::size_t at = 0;
    while (bytes.size() - at >= kRecordHead) {
        const char op = bytes[at];
        const auto key_len = get_le(bytes, at + 1, 4);
        const auto value_len = get_le(bytes, at + 5, 4);
        if (!known_op(op) || key_len > kMaxFileKeyBytes || value_len > kMaxFileValueBytes) {
            throw StoreError("rendezvous file " + path + ": no record can start at byte " +
                             std::to_string(offset + at) +
                             " (the file is damaged or another program wrote to it)");
        }
        const std::size_t size = kRecordHead + key_len + value_len;
        if (bytes.size() - at < size) break;  // torn: its writer died while writing it
        apply(static_cast<FileOp>(op), std::string(bytes.substr(at + kRecordHead, key_len)),
              std::string(bytes.substr(at + kRecordHead + key_len, value_len)));
        at += size;
    }
    return at;
}

void FileLog::apply(FileOp op, std::string key, std::string value) {
    switch (op) {
        case FileOp::Set: {
            auto it = values.find(key);
            if (it != values.end()) {
                live_ -= it->second.size();
                live_ += value.size();
                it->second = std::move(value);
            } else {
                live_ += key.size() + value.size();
                values.emplace(std::move(key), std::move(value));
            }
            return;
        }
        case FileOp::Append: {
            auto [it, fresh] = values.try_emplace(std::move(key));
            if (fresh) live_ += it->first.size();
            live_ += value.size();
            it->second.append(value);
            return;
        }
        case FileOp::Delete: {
            auto it = values.find(key);
            if (it == values.end()) return;
            live_ -= it->first.size() + it->second.size();
            values.erase(it);
            return;
        }
        case FileOp::Push: {
            live_ += key.size() + value.size();
            queues[std::move(key)].push_back(std::move(value));
            return;
        }
        case FileOp::Pop: {
            auto q = queues.find(key);
            if (q == queues.end() || q->second.empty()) return;
            live_ -= q->first.size() + q->second.front().size();
            q->second.pop_front();
            if (q->second.empty()) queues.erase(q);
            return;
        }
    }
}

std::string FileLog::snapshot(std::uint64_t epoch) const {
    std::string out = header(epoch);
    out.reserve(kFileHeaderBytes + live_ + kRecordHead * (values.size() + queues.size()));
    for (const auto& [key, value] : values) out += record(FileOp::Set, key, value);
    for (const auto& [key, queue] : queues) {
        for (const auto& value : queue) out += record(FileOp::Push, key, value);
    }
    return out;
}

void FileLog::clear() noexcept {
    values.clear();
    queues.clear();
    live_ = 0;
}

}  // namespace ptrun::rdzv::detail
