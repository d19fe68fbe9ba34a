"""The real master's clock as the model's: milliseconds on which every real monitor tick is a
model tick.

Both real masters run their client monitor in a thread started by the master service's
constructor (:data:`conformance.masterlog.ANCHOR` is logged right after it starts) that does
its work and then sleeps ``kClientMonitorSleepMs`` = 1000 ms. So it ticks at the anchor, then
each tick a little more than 1000 ms after the previous one: the work and the sleep's
overshoot add up (the *drift*: a fraction of a millisecond per tick on an idle machine, bursts
of tens to hundreds of ms when other jobs load the two cores). The ticks are not logged; a tick
that changed a client's state is (each liveness line except a recovery, which happens at the
signal).

:class:`TimeBase` maps a Unix time to model ms: the anchor is 0, each such tick line lands on
the model tick of its index (``1000 k``: k is its distance from the previous tick line in
whole seconds), and times in between are interpolated. The drift is non-decreasing, so a time
between two tick lines is misplaced by at most the drift accumulated between them. Two things
restart the grid, and the trace's ``stall`` then wakes the model's monitor where the real one
woke (``wake_ms``):

- a master stopped with SIGSTOP wakes its monitor at once when it resumes (its sleep's
  deadline has passed): the pause's length is kept, and its ticks start again at the resume;
- a *hold-up*: the monitor's batch waited for a lock a long RPC held (main's expiry batch
  unmounts under the metadata shards' locks, which ``remove_by_regex`` holds), so its next tick
  came more than :data:`LATE_MS` late while the master handled no RPC at all (its RPC thread was
  held too). The ticks in between never ran.

None of this looks at a model's prediction: it places the real ticks and signals on the model's
clock; which tick a transition falls on is what the model must predict.

``mooncake-liveness serve`` logs every tick (``schedule="logged"``, told by its start line
``action=client_monitor_started``; each tick's ``action=client_monitor_tick, us=N`` line, with
``--vmodule=monitor=1``, is stamped when the tick woke and says how long it ran;
src/serve/monitor.rs): nothing is inferred. Times map to model ms continuously from the start
line; the model's monitor is made to tick when the real one did (:attr:`TimeBase.align`: the
trace's ``stall`` lines of no length whose ``wake_ms`` moves the model's next tick to the real
one's time, which replay allows whenever a tick came a period or more after the previous one; a
tick that came sooner stays one period after it, and how far that is from the real one is
measured), and each event line of a tick (stamped with the master clock's millisecond inside
the tick) is that tick's (:meth:`TimeBase.at_tick`).

:attr:`TimeBase.slack_ms` is the measured uncertainty of a signal's place relative to the
ticks: the largest drift accumulated between two tick lines, or the largest stray of the
clients' own 1 s Ping loops (:func:`conformance.trace.ping_jitter`: the same sleep-after-work
loop on the same cores) if larger (with every tick logged: the largest distance between a model
tick and the real one instead), plus twice the slowest Ping's handling time (its request line
is written before the handler samples the clock) and 2 ms for the integer milliseconds of a
trace. A deadline that close to a tick may fall on either side of it (the comparison tries
both); a time that is itself a tick line maps exactly.
"""

import bisect
import math

TICK_MS = 1000
ROUNDING_MS = 2.0
LATE_MS = 100.0
# serve stamps an event line with the master clock's whole millisecond (up to 1 ms before the
# instant) through a monotonic/wall pairing read within 0.2 ms (src/serve/log.rs).
PAIRING_S = 0.0002
EVENT_EARLY_S = 0.001 + PAIRING_S


class TooNoisy(Exception):
    """The real monitor's ticks cannot be told apart (more than half a tick of drift between
    two tick lines)."""


class TimeBase:
    def __init__(
        self,
        anchor,
        pauses=(),
        tick_times=(),
        other_times=(),
        ping_latency_us=0,
        jitter_ms=0.0,
        tick_ms=TICK_MS,
        schedule="sleep",
        tick_log=(),
    ):
        self.anchor = anchor
        self.tick = tick_ms
        self.schedule = schedule
        self.late_ms = min(LATE_MS, tick_ms / 4.0)
        self.pauses = sorted((p, r) for p, r in pauses if r is not None)
        ticks = sorted(t for t in tick_times if t >= anchor)
        others = sorted(other_times)
        self.woke = []  # [(stopped, woke, "pause" or "hold-up")]
        self.points = [(anchor, 0.0)]  # (real, model) through which the clock is interpolated
        self.grid_starts = {anchor}
        self.accumulated = 0.0  # the largest drift between two consecutive points of a grid
        self.logged = []  # logged ticks: [(real start, real end, model ms it runs at)]
        self.align = []  # [(model ms, wake_ms)]: the model's next tick wake_ms after that tick
        if schedule == "logged":
            self._place_logged(sorted(tick_log))
            jitter_ms = 0.0  # the ticks are measured, not inferred from sleep loops
        else:
            self._place_sleeping(ticks, others)
        self.jitter_ms = jitter_ms
        self.slack_ms = max(self.accumulated, jitter_ms) + 2 * ping_latency_us / 1000.0 + ROUNDING_MS

    def _place_logged(self, tick_log):
        """Every tick logged (see the module doc): the model's ticks follow the real ones."""
        if not tick_log:
            raise TooNoisy("the master logs its start line but no tick (serve needs --vmodule=monitor=1)")
        for p, r in self.pauses:
            self.woke.append((p, r, "pause"))
        prev = 0  # the model's previous tick (its first is one period after the start)
        for t, us in tick_log:
            at = self.ms(t)
            want = int(round(at))
            if want >= prev + self.tick:
                if want > prev + self.tick:
                    self.align.append((prev, want - prev))
                run = want
            else:  # sooner than a period after the previous one: the model cannot follow
                run = prev + self.tick
            self.accumulated = max(self.accumulated, abs(run - at))
            self.logged.append((t, t + us / 1e6, run))
            prev = run

    def at_tick(self, t):
        """The model ms of the logged tick whose run holds ``t`` (an event line's stamp, the
        master clock's millisecond, may lie up to a millisecond and the clock pairing before
        the tick's own stamp), or ``t``'s own model ms."""
        i = bisect.bisect_right([x[0] for x in self.logged], t + EVENT_EARLY_S) - 1
        if i >= 0 and t <= self.logged[i][1] + PAIRING_S:
            return float(self.logged[i][2])
        return self.ms(t)

    def wake_tick(self, resumed):
        """(real start, real end, model ms) of the first logged tick after a pause that ended at
        ``resumed``, or None."""
        return next((x for x in self.logged if x[0] >= resumed - EVENT_EARLY_S), None)

    def wake_ms(self, resumed):
        """The model ms of the monitor's first tick after a pause that ended at ``resumed``."""
        tick = self.wake_tick(resumed)
        return tick[2] if tick is not None else int(round(self.ms(resumed)))

    def _place_sleeping(self, ticks, others):
        """A monitor that sleeps one period after each tick's work (the real masters')."""
        anchor = self.anchor
        prev = anchor
        base = 0.0  # model ms of the current grid's start: its ticks are base + 1000 k
        events = sorted([(p, "pause", r) for p, r in self.pauses] + [(t, "tick", None) for t in ticks])
        for t, what, r in events:
            if what == "pause":
                at_pause = self.ms(t)
                last_tick = base + math.floor((at_pause - base) / self.tick) * self.tick
                at_resume = at_pause + (r - t) * 1000.0
                if at_resume - last_tick >= self.tick:  # it slept past a tick: it woke at the resume
                    base = self._restart(t, r, at_resume, "pause")
                    prev = r
                continue
            gap = (t - prev) * 1000.0
            k = max(0, math.floor((gap + self.late_ms / 2) / self.tick))  # ticks are late, never early
            late = gap - k * self.tick
            quiet = not any(prev < x < t for x in others[bisect.bisect_right(others, prev) : bisect.bisect_left(others, t)])
            if late > self.late_ms and quiet and k >= 1:
                # Held up: the batch at ``prev`` ended late, the next tick came at ``t``.
                base = self._restart(prev, t, self._model(prev) + gap, "hold-up")
                prev = t
                continue
            if late > self.tick / 2 - self.late_ms:
                raise TooNoisy(
                    f"the real monitor's ticks drifted {late:.0f} ms in {k} ticks: the machine is too loaded to tell its ticks apart"
                )
            self.accumulated = max(self.accumulated, late)
            self.points.append((t, self._model(prev) + k * self.tick))
            prev = t

    def _model(self, real):
        """The model ms of a point already placed."""
        for r, m in reversed(self.points):
            if r <= real:
                return m + (real - r) * 1000.0
        return (real - self.anchor) * 1000.0

    def _restart(self, stopped, woke, continuous_ms, what):
        """The monitor's grid restarts at ``woke``, on the model tick ``continuous_ms`` rounds to."""
        self.woke.append((stopped, woke, what))
        self.points.append((woke, float(round(continuous_ms))))
        self.grid_starts.add(woke)
        return self.points[-1][1]

    def ms(self, t):
        """Model ms of Unix time ``t`` (a float; the trace rounds it)."""
        i = bisect.bisect_right([p[0] for p in self.points], t) - 1
        if i < 0:
            return (t - self.anchor) * 1000.0
        r0, m0 = self.points[i]
        if i + 1 < len(self.points) and self.points[i + 1][0] not in self.grid_starts:
            r1, m1 = self.points[i + 1]
            return m0 + (t - r0) * (m1 - m0) / (r1 - r0)
        return m0 + (t - r0) * 1000.0

    def real(self, ms):
        """The Unix time of model ms ``ms`` (the inverse of :meth:`ms`)."""
        i = bisect.bisect_right([p[1] for p in self.points], ms) - 1
        i = max(i, 0)
        r0, m0 = self.points[i]
        if i + 1 < len(self.points) and self.points[i + 1][0] not in self.grid_starts:
            r1, m1 = self.points[i + 1]
            return r0 + (ms - m0) * (r1 - r0) / (m1 - m0)
        return r0 + (ms - m0) / 1000.0

    def wakes(self):
        """[(stopped, woke)] of each pause the monitor woke from at the resume and of each
        hold-up after which its tick came late (``stopped`` is then the tick line before): its
        ticks restart at ``woke``, so the trace's ``stall`` gets ``wake_ms``."""
        return [(p, r) for p, r, _ in self.woke]

    def holdups(self):
        return [(p, r) for p, r, w in self.woke if w == "hold-up"]

    def describe(self):
        held = f", {len(self.holdups())} hold-up(s)" if self.holdups() else ""
        if self.schedule == "logged":
            return (
                f"{len(self.logged)} ticks logged, the model's within {self.accumulated:.1f} ms of them "
                f"({len(self.align)} moved later to follow a late one): slack {self.slack_ms:.1f} ms"
            )
        return (
            f"monitor drift up to {self.accumulated:.1f} ms between its tick lines{held}, "
            f"1 s sleep loops within {self.jitter_ms:.1f} ms: slack {self.slack_ms:.1f} ms"
        )
