// Checkpoint files on disk: atomic write (temp + fsync + rename + directory fsync), verified read.
#include "ptrun/ddp/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "checkpoint_format.hpp"
#include "ptrun/sys/fd.hpp"

namespace ptrun::ddp {
namespace fs = std::filesystem;
namespace {

constexpr const char* kPrefix = "ckpt-";
constexpr const char* kSuffix = ".bin";

[[noreturn]] void fail_errno(const std::string& what, const fs::path& path) {
    throw CheckpointError(what + " " + path.string() + ": " + std::strerror(errno));
}

using sys::Fd;

void write_all(int fd, const std::string& data, const fs::path& path) {
    std::size_t done = 0;
    while (done < data.size()) {
        const auto n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail_errno("cannot write", path);
        }
        done += static_cast<std::size_t>(n);
    }
}

void fsync_dir(const fs::path& dir) {
    Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (d.get() < 0) fail_errno("cannot open directory", dir);
    if (::fsync(d.get()) != 0) fail_errno("cannot fsync directory", dir);
}

/// The step number in "ckpt-<step>.bin", or nullopt for any other name (temp files included).
std::optional<std::uint64_t> step_of(const fs::path& file) {
    const std::string name = file.filename().string();
    const std::string prefix = kPrefix, suffix = kSuffix;
    if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
        !name.ends_with(suffix)) {
        return std::nullopt;
    }
    const auto digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::nullopt;
    }
    return std::stoull(digits);
}

}  // namespace

const std::vector<float>& Checkpoint::buffer(const std::string& name) const {
    for (const auto& [n, values] : buffers) {
        if (n == name) return values;
    }
    throw CheckpointError("checkpoint has no buffer '" + name + "'");
}

void write_checkpoint(const fs::path& file, const Checkpoint& ckpt) {
    const std::string bytes = detail::encode_checkpoint(ckpt);
    const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
    // mkstemp-style temp name in the same directory, so rename is atomic (same filesystem).
    std::string tmpl = (dir / ("." + file.filename().string() + ".tmp-XXXXXX")).string();
    Fd out{::mkostemp(tmpl.data(), O_CLOEXEC)};
    if (out.get() < 0) fail_errno("cannot create a temporary file in", dir);
    const fs::path tmp = tmpl;
    try {
        write_all(out.get(), bytes, tmp);
        if (::fsync(out.get()) != 0) fail_errno("cannot fsync", tmp);
        // close's own result matters here (a deferred write error): taken from the Fd first.
        if (::close(out.release()) != 0) fail_errno("cannot close", tmp);
        if (::rename(tmp.c_str(), file.c_str()) != 0) fail_errno("cannot rename onto", file);
    } catch (...) {
        std::error_code ignored;
        fs::remove(tmp, ignored);
        throw;
    }
    fsync_dir(dir);
}

Checkpoint read_checkpoint(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw CheckpointError("cannot open checkpoint " + file.string());
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw CheckpointError("cannot read checkpoint " + file.string());
    return detail::decode_checkpoint(bytes, "checkpoint " + file.string());
}

CheckpointDir::CheckpointDir(fs::path dir, int rank, int keep)
    : dir_(std::move(dir)), rank_(rank), keep_(std::max(keep, 1)) {}

std::vector<fs::path> CheckpointDir::list() const {
    std::vector<std::pair<std::uint64_t, fs::path>> found;
    std::error_code ec;
    for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
        if (auto step = step_of(it->path())) found.emplace_back(*step, it->path());
    }
    if (ec && ec != std::errc::no_such_file_or_directory) {
        throw CheckpointError("cannot list checkpoint directory " + dir_.string() + ": " +
                              ec.message());
    }
    std::sort(found.begin(), found.end());
    std::vector<fs::path> out;
    for (auto& [step, path] : found) out.push_back(std::move(path));
    return out;
}

std::optional<fs::path> CheckpointDir::save(const Checkpoint& ckpt) const {
    if (rank_ != 0) return std::nullopt;
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) {
        throw CheckpointError("cannot create checkpoint directory " + dir_.string() + ": " +
                              ec.message());
    }
    std::ostringstream name;
    name << kPrefix;
    name.width(12);
    name.fill('0');
    name << ckpt.step << kSuffix;
    const fs::path file = dir_ / name.str();
    write_checkpoint(file, ckpt);
    auto all = list();
    for (std::size_t i = 0; i + static_cast<std::size_t>(keep_) < all.size(); ++i) {
        fs::remove(all[i], ec);  // pruning is best effort: a leftover old file is harmless
    }
    // Temporary files of a save that was killed midway: only this rank writes here, one save at a
    // time, so any other temporary file is stale.
    for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
        const auto entry = it->path().filename().string();
        if (entry.starts_with(std::string(".") + kPrefix) &&
            entry.find(".tmp-") != std::string::npos) {
            fs::remove(it->path(), ec);
        }
    }
    return file;
}

std::optional<Checkpoint> CheckpointDir::load_latest() const {
    auto all = list();
    if (all.empty()) return std::nullopt;
    return read_checkpoint(all.back());
}

}  // namespace ptrun::ddp
