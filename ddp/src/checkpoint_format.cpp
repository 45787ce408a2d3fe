// The checkpoint file format: encoding and verified decoding (no I/O).
#include "checkpoint_format.hpp"

#include <cstring>

namespace ptrun::ddp::detail {
namespace {

constexpr char kMagic[8] = {'P', 'T', 'R', 'N', 'C', 'K', 'P', 'T'};
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8;
constexpr std::size_t kMaxNameBytes = 4096;

template <class T>
void put(std::string& out, T value) {
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        out.push_back(static_cast<char>(static_cast<unsigned char>(value >> (8 * i))));
    }
}

class Reader {
  public:
    Reader(std::string_view data, const std::string& what) : data_(data), what_(what) {}

    template <class T>
    T get(const char* field) {
        need(sizeof(T), field);
        std::uint64_t value = 0;
        for (std::size_t i = 0; i < sizeof(T); ++i) {
            value |= std::uint64_t{static_cast<unsigned char>(data_[pos_ + i])} << (8 * i);
        }
        pos_ += sizeof(T);
        return static_cast<T>(value);
    }

    std::string_view bytes(std::size_t n, const char* field) {
        need(n, field);
        auto out = data_.substr(pos_, n);
        pos_ += n;
        return out;
    }

    std::size_t left() const { return data_.size() - pos_; }

  private:
    void need(std::size_t n, const char* field) const {
        if (data_.size() - pos_ < n) {
            throw CheckpointError(what_ + ": truncated: " + field + " needs " + std::to_string(n) +
                                  " bytes at offset " + std::to_string(pos_) + ", " +
                                  std::to_string(data_.size() - pos_) + " left");
        }
    }

    std::string_view data_;
    const std::string& what_;
    std::size_t pos_ = 0;
};

}  // namespace

std::uint64_t fnv1a64(std::string_view data) {
    std::uint64_t h = 14695981039346656037ULL;
    for (char ch : data) {
        const auto c = static_cast<unsigned char>(ch);
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h;
}

std::string encode_checkpoint(const Checkpoint& ckpt) {
    std::string out(kMagic, sizeof kMagic);
    put<std::uint32_t>(out, kCheckpointVersion);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(ckpt.buffers.size()));
    put<std::uint64_t>(out, ckpt.step);
    put<std::uint64_t>(out, ckpt.epoch);
    for (const auto& [name, values] : ckpt.buffers) {
        if (name.size() > kMaxNameBytes) {
            throw CheckpointError("checkpoint buffer name of " + std::to_string(name.size()) +
                                  " bytes: the limit is " + std::to_string(kMaxNameBytes));
        }
        put<std::uint32_t>(out, static_cast<std::uint32_t>(name.size()));
        out += name;
        put<std::uint64_t>(out, values.size());
        for (float v : values) {
            std::uint32_t bits;
            std::memcpy(&bits, &v, sizeof bits);
            put<std::uint32_t>(out, bits);
        }
    }
    put<std::uint64_t>(out, fnv1a64(out));
    return out;
}

Checkpoint decode_checkpoint(std::string_view data, const std::string& what) {
    if (data.size() < kHeaderBytes + 8) {
        throw CheckpointError(what + ": truncated: " + std::to_string(data.size()) +
                              " bytes, a checkpoint has at least " +
                              std::to_string(kHeaderBytes + 8));
    }
    if (std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) {
        throw CheckpointError(what + ": not a ptrun checkpoint (bad magic)");
    }
    Reader header(data, what);
    header.bytes(sizeof kMagic, "magic");
    const auto version = header.get<std::uint32_t>("version");
    if (version != kCheckpointVersion) {
        throw CheckpointError(what + ": checkpoint version " + std::to_string(version) +
                              ", this build reads version " + std::to_string(kCheckpointVersion));
    }
    const auto body = data.substr(0, data.size() - 8);
    Reader trailer(data.substr(data.size() - 8), what);
    const auto stored = trailer.get<std::uint64_t>("checksum");
    if (stored != fnv1a64(body)) {
        throw CheckpointError(what + ": checksum mismatch (corrupt or truncated file of " +
                              std::to_string(data.size()) + " bytes)");
    }
    Reader in(body, what);
    in.bytes(sizeof kMagic + 4, "header");
    const auto count = in.get<std::uint32_t>("buffer count");
    Checkpoint ckpt;
    ckpt.step = in.get<std::uint64_t>("step");
    ckpt.epoch = in.get<std::uint64_t>("epoch");
    for (std::uint32_t b = 0; b < count; ++b) {
        const auto name_len = in.get<std::uint32_t>("buffer name length");
        if (name_len > kMaxNameBytes) {
            throw CheckpointError(what + ": buffer " + std::to_string(b) + " name length " +
                                  std::to_string(name_len) + " exceeds " +
                                  std::to_string(kMaxNameBytes));
        }
        std::string name(in.bytes(name_len, "buffer name"));
        const auto n = in.get<std::uint64_t>("element count");
        if (n > in.left() / 4) {
            throw CheckpointError(what + ": truncated: buffer '" + name + "' claims " +
                                  std::to_string(n) + " floats, " + std::to_string(in.left()) +
                                  " bytes left");
        }
        std::vector<float> values(static_cast<std::size_t>(n));
        for (auto& v : values) {
            const auto bits = in.get<std::uint32_t>("element");
            std::memcpy(&v, &bits, sizeof v);
        }
        ckpt.buffers.emplace_back(std::move(name), std::move(values));
    }
    if (in.left() != 0) {
        throw CheckpointError(what + ": " + std::to_string(in.left()) +
                              " unexpected bytes after the last buffer");
    }
    return ckpt;
}

}  // namespace ptrun::ddp::detail
