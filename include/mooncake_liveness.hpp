// mooncake_liveness.hpp: a C++17 RAII wrapper over mooncake_liveness.h.
//
// - Core, Handle and PendingMount are move-only and free their C object in the destructor.
// - A Handle or PendingMount may outlive its Core. Once the Core is destroyed (its destructor
//   frees the callbacks right after mlv_core_free returns), nothing calls back any more: a
//   PendingMount's commit() commits nothing and returns UnavailableInCurrentStatus with
//   `result.lost == MLV_LOST_CORE_FREED` (undo the mount work), abort() releases it; a Handle
//   keeps answering the state its incarnation had when the Core was destroyed. A commit() on
//   another thread concurrent with the destruction either completes, callback included,
//   before mlv_core_free returns, or is inert.
// - Callbacks are std::function objects behind C trampolines; an exception thrown by a step
//   callback is caught in the trampoline and reported as a failed step (it is retried), an
//   exception from on_event / on_offboarded is swallowed (nothing may unwind into Rust).
// - Errors are a Status enum; fallible calls return Result<T> (an expected-like value).
//
// Threading contract (the C functions document it one by one): every member function may be
// called from any thread concurrently, except the destructor and operator= of the object
// itself. Callbacks run on library threads (the monitor, offboarding workers) and on threads
// calling ping()/mount(); they must be thread-safe and must not call tick(), stop_monitor(),
// shutdown() or destroy the Core.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mooncake_liveness.h"

namespace mooncake_liveness {

/// Mooncake ErrorCode numbers.
enum class Status : int32_t {
    Ok = MLV_OK,
    InternalError = MLV_INTERNAL_ERROR,
    ClientNotFound = MLV_CLIENT_NOT_FOUND,
    InvalidParams = MLV_INVALID_PARAMS,
    UnavailableInCurrentStatus = MLV_UNAVAILABLE_IN_CURRENT_STATUS,
    UnavailableInCurrentMode = MLV_UNAVAILABLE_IN_CURRENT_MODE,
    DeserializeFail = MLV_DESERIALIZE_FAIL,
};

inline const char* name(Status s) { return mlv_status_name(static_cast<int32_t>(s)); }

/// This thread's last error message.
inline std::string last_error() {
    std::string out(mlv_last_error_message(nullptr, 0) + 1, '\0');
    out.resize(mlv_last_error_message(out.data(), out.size()));
    return out;
}

/// An expected-like result: a value or a Status.
template <class T>
class Result {
public:
    Result(T value) : status_(Status::Ok), value_(std::move(value)) {}  // NOLINT: implicit by design
    Result(Status s) : status_(s) {}                                     // NOLINT
    bool ok() const { return status_ == Status::Ok; }
    explicit operator bool() const { return ok(); }
    Status status() const { return status_; }
    T& value() & { return value_; }
    T&& value() && { return std::move(value_); }
    T* operator->() { return &value_; }

private:
    Status status_;
    T value_{};
};

template <>
class Result<void> {
public:
    Result(Status s = Status::Ok) : status_(s) {}  // NOLINT
    bool ok() const { return status_ == Status::Ok; }
    explicit operator bool() const { return ok(); }
    Status status() const { return status_; }

private:
    Status status_;
};

inline Status to_status(MlvStatus s) { return static_cast<Status>(s); }

using ClientId = MlvClientId;
enum class PingStatus : uint32_t { Ok = MLV_PING_OK, NeedRemount = MLV_PING_NEED_REMOUNT };
enum class StepResult : int32_t {
    Done = MLV_STEP_DONE,
    More = MLV_STEP_MORE,
    RetryLater = MLV_STEP_RETRY_LATER,
    Failed = MLV_STEP_FAILED,
};

/// A step's answer and, for Failed, the code recorded with it.
struct StepOutcome {
    StepResult result = StepResult::Done;
    int32_t error_code = 0;
    StepOutcome(StepResult r = StepResult::Done, int32_t code = 0) : result(r), error_code(code) {}  // NOLINT
};

/// A handle to one client incarnation: the hot path. Move-only; released on destruction.
class Handle {
public:
    Handle() = default;
    explicit Handle(MlvHandle* h) : h_(h), word_(mlv_handle_word(h)) {}
    Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)), word_(std::exchange(o.word_, nullptr)) {}
    Handle& operator=(Handle&& o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, nullptr);
            word_ = std::exchange(o.word_, nullptr);
        }
        return *this;
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() { reset(); }

    /// May this incarnation's resources serve new work? One acquire load of the incarnation's
    /// word, inlined here (the word's address was taken once, by mlv_handle_word, when the
    /// handle was wrapped): no call. An empty handle is not serving.
    bool is_serving() const noexcept { return word_ && load() < MLV_WORD_ACTIVE_BELOW; }
    /// Must this incarnation's resources be kept? Inlined likewise. An empty handle answers
    /// true (fail safe).
    bool should_retain() const noexcept { return !word_ || load() < MLV_WORD_RETAINED_BELOW; }
    /// The same answer as is_serving() through the C ABI: one tag check and one acquire load
    /// behind one call (what a C caller without the word's address does).
    bool is_serving_call() const noexcept { return mlv_handle_is_serving(h_); }
    MlvHandleInfo info() const {
        MlvHandleInfo i{};
        mlv_handle_info(h_, &i);
        return i;
    }
    uint64_t incarnation() const { return info().incarnation; }
    explicit operator bool() const { return h_ != nullptr; }
    const MlvHandle* get() const { return h_; }
    void reset() noexcept {
        word_ = nullptr;  // the word is this incarnation's only while the handle is held
        if (h_) mlv_handle_release(h_);
        h_ = nullptr;
    }

private:
    uint64_t load() const noexcept { return __atomic_load_n(word_, __ATOMIC_ACQUIRE); }

    MlvHandle* h_ = nullptr;
    const uint64_t* word_ = nullptr;
};

/// The allocation filter in one call: out[i] = whether handles[i] serves (a null entry, e.g. an
/// empty Handle's get(), does not); returns how many serve. One call for the whole batch, then
/// one tag check and one acquire load per handle. Errors: InvalidParams (n above 2^20, or a
/// null array while n > 0); nothing is written to out then.
inline Result<size_t> filter_serving(const MlvHandle* const* handles, size_t n, bool* out) noexcept {
    size_t count = 0;
    Status s = to_status(mlv_handles_serving(handles, n, out, &count));
    if (s != Status::Ok) return s;
    return count;
}

/// The embedder's callbacks. Empty functions are allowed (an empty step has nothing to clean).
struct Callbacks {
    std::function<void(const MlvEvent&)> on_event;
    std::function<void(const MlvJob&)> on_offboarded;
    std::function<StepOutcome(const MlvJob&)> metadata, segments, local_disk, quota, external_metadata;
};

namespace detail {
inline void on_event(void* u, const MlvEvent* e) noexcept {
    try {
        auto* cb = static_cast<Callbacks*>(u);
        if (cb->on_event) cb->on_event(*e);
    } catch (...) {
    }
}
inline void on_offboarded(void* u, const MlvJob* j) noexcept {
    try {
        auto* cb = static_cast<Callbacks*>(u);
        if (cb->on_offboarded) cb->on_offboarded(*j);
    } catch (...) {
    }
}
template <std::function<StepOutcome(const MlvJob&)> Callbacks::*Step>
int32_t step(void* u, const MlvJob* j, int32_t* code) noexcept {
    try {
        auto& f = static_cast<Callbacks*>(u)->*Step;
        if (!f) return MLV_STEP_DONE;
        StepOutcome o = f(*j);
        *code = o.error_code;
        return static_cast<int32_t>(o.result);
    } catch (...) {
        *code = -1;
        return MLV_STEP_FAILED;
    }
}
}  // namespace detail

/// What a shutdown exported.
struct Exported {
    std::vector<uint8_t> snapshot;
    size_t pending_jobs = 0;
};

class Core;

/// A mount between begin and commit: run the mount work, then commit() or let it go (abort).
class PendingMount {
public:
    PendingMount() = default;
    PendingMount(MlvMount* m, uint64_t inc) : m_(m), incarnation_(inc) {}
    PendingMount(PendingMount&& o) noexcept : m_(std::exchange(o.m_, nullptr)), incarnation_(o.incarnation_) {}
    PendingMount& operator=(PendingMount&& o) noexcept {
        if (this != &o) {
            abort();
            m_ = std::exchange(o.m_, nullptr);
            incarnation_ = o.incarnation_;
        }
        return *this;
    }
    PendingMount(const PendingMount&) = delete;
    PendingMount& operator=(const PendingMount&) = delete;
    ~PendingMount() { abort(); }

    /// The incarnation the mount work binds to.
    uint64_t incarnation() const { return incarnation_; }
    /// Commits; UnavailableInCurrentStatus means "lost: undo the work" (`result.lost` says why;
    /// MLV_LOST_CORE_FREED once the Core is destroyed: then nothing is committed or called).
    Result<Handle> commit(MlvMountResult* result = nullptr) {
        MlvHandle* h = nullptr;
        MlvStatus s = mlv_mount_commit(std::exchange(m_, nullptr), result, &h);
        if (s != MLV_OK) return to_status(s);
        return Handle(h);
    }
    /// Abandons the mount (its work failed). Idempotent; also after the Core is destroyed.
    void abort() noexcept {
        if (m_) mlv_mount_abort(std::exchange(m_, nullptr));
    }

private:
    MlvMount* m_ = nullptr;
    uint64_t incarnation_ = 0;
};

/// Construction options.
struct Options {
    MlvConfig config{};
    std::string config_text;  // YAML or JSON; empty for none
    bool manual_clock = false;
    Callbacks callbacks;
    std::vector<uint8_t> snapshot;  // restore from it if not empty
};

/// A liveness core. Move-only; freed (threads stopped) on destruction.
class Core {
public:
    static Result<Core> create(Options o) {
        auto cb = std::make_unique<Callbacks>(std::move(o.callbacks));
        MlvCoreOptions c{};
        mlv_core_options_default(&c);
        c.config = o.config;
        c.config_text = reinterpret_cast<const uint8_t*>(o.config_text.data());
        c.config_text_len = o.config_text.size();
        c.clock = o.manual_clock ? MLV_CLOCK_MANUAL : MLV_CLOCK_SYSTEM;
        c.snapshot = o.snapshot.empty() ? nullptr : o.snapshot.data();
        c.snapshot_len = o.snapshot.size();
        c.callbacks.user_data = cb.get();
        c.callbacks.on_event = &detail::on_event;
        c.callbacks.on_offboarded = &detail::on_offboarded;
        c.callbacks.metadata = &detail::step<&Callbacks::metadata>;
        c.callbacks.segments = &detail::step<&Callbacks::segments>;
        c.callbacks.local_disk = &detail::step<&Callbacks::local_disk>;
        c.callbacks.quota = &detail::step<&Callbacks::quota>;
        c.callbacks.external_metadata = &detail::step<&Callbacks::external_metadata>;
        MlvCore* core = nullptr;
        MlvStatus s = mlv_core_new(&c, &core);
        if (s != MLV_OK) return to_status(s);
        return Core(core, std::move(cb));
    }

    Core() = default;
    Core(Core&& o) noexcept : c_(std::exchange(o.c_, nullptr)), cb_(std::move(o.cb_)) {}
    Core& operator=(Core&& o) noexcept {
        if (this != &o) {
            destroy();
            c_ = std::exchange(o.c_, nullptr);
            cb_ = std::move(o.cb_);
        }
        return *this;
    }
    Core(const Core&) = delete;
    Core& operator=(const Core&) = delete;
    ~Core() { destroy(); }

    Result<PingStatus> ping(ClientId id, uint64_t token = 0) const {
        MlvPingStatus st = 0;
        MlvStatus s = mlv_ping(c_, id, token, &st);
        if (s != MLV_OK) return to_status(s);
        return static_cast<PingStatus>(st);
    }
    /// First half of a mount: UnavailableInCurrentStatus = the Offline barrier.
    Result<PendingMount> begin_mount(ClientId id, uint64_t token = 0) const {
        MlvMount* m = nullptr;
        uint64_t inc = 0;
        MlvStatus s = mlv_mount_begin(c_, id, token, &m, &inc);
        if (s != MLV_OK) return to_status(s);
        return PendingMount(m, inc);
    }
    /// begin → work(incarnation) → commit if it returned Status::Ok, else abort and return its
    /// status. If the commit is lost, `undo(incarnation)` runs and the status is returned.
    template <class Work, class Undo>
    Result<Handle> mount(ClientId id, uint64_t token, Work&& work, Undo&& undo) const {
        auto p = begin_mount(id, token);
        if (!p) return p.status();
        uint64_t inc = p->incarnation();
        Status ws = work(inc);
        if (ws != Status::Ok) return ws;  // the work failed: abort (PendingMount's destructor)
        auto h = p->commit();
        if (!h) undo(inc);
        return h;
    }
    Result<void> set_ready(ClientId id, bool ready = true) const { return to_status(mlv_set_ready(c_, id, ready)); }
    Result<Handle> handle(ClientId id) const {
        MlvHandle* h = nullptr;
        MlvStatus s = mlv_handle_get(c_, id, &h);
        if (s != MLV_OK) return to_status(s);
        return Handle(h);
    }
    Result<MlvTickSummary> tick() const {
        MlvTickSummary t{};
        MlvStatus s = mlv_tick(c_, &t);
        if (s != MLV_OK) return to_status(s);
        return t;
    }
    Result<void> start_monitor() const { return to_status(mlv_monitor_start(c_)); }
    Result<void> stop_monitor() const { return to_status(mlv_monitor_stop(c_)); }
    Result<void> advance_clock(uint64_t ms) const { return to_status(mlv_clock_advance(c_, ms)); }
    uint64_t now_ms() const {
        uint64_t t = 0;
        mlv_clock_now(c_, &t);
        return t;
    }
    Result<void> reload(const MlvConfig& c, const std::string& text = {}) const {
        return to_status(mlv_core_reload(c_, &c, reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    }
    Result<std::vector<uint8_t>> snapshot() const {
        MlvBytes b{};
        MlvStatus s = mlv_snapshot(c_, &b);
        if (s != MLV_OK) return to_status(s);
        std::vector<uint8_t> out(b.data, b.data + b.len);
        mlv_bytes_free(&b);
        return out;
    }
    /// Stops the monitor, drains offboarding for shutdown_drain_ms, exports the pending jobs.
    Result<Exported> shutdown() const {
        MlvBytes b{};
        Exported e;
        MlvStatus s = mlv_core_shutdown(c_, &b, &e.pending_jobs);
        if (s != MLV_OK) return to_status(s);
        e.snapshot.assign(b.data, b.data + b.len);
        mlv_bytes_free(&b);
        return e;
    }
    MlvStats stats() const {
        MlvStats st{};
        mlv_stats(c_, &st);
        return st;
    }
    const MlvCore* get() const { return c_; }

private:
    Core(MlvCore* c, std::unique_ptr<Callbacks> cb) : c_(c), cb_(std::move(cb)) {}
    void destroy() noexcept {
        if (c_) mlv_core_free(std::exchange(c_, nullptr));
        cb_.reset();  // after the core: no callback can run any more, pending mounts included
    }
    MlvCore* c_ = nullptr;
    std::unique_ptr<Callbacks> cb_;
};

}  // namespace mooncake_liveness
