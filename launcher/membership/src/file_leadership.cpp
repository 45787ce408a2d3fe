#include "ptrun/launcher/membership/file_leadership.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>

#include <utility>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "ptrun/launcher/membership/coordinator_slot.hpp"
#include "ptrun/launcher/membership/store_connector.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/file_store.hpp"
#include "ptrun/sys/fd.hpp"

namespace ptrun::launcher {

struct FileLeadership::Impl {
    explicit Impl(FileLeadershipOptions options)
        : o(std::move(options)), store(rdzv::FileStoreOptions{o.path, {}}) {
        const auto lead_path = o.path + ".lead";
        lock_fd = sys::Fd(::open(lead_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
        if (!lock_fd) {
            throw rdzv::StoreError("rendezvous file " + lead_path +
                                   ": cannot open: " + std::strerror(errno));
        }
        store.set(keys().alive(o.self_id), o.self_id);
        thread = std::thread([this] { loop(); });
    }

    ~Impl() {
        {
            std::lock_guard lock(mu);
            stopping = true;
        }
        wake.notify_all();
        thread.join();
        slot.stop();
        try {
            // The job is over and its nodes have left: its keys go, so that a later job under
            // the same run id starts afresh.
            if (slot.drained()) {
                store.delete_prefix(keys().prefix);
            } else {
                store.delete_key(keys().alive(o.self_id));
            }
        } catch (const rdzv::StoreError& e) {
            o.coordinator.logger->warn("could not update the rendezvous file: {}", e.what());
        }
        if (leading_lock) ::flock(lock_fd.get(), LOCK_UN);
    }

    FileLeadershipOptions o;
    rdzv::FileStore store;  ///< the alive key and the clean-up at the end
    sys::Fd lock_fd;        ///< `<path>.lead`, locked while this node coordinates
    std::mutex mu;          ///< guards stopping
    std::condition_variable wake;
    bool stopping = false;
    bool leading_lock = false;  ///< the loop's thread, then the destructor
    CoordinatorSlot slot;       ///< the coordinator while this node leads
    std::thread thread;

    const RdzvKeys& keys() const { return o.coordinator.keys; }

    void loop() {
        while (true) {
            if (!leading_lock && !slot.retired() &&
                ::flock(lock_fd.get(), LOCK_EX | LOCK_NB) == 0) {
                leading_lock = true;
                try {
                    lead();
                } catch (const rdzv::StoreError& e) {
                    o.coordinator.logger->warn("rendezvous leadership: {}", e.what());
                    ::flock(lock_fd.get(), LOCK_UN);
                    leading_lock = false;
                }
            }
            std::unique_lock lock(mu);
            if (wake.wait_for(lock, o.coordinator.heartbeat, [this] { return stopping; })) return;
        }
    }

    void lead() {
        auto co = o.coordinator;
        co.state_key = keys().coordinator_state();
        co.self_id = o.self_id;
        co.gone_reason = "it left the rendezvous";
        co.forget_job = [path = o.path, keys = keys()](const std::vector<std::string>& ids) {
            rdzv::FileStore s(rdzv::FileStoreOptions{path, {}});
            for (const auto& id : ids) {
                s.delete_prefix(keys.admissions(id));
                s.delete_prefix(keys.spare_marks(id));
                s.delete_key(keys.heartbeat(id));
                s.delete_key(keys.alive(id));
            }
            s.delete_prefix(keys.rounds());
            s.delete_key(keys.status());
        };
        co.connect = file_store_connector(o.path);
        o.coordinator.logger->info("this node now coordinates the rendezvous (it holds {}.lead)",
                                   o.path);
        slot.start(std::move(co));
    }
};

FileLeadership::FileLeadership(FileLeadershipOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
FileLeadership::~FileLeadership() = default;

bool FileLeadership::leads() const { return impl_->slot.running(); }

bool FileLeadership::wait_drained(const std::string& self, std::chrono::milliseconds timeout) {
    return impl_->slot.drain(self, timeout);
}

std::optional<std::vector<std::string>> FileLeadership::wait_members_left(
    const std::string& self, std::chrono::milliseconds timeout) {
    return impl_->slot.wait_members_left(self, timeout);
}

std::vector<std::string> FileLeadership::spare_hosts() const { return impl_->slot.spare_hosts(); }

}  // namespace ptrun::launcher
