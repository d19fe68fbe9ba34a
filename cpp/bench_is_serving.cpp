// Google Benchmark: "may this resource serve?" through the C ABI against the designs it
// replaces, single-threaded and with 2 threads contending on the same record:
//   CAbiIsServing      mlv_handle_is_serving: one non-inlined call, a tag check, one acquire load
//   WrapperIsServing   ml::Handle::is_serving (the C++ wrapper): the acquire load of the word whose
//                      address mlv_handle_word gave once, inlined, and one compare: no call
//   CallFloor          the same acquire load behind a non-inlined C++ call: the least any
//                      out-of-line check can cost (what the call itself adds to the load)
//   AtomicLoad         a plain std::atomic<uint64_t> acquire load (the floor)
//   CAbiBatch64        mlv_handles_serving over 64 handles of 64 clients, one call per batch;
//                      (time per check = CPU time / 64)
//   AtomicLoad64       the inlined floor of the same filter: 64 pointers to 64 words, loaded in a loop
//   MutexRecord        a per-record std::mutex around the state (upstream RFC branch's C++)
//   SharedMutexSet     a std::shared_mutex + std::unordered_set of OK clients (Mooncake main)
//   CAbiPing           mlv_ping of one Active, ready client
// Run: scripts/cpp.sh --bench (builds with -O2 against the release staticlib).
#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

#include "mooncake_liveness.hpp"

namespace ml = mooncake_liveness;

namespace {

struct Fixture {
    MlvCore* core = nullptr;
    MlvHandle* handle = nullptr;
    ml::Handle wrapped;  // a second handle of the same incarnation, in the C++ wrapper
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
        MlvHandle* h = nullptr;
        if (mlv_handle_get(core, id, &h) != MLV_OK) std::abort();
        wrapped = ml::Handle(h);
        if (!wrapped.is_serving()) std::abort();
    }
};

Fixture& fixture() {
    static Fixture f;  // shared by every thread: they contend on one record
    return f;
}

std::atomic<uint64_t> g_word{1};

constexpr size_t kBatch = 64;

struct BatchFixture {
    MlvCore* core = nullptr;
    std::array<const MlvHandle*, kBatch> handles{};
    std::array<std::atomic<uint64_t>, kBatch> words{};
    std::array<const std::atomic<uint64_t>*, kBatch> word_ptrs{};
    BatchFixture() {
        MlvCoreOptions o{};
        mlv_core_options_default(&o);
        o.config.active_ttl_ms = 3600 * 1000;
        o.config.suspicion_ttl_ms = 3600 * 1000;
        if (mlv_core_new(&o, &core) != MLV_OK) std::abort();
        for (size_t i = 0; i < kBatch; i++) {
            MlvMount* m = nullptr;
            MlvHandle* h = nullptr;
            if (mlv_mount_begin(core, MlvClientId{1, i}, 0, &m, nullptr) != MLV_OK) std::abort();
            if (mlv_mount_commit(m, nullptr, &h) != MLV_OK) std::abort();
            handles[i] = h;
            words[i].store(1);
            word_ptrs[i] = &words[i];
        }
    }
};

BatchFixture& batch_fixture() {
    static BatchFixture f;
    return f;
}

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

void WrapperIsServing(benchmark::State& state) {
    const ml::Handle& h = fixture().wrapped;
    for (auto _ : state) benchmark::DoNotOptimize(h.is_serving());
}

__attribute__((noinline)) bool call_floor(const std::atomic<uint64_t>* w) {
    return w->load(std::memory_order_acquire) >> 62 == 0;
}

void CallFloor(benchmark::State& state) {
    const std::atomic<uint64_t>* w = &g_word;
    benchmark::DoNotOptimize(w);  // the compiler cannot see through to g_word and fold the call
    for (auto _ : state) benchmark::DoNotOptimize(call_floor(w));
}

void CAbiBatch64(benchmark::State& state) {
    BatchFixture& f = batch_fixture();
    std::array<bool, kBatch> out{};
    size_t n = 0;
    for (auto _ : state) {
        if (mlv_handles_serving(f.handles.data(), kBatch, out.data(), &n) != MLV_OK) std::abort();
        benchmark::DoNotOptimize(out.data());
        benchmark::DoNotOptimize(n);
    }
    if (n != kBatch) std::abort();
}

void AtomicLoad64(benchmark::State& state) {
    BatchFixture& f = batch_fixture();
    std::array<bool, kBatch> out{};
    for (auto _ : state) {
        size_t n = 0;
        for (size_t i = 0; i < kBatch; i++) {
            bool serving = f.word_ptrs[i]->load(std::memory_order_acquire) >> 62 == 0;
            out[i] = serving;
            n += serving;
        }
        benchmark::DoNotOptimize(out.data());
        benchmark::DoNotOptimize(n);
    }
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
BENCHMARK(WrapperIsServing)->Threads(1)->Threads(2);
BENCHMARK(CallFloor)->Threads(1)->Threads(2);
BENCHMARK(AtomicLoad)->Threads(1)->Threads(2);
BENCHMARK(CAbiBatch64)->Threads(1)->Threads(2);
BENCHMARK(AtomicLoad64)->Threads(1)->Threads(2);
BENCHMARK(MutexRecordCheck)->Threads(1)->Threads(2);
BENCHMARK(SharedMutexSet)->Threads(1)->Threads(2);
BENCHMARK(CAbiPing)->Threads(1)->Threads(2);

BENCHMARK_MAIN();
