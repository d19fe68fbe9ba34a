// mini_master: the liveness core wired the way Mooncake's MasterService would wire it.
//
//   Ping handler           -> Core::ping (lock-free; no master lock)
//   MountSegment/ReMount   -> begin_mount, register the segment under the incarnation, commit
//                             (or undo the registration if the mount was lost to an Offline commit)
//   allocation filter      -> skip candidate segments whose owner handle is not serving
//   replica-list filter    -> hand out only replicas whose owner handle is serving
//   offboarding callbacks  -> erase the master's own metadata for the Offline incarnation
//
// Runs a short scripted scenario on a manual clock and exits 0 if every expectation held.
// Build (one line): g++ -std=c++17 -Iinclude examples/cpp/mini_master.cpp
//   target/release/libmooncake_liveness_ffi.a -lpthread -ldl -lm
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mooncake_liveness.hpp"

namespace ml = mooncake_liveness;

namespace {

struct Segment {
    std::string name;
    uint64_t client;       // owner client id (low half of the UUID, for brevity)
    uint64_t incarnation;  // the owner incarnation it was mounted under
    std::shared_ptr<ml::Handle> owner;  // checked on every allocation: one load
    uint64_t free_bytes;
};

struct Object {
    std::vector<std::string> replicas;  // segment names
};

// The master's metadata, under its own mutex (as MasterService's segment and metadata locks).
class MiniMaster {
public:
    bool init() {
        ml::Options o;
        o.config_text = "client_active_ttl_sec: 1\nclient_suspicion_ttl_sec: 2\nrpc_port: 50051\n";
        o.config.monitor_tick_ms = 100;
        o.manual_clock = true;
        o.callbacks.metadata = [this](const MlvJob& j) { return erase_objects(j); };
        o.callbacks.segments = [this](const MlvJob& j) { return erase_segments(j); };
        o.callbacks.on_offboarded = [](const MlvJob& j) {
            std::printf("offboarded client %llu incarnation %llu after %u attempt(s)\n",
                        (unsigned long long)j.client.lo, (unsigned long long)j.incarnation, j.attempt);
        };
        auto c = ml::Core::create(std::move(o));
        if (!c) {
            std::fprintf(stderr, "create: %s\n", ml::last_error().c_str());
            return false;
        }
        core_ = std::move(c).value();
        return true;
    }

    // Ping handler: the answer is the RPC's ClientStatus.
    const char* ping(uint64_t client, uint64_t token) {
        auto r = core_.ping(ml::ClientId{0, client}, token);
        return r && r.value() == ml::PingStatus::Ok ? "OK" : "NEED_REMOUNT";
    }

    // MountSegment / ReMountSegment.
    ml::Status mount_segment(uint64_t client, const std::string& name, uint64_t size) {
        auto p = core_.begin_mount(ml::ClientId{0, client});
        if (!p) return p.status();  // UNAVAILABLE_IN_CURRENT_STATUS: previous incarnation offboarding
        uint64_t inc = p->incarnation();
        {
            std::lock_guard<std::mutex> g(mu_);  // register before commit (the mount protocol)
            segments_[name] = Segment{name, client, inc, nullptr, size};
        }
        MlvMountResult res{};
        auto h = p->commit(&res);
        std::lock_guard<std::mutex> g(mu_);
        if (!h) {  // lost to an Offline commit: undo the registration
            segments_.erase(name);
            return h.status();
        }
        segments_[name].owner = std::make_shared<ml::Handle>(std::move(h).value());
        core_.set_ready(ml::ClientId{0, client});
        return ml::Status::Ok;
    }

    // Allocation filter: the first candidate whose owner serves and has room.
    std::string allocate(const std::string& key, uint64_t size) {
        std::lock_guard<std::mutex> g(mu_);
        for (auto& [name, seg] : segments_) {
            if (!seg.owner || !seg.owner->is_serving() || seg.free_bytes < size) continue;
            seg.free_bytes -= size;
            objects_[key].replicas.push_back(name);
            return name;
        }
        return {};
    }

    // Replica-list filter (GetReplicaList): only replicas on serving owners.
    std::vector<std::string> replicas(const std::string& key) {
        std::lock_guard<std::mutex> g(mu_);
        std::vector<std::string> out;
        auto it = objects_.find(key);
        if (it == objects_.end()) return out;
        // One C-ABI call filters the whole list (a missing segment or owner is a null entry).
        const auto& reps = it->second.replicas;
        std::vector<const MlvHandle*> owners;
        for (auto& r : reps) {
            auto s = segments_.find(r);
            owners.push_back(s != segments_.end() && s->second.owner ? s->second.owner->get() : nullptr);
        }
        std::unique_ptr<bool[]> serving(new bool[reps.size()]);
        if (!ml::filter_serving(owners.data(), owners.size(), serving.get()).ok()) return out;
        for (size_t i = 0; i < reps.size(); i++)
            if (serving[i]) out.push_back(reps[i]);
        return out;
    }

    void advance(uint64_t ms) {
        for (uint64_t t = 0; t < ms; t += 100) {
            core_.advance_clock(100);
            core_.tick();
        }
    }

    size_t segment_count() {
        std::lock_guard<std::mutex> g(mu_);
        return segments_.size();
    }
    const ml::Core& core() const { return core_; }

private:
    bool owned_by(const Segment& s, const MlvJob& j) const {
        return s.client == j.client.lo && s.incarnation == j.incarnation;
    }
    // Offboarding step "metadata": drop the incarnation's replicas (bounded batches: 2 keys).
    ml::StepOutcome erase_objects(const MlvJob& j) {
        std::lock_guard<std::mutex> g(mu_);
        int budget = 2;
        for (auto it = objects_.begin(); it != objects_.end();) {
            auto& reps = it->second.replicas;
            bool touched = false;
            for (auto r = reps.begin(); r != reps.end();) {
                auto s = segments_.find(*r);
                if (s != segments_.end() && owned_by(s->second, j)) {
                    r = reps.erase(r);
                    touched = true;
                } else {
                    ++r;
                }
            }
            it = reps.empty() ? objects_.erase(it) : std::next(it);
            if (touched && --budget == 0) return ml::StepResult::More;
        }
        return ml::StepResult::Done;
    }
    // Offboarding step "segments": unmount the incarnation's segments.
    ml::StepOutcome erase_segments(const MlvJob& j) {
        std::lock_guard<std::mutex> g(mu_);
        for (auto it = segments_.begin(); it != segments_.end();)
            it = owned_by(it->second, j) ? segments_.erase(it) : std::next(it);
        return ml::StepResult::Done;
    }

    std::mutex mu_;
    std::map<std::string, Segment> segments_;
    std::map<std::string, Object> objects_;
    ml::Core core_;  // last: destroyed first, so no callback runs on a destroyed map
};

int failures = 0;
void expect(bool ok, const char* what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok) failures++;
}

}  // namespace

int main() {
    MiniMaster m;
    if (!m.init()) return 2;
    expect(m.mount_segment(1, "seg-a", 1 << 20) == ml::Status::Ok, "client 1 mounts seg-a");
    expect(m.mount_segment(2, "seg-b", 1 << 20) == ml::Status::Ok, "client 2 mounts seg-b");
    for (int i = 0; i < 6; i++) m.allocate("key-" + std::to_string(i), 1024);
    expect(std::string(m.ping(1, 1)) == "OK", "Ping answers OK for a ready client");

    // Client 2 falls silent; client 1 keeps pinging.
    for (int i = 0; i < 12; i++) {
        m.ping(1, 1);
        m.advance(100);
    }
    expect(m.allocate("key-new", 1024) == "seg-a", "allocation skips the Suspected owner's segment");
    bool only_a = true;
    for (int i = 0; i < 6; i++)
        for (auto& r : m.replicas("key-" + std::to_string(i))) only_a = only_a && r == "seg-a";
    expect(only_a, "replica lists hide replicas on a Suspected owner");

    for (int i = 0; i < 25; i++) {
        m.ping(1, 1);
        m.advance(100);
    }
    // The offboarding job runs on a worker: wait (bounded) until it has completed, not just until
    // its segments step erased the segment: the Offline barrier holds until the whole job is done.
    for (int i = 0; i < 2000 && (m.segment_count() != 1 || m.core().stats().jobs_completed != 1); i++) {
        m.ping(1, 1);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    expect(m.segment_count() == 1, "offboarding erased client 2's segment and replicas");
    expect(std::string(m.ping(2, 1)) == "NEED_REMOUNT", "Ping tells the Offline client to remount");
    expect(m.mount_segment(2, "seg-b2", 1 << 20) == ml::Status::Ok, "client 2 remounts: a new incarnation");
    MlvStats st = m.core().stats();
    std::printf("stats: active=%llu suspicions=%llu offline_commits=%llu jobs_completed=%llu\n",
                (unsigned long long)st.active, (unsigned long long)st.suspicions,
                (unsigned long long)st.offline_commits, (unsigned long long)st.jobs_completed);
    expect(st.jobs_completed == 1 && st.active == 2, "counters agree");
    return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
