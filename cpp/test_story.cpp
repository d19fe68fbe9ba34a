// The RFC's story end to end through the C ABI (manual clock, monitor driven by tick()), plus
// the boundary's refusals of bad arguments.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "mooncake_liveness.hpp"

namespace ml = mooncake_liveness;
using std::chrono::milliseconds;

namespace {

constexpr ml::ClientId A{0, 1};
constexpr ml::ClientId B{0, 2};

MlvConfig config() {
    MlvConfig c{};
    c.active_ttl_ms = 1000;
    c.suspicion_ttl_ms = 2000;
    c.monitor_tick_ms = 100;
    c.offboarding_workers = 1;
    c.offboarding_retry_backoff_ms = 100;
    c.offboarding_retry_max_backoff_ms = 400;
    c.shutdown_drain_ms = 200;
    return c;
}

// Events and completions seen by the callbacks, waited on with a bounded timeout.
struct Recorder {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<MlvEvent> events;
    std::vector<MlvJob> offboarded;

    ml::Callbacks callbacks() {
        ml::Callbacks cb;
        cb.on_event = [this](const MlvEvent& e) {
            std::lock_guard<std::mutex> g(mu);
            events.push_back(e);
        };
        cb.on_offboarded = [this](const MlvJob& j) {
            std::lock_guard<std::mutex> g(mu);
            offboarded.push_back(j);
            cv.notify_all();
        };
        return cb;
    }
    bool wait_offboarded(size_t n) {
        std::unique_lock<std::mutex> g(mu);
        return cv.wait_for(g, std::chrono::seconds(20), [&] { return offboarded.size() >= n; });
    }
    bool saw(uint32_t from, uint32_t to, uint32_t cause) {
        std::lock_guard<std::mutex> g(mu);
        for (auto& e : events)
            if (e.kind == MLV_EVENT_TRANSITION && e.from == from && e.to == to && e.cause == cause) return true;
        return false;
    }
};

ml::Core make(ml::Callbacks cb, std::vector<uint8_t> snapshot = {}) {
    ml::Options o;
    o.config = config();
    o.manual_clock = true;
    o.callbacks = std::move(cb);
    o.snapshot = std::move(snapshot);
    auto c = ml::Core::create(std::move(o));
    EXPECT_TRUE(c.ok()) << ml::last_error();
    return std::move(c).value();
}

ml::Handle mount(const ml::Core& core, ml::ClientId id) {
    auto h = core.mount(id, 0, [](uint64_t) { return ml::Status::Ok; }, [](uint64_t) {});
    EXPECT_TRUE(h.ok()) << ml::name(h.status());
    return std::move(h).value();
}

// The wrapper's inline checks (one load of the word mlv_handle_word gave) answer exactly as
// the C ABI's calls do, in whatever state the incarnation is.
void expect_inline_matches_calls(const ml::Handle& h) {
    EXPECT_EQ(h.is_serving(), mlv_handle_is_serving(h.get()));
    EXPECT_EQ(h.is_serving(), h.is_serving_call());
    EXPECT_EQ(h.should_retain(), mlv_handle_should_retain(h.get()));
}

// Advances the manual clock by `ms` in tick-sized steps, ticking each time.
void run_for(const ml::Core& core, uint64_t ms) {
    for (uint64_t t = 0; t < ms; t += 100) {
        ASSERT_TRUE(core.advance_clock(100).ok());
        ASSERT_TRUE(core.tick().ok());
    }
}

}  // namespace

TEST(Story, ActiveSuspectedRecoverByPing) {
    Recorder rec;
    auto core = make(rec.callbacks());
    ml::Handle h = mount(core, A);
    EXPECT_TRUE(h.is_serving());
    expect_inline_matches_calls(h);
    EXPECT_EQ(core.ping(A).value(), ml::PingStatus::NeedRemount) << "alive but not remounted";
    ASSERT_TRUE(core.set_ready(A).ok());
    EXPECT_EQ(core.ping(A).value(), ml::PingStatus::Ok);

    run_for(core, 1100);
    EXPECT_FALSE(h.is_serving());
    EXPECT_TRUE(h.should_retain());
    expect_inline_matches_calls(h);
    EXPECT_EQ(h.info().state, MLV_STATE_SUSPECTED);
    EXPECT_TRUE(rec.saw(MLV_STATE_ACTIVE, MLV_STATE_SUSPECTED, MLV_CAUSE_TIMEOUT));
    EXPECT_EQ(core.stats().suspected, 1u);

    EXPECT_EQ(core.ping(A, h.incarnation()).value(), ml::PingStatus::Ok);
    EXPECT_TRUE(h.is_serving());
    expect_inline_matches_calls(h);
    EXPECT_TRUE(rec.saw(MLV_STATE_SUSPECTED, MLV_STATE_ACTIVE, MLV_CAUSE_RECOVERED_BY_PING));
    EXPECT_EQ(core.stats().recoveries, 1u);
    EXPECT_EQ(core.ping(A, 7).value(), ml::PingStatus::NeedRemount) << "stale token";
}

TEST(Story, BatchFilterAnswersAsEachHandle) {
    Recorder rec;
    auto core = make(rec.callbacks());
    ml::Handle a = mount(core, A);
    run_for(core, 600);
    ml::Handle b = mount(core, B);
    run_for(core, 600);  // A has been silent 1.2 s: Suspected; B 0.6 s: Active
    ASSERT_FALSE(a.is_serving());
    ASSERT_TRUE(b.is_serving());
    alignas(64) uint64_t foreign[8];
    std::memset(foreign, 0x5a, sizeof foreign);
    const MlvHandle* batch[] = {a.get(), b.get(), nullptr, reinterpret_cast<const MlvHandle*>(foreign), b.get()};
    bool out[5] = {true, false, true, true, false};
    auto n = ml::filter_serving(batch, 5, out);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(n.value(), 2u);
    for (size_t i = 0; i < 5; i++) EXPECT_EQ(out[i], mlv_handle_is_serving(batch[i])) << "entry " << i;
    EXPECT_FALSE(out[0]);
    EXPECT_TRUE(out[1]);

    bool untouched[1] = {true};
    EXPECT_EQ(ml::filter_serving(nullptr, 1, untouched).status(), ml::Status::InvalidParams);
    EXPECT_NE(ml::last_error().find("handles is null"), std::string::npos) << ml::last_error();
    EXPECT_EQ(ml::filter_serving(batch, (size_t(1) << 20) + 1, untouched).status(), ml::Status::InvalidParams);
    EXPECT_TRUE(untouched[0]) << "an error writes nothing";
    EXPECT_EQ(ml::filter_serving(nullptr, 0, nullptr).value(), 0u) << "an empty batch is not an error";
}

TEST(Story, OfflineCallbacksBarrierNewIncarnation) {
    Recorder rec;
    std::mutex gate_mu;
    std::condition_variable gate_cv;
    bool open = false, entered = false;
    ml::Callbacks cb = rec.callbacks();
    cb.metadata = [&](const MlvJob&) -> ml::StepOutcome {
        std::unique_lock<std::mutex> g(gate_mu);
        entered = true;
        gate_cv.notify_all();
        gate_cv.wait_for(g, std::chrono::seconds(20), [&] { return open; });
        return ml::StepResult::Done;
    };
    auto core = make(cb);
    ml::Handle h = mount(core, A);
    ASSERT_EQ(h.incarnation(), 1u);

    run_for(core, 3200);
    EXPECT_TRUE(rec.saw(MLV_STATE_SUSPECTED, MLV_STATE_OFFLINE, MLV_CAUSE_TIMEOUT));
    EXPECT_FALSE(h.should_retain());
    expect_inline_matches_calls(h);
    {
        std::unique_lock<std::mutex> g(gate_mu);
        ASSERT_TRUE(gate_cv.wait_for(g, std::chrono::seconds(20), [&] { return entered; }));
    }
    // The barrier: while the job runs, neither a mount nor a ping brings the client back.
    auto refused = core.begin_mount(A);
    EXPECT_EQ(refused.status(), ml::Status::UnavailableInCurrentStatus);
    EXPECT_EQ(core.ping(A).value(), ml::PingStatus::NeedRemount);
    {
        std::lock_guard<std::mutex> g(gate_mu);
        open = true;
    }
    gate_cv.notify_all();
    ASSERT_TRUE(rec.wait_offboarded(1));
    EXPECT_EQ(rec.offboarded[0].incarnation, 1u);

    ml::Handle h2 = mount(core, A);
    EXPECT_EQ(h2.incarnation(), 2u);
    EXPECT_TRUE(h2.is_serving());
    EXPECT_FALSE(h.is_serving()) << "the old incarnation's handle never serves again";
    expect_inline_matches_calls(h);
    expect_inline_matches_calls(h2);
    EXPECT_NE(mlv_handle_word(h.get()), mlv_handle_word(h2.get())) << "each incarnation has its own word";
}

TEST(Story, FailingStepIsRetriedAndResumes) {
    Recorder rec;
    std::atomic<int> segment_calls{0}, metadata_calls{0};
    ml::Callbacks cb = rec.callbacks();
    cb.metadata = [&](const MlvJob&) -> ml::StepOutcome {
        metadata_calls++;
        return ml::StepResult::Done;
    };
    cb.segments = [&](const MlvJob&) -> ml::StepOutcome {
        if (segment_calls++ == 0) return {ml::StepResult::Failed, 42};
        return ml::StepResult::Done;
    };
    auto core = make(cb);
    ml::Handle h = mount(core, A);
    run_for(core, 3200);
    for (int i = 0; i < 2000 && segment_calls.load() == 0; i++) std::this_thread::sleep_for(milliseconds(5));
    ASSERT_EQ(segment_calls.load(), 1);
    for (int i = 0; i < 2000 && core.stats().jobs_retrying == 0; i++) std::this_thread::sleep_for(milliseconds(5));
    EXPECT_EQ(core.stats().step_failures[MLV_STEP_SEGMENTS], 1u);
    EXPECT_EQ(core.begin_mount(A).status(), ml::Status::UnavailableInCurrentStatus);
    ASSERT_TRUE(core.advance_clock(500).ok());  // past the retry backoff (base clock)
    ASSERT_TRUE(rec.wait_offboarded(1));
    EXPECT_EQ(rec.offboarded[0].attempt, 2u);
    EXPECT_EQ(metadata_calls.load(), 1) << "the retry resumes at the failed step";
    EXPECT_EQ(core.stats().jobs_completed, 1u);
}

TEST(Story, ShutdownExportsPendingJobsAndRestoreResumesThem) {
    std::vector<uint8_t> exported;
    {
        Recorder rec;
        ml::Callbacks cb = rec.callbacks();
        cb.quota = [](const MlvJob&) -> ml::StepOutcome { return ml::StepResult::RetryLater; };
        auto core = make(cb);
        ml::Handle a = mount(core, A), b = mount(core, B);
        ml::Handle c = mount(core, ml::ClientId{0, 3});
        for (int i = 0; i < 40; i++) {
            ASSERT_TRUE(core.advance_clock(100).ok());
            core.ping(ml::ClientId{0, 3});
            ASSERT_TRUE(core.tick().ok());
        }
        EXPECT_FALSE(a.should_retain());
        EXPECT_FALSE(b.should_retain());
        EXPECT_TRUE(c.is_serving());
        auto out = core.shutdown();
        ASSERT_TRUE(out.ok());
        EXPECT_EQ(out->pending_jobs, 2u);
        EXPECT_EQ(core.stats().jobs_completed, 0u);
        exported = out->snapshot;
    }
    Recorder rec2;
    auto restored = make(rec2.callbacks(), exported);
    // Barrier survives failover until the resumed jobs complete.
    ASSERT_TRUE(rec2.wait_offboarded(2));
    auto c = restored.handle(ml::ClientId{0, 3});
    ASSERT_TRUE(c.ok());
    EXPECT_TRUE(c->is_serving());
    EXPECT_FALSE(c->info().ready) << "a restored incarnation is not ready until ReMount";
    EXPECT_EQ(restored.ping(ml::ClientId{0, 3}).value(), ml::PingStatus::NeedRemount);
    ml::Handle a2 = mount(restored, A);
    EXPECT_EQ(a2.incarnation(), 2u);
}

TEST(Story, SnapshotRestoreKeepsIncarnationsAndVacancies) {
    Recorder rec;
    auto core = make(rec.callbacks());
    mount(core, A);
    run_for(core, 3200);
    ASSERT_TRUE(rec.wait_offboarded(1));
    mount(core, A);  // incarnation 2
    mount(core, B);
    auto snap = core.snapshot();
    ASSERT_TRUE(snap.ok());
    Recorder rec2;
    auto back = make(rec2.callbacks(), snap.value());
    EXPECT_EQ(back.handle(A)->incarnation(), 2u);
    EXPECT_EQ(back.handle(B)->incarnation(), 1u);
    EXPECT_EQ(back.stats().active, 2u);
}

TEST(Boundary, BadArgumentsGetErrorCodesNeverCrashes) {
    EXPECT_EQ(mlv_ping(nullptr, A, 0, nullptr), MLV_INVALID_PARAMS);
    EXPECT_GT(ml::last_error().size(), 0u);
    alignas(64) uint64_t foreign[16];
    std::memset(foreign, 0x5a, sizeof foreign);
    auto* fake = reinterpret_cast<MlvCore*>(foreign);
    EXPECT_EQ(mlv_ping(fake, A, 0, nullptr), MLV_INVALID_PARAMS);
    EXPECT_EQ(mlv_tick(fake, nullptr), MLV_INVALID_PARAMS);
    EXPECT_FALSE(mlv_handle_is_serving(reinterpret_cast<MlvHandle*>(foreign)));
    EXPECT_TRUE(mlv_handle_should_retain(reinterpret_cast<MlvHandle*>(foreign)));
    EXPECT_FALSE(mlv_handle_is_serving(nullptr));
    EXPECT_EQ(mlv_handle_word(reinterpret_cast<MlvHandle*>(foreign)), nullptr);
    EXPECT_EQ(mlv_handle_word(nullptr), nullptr);
    ml::Handle empty;
    EXPECT_FALSE(empty.is_serving()) << "fail closed, as the call";
    EXPECT_TRUE(empty.should_retain()) << "fail safe, as the call";
    EXPECT_FALSE(empty.is_serving_call());
    EXPECT_EQ(mlv_handle_release(reinterpret_cast<MlvHandle*>(foreign)), MLV_INVALID_PARAMS);
    EXPECT_EQ(mlv_mount_commit(nullptr, nullptr, nullptr), MLV_INVALID_PARAMS);

    MlvCoreOptions o{};
    mlv_core_options_default(&o);
    MlvCore* core = nullptr;
    const uint8_t bad_utf8[] = {'a', ':', ' ', 0xff, 0xfe};
    o.config_text = bad_utf8;
    o.config_text_len = sizeof bad_utf8;
    EXPECT_EQ(mlv_core_new(&o, &core), MLV_INVALID_PARAMS);
    std::vector<uint8_t> huge(2 << 20, ' ');
    o.config_text = huge.data();
    o.config_text_len = huge.size();
    EXPECT_EQ(mlv_core_new(&o, &core), MLV_INVALID_PARAMS);
    const std::string ttl0 = "client_active_ttl_sec: 0\n";
    o.config_text = reinterpret_cast<const uint8_t*>(ttl0.data());
    o.config_text_len = ttl0.size();
    EXPECT_EQ(mlv_core_new(&o, &core), MLV_INVALID_PARAMS);
    EXPECT_NE(ml::last_error().find("client_active_ttl_sec"), std::string::npos) << ml::last_error();
    o.config_text = nullptr;
    o.config_text_len = 5;
    EXPECT_EQ(mlv_core_new(&o, &core), MLV_INVALID_PARAMS) << "null with a length";
    o.config_text_len = 0;
    o.clock = 7;
    EXPECT_EQ(mlv_core_new(&o, &core), MLV_INVALID_PARAMS) << "clock kind out of range";
    o.clock = MLV_CLOCK_MANUAL;
    const uint8_t garbage[] = "MCLS not really a snapshot";
    o.snapshot = garbage;
    o.snapshot_len = sizeof garbage;
    EXPECT_EQ(mlv_core_new(&o, &core), MLV_DESERIALIZE_FAIL);
    EXPECT_EQ(core, nullptr);
    o.snapshot = nullptr;
    o.snapshot_len = 0;
    ASSERT_EQ(mlv_core_new(&o, &core), MLV_OK);
    EXPECT_EQ(mlv_mount_begin(core, A, 0, nullptr, nullptr), MLV_INVALID_PARAMS);
    EXPECT_EQ(mlv_mount_begin(core, A, 3, reinterpret_cast<MlvMount**>(foreign), nullptr), MLV_INVALID_PARAMS)
        << "a token for an unknown client is stale";
    EXPECT_EQ(mlv_set_ready(core, A, true), MLV_CLIENT_NOT_FOUND);
    MlvHandle* h = nullptr;
    EXPECT_EQ(mlv_handle_get(core, A, &h), MLV_CLIENT_NOT_FOUND);
    EXPECT_EQ(mlv_monitor_start(core), MLV_OK);
    EXPECT_EQ(mlv_monitor_start(core), MLV_UNAVAILABLE_IN_CURRENT_STATUS);
    EXPECT_EQ(mlv_tick(core, nullptr), MLV_UNAVAILABLE_IN_CURRENT_STATUS);
    EXPECT_EQ(mlv_monitor_stop(core), MLV_OK);
    EXPECT_EQ(mlv_tick(core, nullptr), MLV_OK);
    EXPECT_EQ(mlv_core_free(core), MLV_OK);
    EXPECT_EQ(mlv_core_free(nullptr), MLV_OK);
    EXPECT_STREQ(mlv_status_name(MLV_UNAVAILABLE_IN_CURRENT_STATUS), "UNAVAILABLE_IN_CURRENT_STATUS");
    EXPECT_STREQ(mlv_status_name(12345), "UNKNOWN");
}

TEST(Boundary, ATickFromAnEventCallbackDoesNotDeadlock) {
    Recorder rec;
    std::atomic<int32_t> reentrant{1};
    const MlvCore* raw = nullptr;
    ml::Callbacks cb = rec.callbacks();
    cb.on_event = [&](const MlvEvent&) { reentrant = mlv_tick(raw, nullptr); };
    auto core = make(cb);
    raw = core.get();
    mount(core, A);
    run_for(core, 1100);
    // Events are delivered after the monitor is put back, so the nested tick runs (and finds
    // nothing due); with the monitor thread running it would get UNAVAILABLE_IN_CURRENT_STATUS.
    EXPECT_EQ(reentrant.load(), MLV_OK);
}

namespace {
int32_t bogus_step(void* user, const MlvJob*, int32_t*) {
    auto* n = static_cast<std::atomic<int>*>(user);
    return (*n)++ == 0 ? 99 : MLV_STEP_DONE;
}
}  // namespace

TEST(Boundary, OutOfRangeStepAnswerIsCountedAndRetried) {
    std::atomic<int> n{0};
    MlvCoreOptions o{};
    mlv_core_options_default(&o);
    o.config = config();
    o.clock = MLV_CLOCK_MANUAL;
    o.callbacks.user_data = &n;
    o.callbacks.local_disk = &bogus_step;
    MlvCore* core = nullptr;
    ASSERT_EQ(mlv_core_new(&o, &core), MLV_OK);
    MlvMount* m = nullptr;
    ASSERT_EQ(mlv_mount_begin(core, A, 0, &m, nullptr), MLV_OK);
    ASSERT_EQ(mlv_mount_commit(m, nullptr, nullptr), MLV_OK);
    for (int i = 0; i < 32; i++) {
        mlv_clock_advance(core, 100);
        mlv_tick(core, nullptr);
    }
    MlvStats st{};
    for (int i = 0; i < 4000 && st.jobs_completed == 0; i++) {
        mlv_clock_advance(core, 10);
        std::this_thread::sleep_for(milliseconds(1));
        mlv_stats(core, &st);
    }
    EXPECT_EQ(st.step_failures[MLV_STEP_LOCAL_DISK], 1u);
    EXPECT_EQ(st.jobs_completed, 1u);
    mlv_core_free(core);
}

TEST(Config, LegacyKeysFromTextAndReload) {
    ml::Options o;
    o.config_text = "{\"client_live_ttl_sec\": 2, \"rpc_port\": 50051}";  // JSON, legacy alias
    o.config.monitor_tick_ms = 100;
    o.manual_clock = true;
    auto c = ml::Core::create(std::move(o));
    ASSERT_TRUE(c.ok()) << ml::last_error();
    ml::Core core = std::move(c).value();
    ml::Handle h = mount(core, A);
    run_for(core, 1900);
    EXPECT_TRUE(h.is_serving()) << "active TTL is 2 s from the legacy key";
    run_for(core, 300);
    EXPECT_FALSE(h.is_serving());
    MlvConfig shorter{};
    shorter.active_ttl_ms = 1000;
    shorter.suspicion_ttl_ms = 1000;
    EXPECT_TRUE(core.reload(shorter).ok());
    EXPECT_EQ(core.reload(MlvConfig{}, "client_suspicion_ttl_sec: -1").status(), ml::Status::InvalidParams);
}
