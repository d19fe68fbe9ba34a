// Google Benchmark: "may this resource serve?" through the C ABI against the designs it
// replaces, single-threaded and with 2 threads contending on the same record:
//   CAbiIsServing      mlv_handle_is_serving: one non-inlined call, a tag check, one acquire load
//   AtomicLoad         a plain std::atomic<uint64_t> acquire load (the floor)
//   MutexRecord        a per-record std::mutex around the state (upstream RFC branch's C++)
//   SharedMutexSet     a std::shared_mutex + std::unordered_set of OK clients (Mooncake main)
//   CAbiPing           mlv_ping of one Active, ready client
// Run: scripts/cpp.sh --bench (builds with -O2 against the release staticlib).
#include <benchmark/benchmark.h>

#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

#include "mooncake_liveness.h"

namespace {

struct Fixture {
    MlvCore* core = nullptr;
    MlvHandle* handle = nullptr;
    MlvClientId id{0, 42};
    Fixture() {
        MlvCoreOptions o{};
        mlv_core_options_default(&o);
        o.config.active_ttl_ms = 3600 * 1000;  // never expires during the run
        o.config.suspicion_ttl_ms = 3600 * 1000;
        if (mlv_core_new(&o, &core) != MLV_OK) std::abort();
        MlvMount* m = nullptr;
        if (mlv_mount_begin(core, id, 0, &m, nullptr) != MLV_OK) std::abort();
        if (mlv_mount_commit(m, nullptr, &handle) != MLV_OK) std::abort();
        mlv_set_ready(core, id, true);
    }
};

Fixture& fixture() {
    static Fixture f;  // shared by every thread: they contend on one record
    return f;
}

std::atomic<uint64_t> g_word{1};

struct MutexRecord {
    std::mutex mu;
    int state = 0;  // 0 = OK
} g_record;

struct OkSet {
    std::shared_mutex mu;
    std::unordered_set<uint64_t> ok;
    OkSet() {
        for (uint64_t i = 0; i < 1024; i++) ok.insert(i);
    }
} g_set;

void CAbiIsServing(benchmark::State& state) {
    const MlvHandle* h = fixture().handle;
    for (auto _ : state) benchmark::DoNotOptimize(mlv_handle_is_serving(h));
}

void AtomicLoad(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(g_word.load(std::memory_order_acquire) >> 62 == 0);
}

void MutexRecordCheck(benchmark::State& state) {
    for (auto _ : state) {
        std::lock_guard<std::mutex> g(g_record.mu);
        benchmark::DoNotOptimize(g_record.state == 0);
    }
}

void SharedMutexSet(benchmark::State& state) {
    for (auto _ : state) {
        std::shared_lock<std::shared_mutex> g(g_set.mu);
        benchmark::DoNotOptimize(g_set.ok.count(42) != 0);
    }
}

void CAbiPing(benchmark::State& state) {
    Fixture& f = fixture();
    MlvPingStatus st = 0;
    for (auto _ : state) benchmark::DoNotOptimize(mlv_ping(f.core, f.id, 1, &st));
}

}  // namespace

BENCHMARK(CAbiIsServing)->Threads(1)->Threads(2);
BENCHMARK(AtomicLoad)->Threads(1)->Threads(2);
BENCHMARK(MutexRecordCheck)->Threads(1)->Threads(2);
BENCHMARK(SharedMutexSet)->Threads(1)->Threads(2);
BENCHMARK(CAbiPing)->Threads(1)->Threads(2);

BENCHMARK_MAIN();
