// Multi-threaded stress through the C ABI, on the system clock with short TTLs: pings from 4
// threads, a mount/remount thread, handles checked on 2 threads, the monitor thread, and
// offboarding callbacks on a worker erasing the embedder's metadata. Run plain, under
// ASan+UBSan and under TSan by scripts/cpp.sh. Bounded: ~1.5 s of traffic.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "mooncake_liveness.hpp"

namespace ml = mooncake_liveness;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kClients = 48;

// The embedder's own metadata: resources per (client, incarnation), guarded by its own mutex.
struct Metadata {
    std::mutex mu;
    std::map<std::pair<uint64_t, uint64_t>, int> resources;
    std::vector<std::pair<uint64_t, uint64_t>> offboarded;
};

}  // namespace

TEST(Stress, PingsMountsHandlesMonitorAndOffboardingTogether) {
    Metadata meta;
    std::atomic<uint64_t> events{0}, step_calls{0};
    ml::Callbacks cb;
    cb.on_event = [&](const MlvEvent&) { events.fetch_add(1, std::memory_order_relaxed); };
    cb.metadata = [&](const MlvJob& j) -> ml::StepOutcome {
        step_calls.fetch_add(1, std::memory_order_relaxed);
        std::lock_guard<std::mutex> g(meta.mu);
        meta.resources.erase({j.client.lo, j.incarnation});
        return ml::StepResult::Done;
    };
    cb.segments = [&](const MlvJob& j) -> ml::StepOutcome {
        // Every third job fails once: exercised retries under concurrency.
        if (j.client.lo % 3 == 0 && j.attempt == 1) return {ml::StepResult::Failed, -1};
        return ml::StepResult::Done;
    };
    cb.on_offboarded = [&](const MlvJob& j) {
        std::lock_guard<std::mutex> g(meta.mu);
        meta.offboarded.push_back({j.client.lo, j.incarnation});
    };
    ml::Options o;
    o.config.active_ttl_ms = 60;
    o.config.suspicion_ttl_ms = 60;
    o.config.monitor_tick_ms = 5;
    o.config.offboarding_workers = 2;
    o.config.offboarding_retry_backoff_ms = 5;
    o.config.offboarding_retry_max_backoff_ms = 20;
    o.config.shutdown_drain_ms = 500;
    // On a loaded machine late ticks would count as master stalls and push every deadline out;
    // the stress is about concurrency, so the stall brake is off.
    o.config_text = "stall_brake: false\n";
    o.callbacks = cb;
    auto created = ml::Core::create(std::move(o));
    ASSERT_TRUE(created.ok()) << ml::last_error();
    ml::Core core = std::move(created).value();
    ASSERT_TRUE(core.start_monitor().ok());

    std::atomic<bool> stop{false};
    std::atomic<uint64_t> pings{0}, mounts{0}, lost{0}, barrier{0}, checks{0};
    std::atomic<bool> broken{false};
    std::vector<std::thread> threads;
    auto mount_one = [&](uint64_t c) {
        auto r = core.mount(
            ml::ClientId{0, c}, 0,
            [&](uint64_t inc) {
                std::lock_guard<std::mutex> g(meta.mu);
                meta.resources[{c, inc}]++;
                return ml::Status::Ok;
            },
            [&](uint64_t inc) {
                std::lock_guard<std::mutex> g(meta.mu);
                meta.resources.erase({c, inc});
                lost.fetch_add(1);
            });
        if (r.ok()) {
            mounts.fetch_add(1);
            core.set_ready(ml::ClientId{0, c});
        } else if (r.status() == ml::Status::UnavailableInCurrentStatus) {
            barrier.fetch_add(1);
        }
    };
    for (uint64_t c = 0; c < kClients; c++) mount_one(c);

    // 4 ping threads: clients 0..31 keep pinging (some stop now and then and go Suspected).
    for (int t = 0; t < 4; t++) {
        threads.emplace_back([&, t] {
            uint64_t i = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                uint64_t c = (i++ * 4 + t) % 32;
                if (core.ping(ml::ClientId{0, c}).ok()) pings.fetch_add(1, std::memory_order_relaxed);
                if (i % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        });
    }
    // One mount/remount thread over every client, one every 20 ms (a remount is a liveness
    // signal, so a full cycle, ~1 s, must be far longer than the 120 ms to Offline): clients
    // 32..47 go Offline, get offboarded, and mount a new incarnation when the barrier lifts.
    threads.emplace_back([&] {
        uint64_t i = 0;
        while (!stop.load(std::memory_order_relaxed)) {
            mount_one(i++ % kClients);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    });
    // 2 handle checkers: is_serving implies should_retain, for every handle at every read,
    // one at a time (inline and through the call) and through the batch filter.
    for (int t = 0; t < 2; t++) {
        threads.emplace_back([&, t] {
            uint64_t i = t;
            while (!stop.load(std::memory_order_relaxed)) {
                auto h = core.handle(ml::ClientId{0, i++ % kClients});
                if (!h.ok()) continue;
                for (int k = 0; k < 100; k++) {
                    // The inline load (k even) and the C ABI call (k odd).
                    bool serving = k % 2 ? h->is_serving_call() : h->is_serving();
                    bool retain = h->should_retain();
                    if (serving && !retain) broken = true;
                }
                // The batch filter over this handle and the next client's (if mounted).
                auto next = core.handle(ml::ClientId{0, i % kClients});
                const MlvHandle* batch[2] = {h->get(), next.ok() ? next->get() : nullptr};
                bool out[2] = {false, false};
                if (!ml::filter_serving(batch, 2, out).ok()) broken = true;
                if ((out[0] && !h->should_retain()) || (out[1] && !next->should_retain())) broken = true;
                checks.fetch_add(102, std::memory_order_relaxed);
            }
        });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    stop = true;
    for (auto& t : threads) t.join();
    ASSERT_TRUE(core.stop_monitor().ok());
    auto out = core.shutdown();
    ASSERT_TRUE(out.ok());

    EXPECT_FALSE(broken.load()) << "a handle was serving but not retained";
    EXPECT_GT(pings.load(), 1000u);
    EXPECT_GT(checks.load(), 1000u);
    EXPECT_GT(events.load(), 0u);
    MlvStats st = core.stats();
    EXPECT_GT(st.offline_commits, 0u) << "clients 32..47 never ping and must go Offline";
    EXPECT_GT(st.jobs_completed, 0u);
    EXPECT_EQ(st.jobs_completed + out->pending_jobs, st.offline_commits) << "no job lost";
    std::lock_guard<std::mutex> g(meta.mu);
    EXPECT_EQ(meta.offboarded.size(), st.jobs_completed);
    for (auto& key : meta.offboarded)
        EXPECT_EQ(meta.resources.count(key), 0u) << "offboarded incarnation kept metadata: " << key.first;
    EXPECT_GT(mounts.load(), kClients);
}
