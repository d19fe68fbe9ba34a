//! The human-readable forms of the reports: the terminal table, Markdown, and the takeaways.

use super::policy::Policy;
use super::report::{FalseOffboardCauses, Latency, PolicyReport, SimReport, SweepReport};
use super::workload::secs;
use std::fmt::Write as _;

fn int(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "n/a".into(), int)
}

fn sec(v: f64) -> String {
    if v >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn share(part: u64, whole: u64) -> String {
    format!("{:.1}%", 100.0 * part as f64 / whole.max(1) as f64)
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        return int(part);
    }
    format!("{} ({})", int(part), share(part, whole))
}

/// The stall kinds that silenced a policy's falsely offboarded clients, largest first.
fn causes(c: &FalseOffboardCauses) -> String {
    let mut v = [
        (c.heartbeat_blocked, "heartbeat_blocked"),
        (c.client_pause, "client_pause"),
        (c.partition, "partition"),
        (c.master_pause, "master_pause"),
        (c.other, "lost pings"),
    ];
    v.sort_by_key(|x| std::cmp::Reverse(x.0));
    let parts: Vec<String> = v
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, k)| format!("{} by {k}", int(*n)))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// Legacy against the best RFC policy: who was offboarded, what was lost.
fn why(l: &PolicyReport, b: &PolicyReport) -> String {
    match (l.healthy_falsely_offboarded, b.healthy_falsely_offboarded) {
        (Some(lf), Some(bf)) => format!(
            "Why it matters: {} offboarded {} healthy clients ({}), losing {} objects; {} of its Gets missed ({} inside incident windows). {} offboarded {} ({}), lost {} and missed {} ({}).",
            l.policy,
            int(lf),
            l.false_offboard_causes.map_or_else(|| "n/a".into(), |c| causes(&c)),
            opt(l.objects_lost_to_false_offboarding),
            share(l.get_misses, l.gets),
            share(l.incident_misses, l.incident_gets),
            b.policy,
            int(bf),
            b.false_offboard_causes.map_or_else(|| "n/a".into(), |c| causes(&c)),
            opt(b.objects_lost_to_false_offboarding),
            share(b.get_misses, b.gets),
            share(b.incident_misses, b.incident_gets),
        ),
        _ => format!(
            "Why it matters: {} offboarded {} clients that pinged again later (they were alive); {} offboarded {}.",
            l.policy,
            int(l.offboarded_then_heard_again),
            b.policy,
            int(b.offboarded_then_heard_again)
        ),
    }
}

/// Legacy at rfc's total silence budget against rfc: who keeps getting traffic while silent.
fn equal_budget(l: &PolicyReport, r: &PolicyReport) -> Option<String> {
    Some(format!(
        "At equal tolerance ({} s of silence): {} routed {} Gets to an owner that could not answer (it serves a silent client until it expires) and offboarded {} healthy clients; {} routed {} (a silent client stops serving after {} s) and offboarded {}.",
        sec(l.active_ttl_s),
        l.policy,
        pct(l.gets_to_unreachable?, l.gets),
        int(l.healthy_falsely_offboarded?),
        r.policy,
        pct(r.gets_to_unreachable?, r.gets),
        sec(r.active_ttl_s),
        int(r.healthy_falsely_offboarded?),
    ))
}

/// What the recovery window costs: slower crash detection, dead resources held.
fn price(l: &PolicyReport, b: &PolicyReport) -> Option<String> {
    let (bo, lo) = (b.crash_to_offline?, l.crash_to_offline?);
    Some(format!(
        "The price: a dead client is declared Offline {} s after its crash (median; p99 {} s) instead of {} s, and its resources stay held, not served, meanwhile ({} client-s here).",
        sec(bo.median_s),
        sec(bo.p99_s),
        sec(lo.median_s),
        int(b.suspected_client_s_dead.unwrap_or(0.0).round() as u64)
    ))
}

fn latency(l: Option<Latency>) -> String {
    l.map_or_else(|| "n/a".into(), |l| format!("{} / {} s", sec(l.median_s), sec(l.p99_s)))
}

/// A table: a header row and labelled rows of cells.
struct Grid {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Grid {
    fn text(&self) -> String {
        let cols = self.head.len();
        let width = |c: usize| {
            std::iter::once(&self.head)
                .chain(&self.rows)
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..cols).map(width).collect();
        let line = |r: &Vec<String>| {
            let mut s = String::new();
            for (c, w) in widths.iter().enumerate() {
                let cell = r.get(c).map_or("", String::as_str);
                let pad = w - cell.chars().count();
                if c == 0 {
                    let _ = write!(s, "{cell}{}", " ".repeat(pad));
                } else {
                    let _ = write!(s, "  {}{cell}", " ".repeat(pad));
                }
            }
            s.trim_end().to_string() + "\n"
        };
        let mut out = line(&self.head);
        out += &"-".repeat(widths.iter().sum::<usize>() + 2 * (cols - 1));
        out.push('\n');
        for r in &self.rows {
            out += &line(r);
        }
        out
    }

    fn markdown(&self) -> String {
        let row = |r: &Vec<String>| format!("| {} |\n", r.join(" | "));
        let mut out = row(&self.head);
        out += &format!("|{}\n", "---|".repeat(self.head.len()));
        for r in &self.rows {
            out += &row(r);
        }
        out
    }
}
impl SimReport {
    fn grid(&self) -> Grid {
        let mut head = vec![String::new()];
        head.extend(self.policies.iter().map(|p| p.policy.to_string()));
        let row = |label: &str, f: &dyn Fn(&PolicyReport) -> String| {
            let mut r = vec![label.to_string()];
            r.extend(self.policies.iter().map(f));
            r
        };
        let onoff = |b: bool| if b { "on" } else { "off" };
        let legacy = |p: &PolicyReport| p.policy.is_legacy();
        let cause = |label: &str, f: fn(&FalseOffboardCauses) -> u64| {
            row(label, &move |p: &PolicyReport| {
                p.false_offboard_causes.map_or_else(|| "n/a".into(), |c| int(f(&c)))
            })
        };
        let mut rows = vec![
            row("TTL", &|p| {
                if legacy(p) {
                    format!("client_ttl {} s", sec(p.active_ttl_s))
                } else {
                    format!("{} + {} s", sec(p.active_ttl_s), sec(p.suspicion_ttl_s))
                }
            }),
            row("stall brake / mass-suspicion brake", &|p| {
                if legacy(p) {
                    "- / -".into()
                } else {
                    format!("{} / {}", onoff(p.stall_brake), onoff(p.mass_suspicion_brake))
                }
            }),
            row("Healthy clients falsely offboarded", &|p| {
                opt(p.healthy_falsely_offboarded)
            }),
            cause("  by client_pause", |c| c.client_pause),
            cause("  by partition", |c| c.partition),
            cause("  by master_pause", |c| c.master_pause),
            cause("  by heartbeat_blocked", |c| c.heartbeat_blocked),
            cause("  by lost pings only", |c| c.other),
            row("Objects lost to false offboarding", &|p| {
                opt(p.objects_lost_to_false_offboarding)
            }),
            row("  + when jobs pending at the end finish", &|p| {
                format!(
                    "{} ({} jobs)",
                    opt(p.objects_pending_loss_false),
                    int(p.offboarding_jobs_pending_at_end)
                )
            }),
            row("Objects lost with crashed clients", &|p| {
                opt(p.objects_lost_with_crashed_clients)
            }),
            row("Get misses, overall", &|p| pct(p.get_misses, p.gets)),
            row("Get misses, incident windows", &|p| {
                pct(p.incident_misses, p.incident_gets)
            }),
            row("Objects recomputed after a miss", &|p| int(p.reputs)),
            row("Gets routed to an unreachable owner", &|p| {
                p.gets_to_unreachable.map_or_else(|| "n/a".into(), |v| pct(v, p.gets))
            }),
            row(
                "crash: detected (Offline / expired)",
                &|p| match (p.crashes_offline, p.crashes) {
                    (Some(d), Some(n)) => format!("{d} / {n}"),
                    _ => "n/a".into(),
                },
            ),
            row("  crash -> Suspected, median / p99", &|p| latency(p.crash_to_suspected)),
            row("  crash -> Offline, median / p99", &|p| latency(p.crash_to_offline)),
            row(
                "Suspected client-s, dead / alive",
                &|p| match (p.suspected_client_s_dead, p.suspected_client_s_alive) {
                    (Some(d), Some(a)) => format!("{} / {}", int(d.round() as u64), int(a.round() as u64)),
                    _ => int(p.suspected_client_s.round() as u64),
                },
            ),
            row("Suspicions / suspected then recovered", &|p| {
                format!("{} / {}", int(p.suspicions), int(p.suspected_then_recovered))
            }),
            row("Brakes fired: stall (credited) / mass", &|p| {
                if legacy(p) {
                    return "- / -".into();
                }
                let stall = if p.stalls_credited == 0 {
                    "0".into()
                } else {
                    format!("{} ({} s)", p.stalls_credited, sec(p.stall_credit_s))
                };
                format!("{stall} / {}", p.mass_suspicion_brake_engagements)
            }),
        ];
        if self.mode == "heartbeats" {
            let extra = [
                row("Clients offboarded", &|p| int(p.offboarded_clients)),
                row("  then heard again (were alive)", &|p| {
                    int(p.offboarded_then_heard_again)
                }),
                row("Objects removed by offboarding", &|p| int(p.objects_lost)),
            ];
            rows.splice(2..2, extra);
        }
        Grid { head, rows }
    }

    fn scenario_lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "scenario {}{}: {} clients, {} s simulated, seed {}; every policy sees the same trouble and traffic",
            self.scenario,
            if self.scenario == "stress" {
                " (a stress test: every stall kind at once)"
            } else {
                ""
            },
            int(self.clients as u64),
            sec(self.duration_s),
            self.seed
        )];
        let w = &self.workload;
        if self.mode == "heartbeats" {
            out.push("recorded heartbeat log: ground truth unknown (n/a)".into());
        } else {
            let parts: Vec<String> = w
                .partitions
                .iter()
                .map(|p| format!("{} clients for {} s at {} s", p.clients, sec(p.duration_s), sec(p.at_s)))
                .collect();
            out.push(format!(
                "client_pause: {} (median {} s, p99 {} s, max {} s; {} of 9 s or more)",
                int(w.pauses as u64),
                sec(w.pause_median_s),
                sec(w.pause_p99_s),
                sec(w.pause_max_s),
                w.pauses_over_9s
            ));
            out.push(format!(
                "partition: {}",
                if parts.is_empty() {
                    "none".into()
                } else {
                    parts.join("; ")
                }
            ));
            let spans = |v: &[super::workload::StallEvent]| {
                if v.is_empty() {
                    return "none".to_string();
                }
                let parts: Vec<String> = v
                    .iter()
                    .map(|e| {
                        format!(
                            "{} s at {} s ({} clients)",
                            sec(e.duration_s),
                            sec(e.at_s),
                            int(e.clients as u64)
                        )
                    })
                    .collect();
                parts.join("; ")
            };
            out.push(format!(
                "master_pause: {}{}",
                spans(&w.master_pauses),
                if w.master_pauses.is_empty() {
                    ""
                } else if w.master_pause_ticks_first {
                    " (on resume the monitor checks before the buffered pings)"
                } else {
                    " (on resume the buffered pings are applied first: the real master's usual order)"
                }
            ));
            out.push(format!(
                "heartbeat_blocked: {}; crash: {}",
                spans(&w.heartbeat_blocks),
                w.crashes.len()
            ));
        }
        let t = &self.traffic;
        out.push(format!(
            "traffic: {} puts/s (1-{} replicas), {} gets/s, at most {} objects",
            sec(t.puts_per_s),
            t.max_replicas,
            sec(t.gets_per_s),
            int(t.max_objects as u64)
        ));
        out
    }

    fn find(&self, p: Policy) -> Option<&PolicyReport> {
        self.policies.iter().find(|r| r.policy == p)
    }

    /// What the numbers say, in a few sentences.
    fn takeaways(&self) -> Vec<String> {
        let best = self.find(Policy::RfcBrakes).or_else(|| self.find(Policy::Rfc));
        let mut out = Vec::new();
        if let (Some(l), Some(b)) = (self.find(Policy::Legacy), best) {
            out.push(why(l, b));
            if let Some(price) = price(l, b) {
                out.push(price);
            }
        }
        if let (Some(l), Some(r)) = (self.find(Policy::Legacy30), best) {
            out.extend(equal_budget(l, r));
        }
        if let Some(b) = self.find(Policy::RfcBrakes) {
            out.push(format!(
                "Which brake fired under {}: the stall brake {} time(s) (it sees only a late monitor tick: a whole-master pause, not a blocked Ping path); the mass-suspicion brake engaged {} time(s) (it holds Offline commits while more than half the fleet is Suspected).",
                b.policy, b.stalls_credited, b.mass_suspicion_brake_engagements
            ));
        }
        if let (Some(r), Some(b)) = (self.find(Policy::Rfc), self.find(Policy::RfcBrakes)) {
            out.push(format!(
                "The brakes: {} had {} suspicions, {} Get misses and {} clients offboarded; {} had {}, {} and {}.",
                r.policy,
                int(r.suspicions),
                int(r.get_misses),
                int(r.offboarded_clients),
                b.policy,
                int(b.suspicions),
                int(b.get_misses),
                int(b.offboarded_clients)
            ));
        }
        if self.mode != "heartbeats" {
            out.push(self.guidance());
        }
        out
    }

    fn guidance(&self) -> String {
        let w = &self.workload;
        let longest = w.partitions.iter().map(|p| p.duration_s).fold(w.pause_max_s, f64::max);
        let unreachable = self
            .find(Policy::RfcBrakes)
            .or_else(|| self.policies.first())
            .and_then(|p| p.gets_to_unreachable.map(|v| pct(v, p.gets)))
            .unwrap_or_else(|| "n/a".into());
        format!(
            "Setting the TTLs: active + suspicion is the longest silence a live client survives and how long a dead client's resources stay held - set it above the longest pause or partition you expect (longest here: {} s). The active TTL alone is how long a silent client keeps getting traffic (Gets routed to an unreachable owner here: {}); shorter means faster failover, and under rfc the extra suspicions are harmless. Compare settings with the TTL sweep.",
            sec(longest),
            unreachable
        )
    }

    /// The terminal table, with the scenario above it and the takeaways below.
    pub fn table(&self) -> String {
        let mut out = String::new();
        for l in self.scenario_lines() {
            out += &format!("{l}\n");
        }
        out.push('\n');
        out += &self.grid().text();
        out.push('\n');
        for t in self.takeaways() {
            out += &format!("* {t}\n");
        }
        out
    }

    /// The report as Markdown (`report.md`).
    pub fn markdown(&self) -> String {
        let mut out = String::from("# Fleet simulation: recoverable liveness\n\n");
        for l in self.scenario_lines() {
            out += &format!("- {l}\n");
        }
        out += "\n## Results\n\n";
        out += &self.grid().markdown();
        out += "\n## What it means\n\n";
        for t in self.takeaways() {
            out += &format!("- {t}\n");
        }
        if self.mode != "heartbeats" {
            out += "\n## Crash detection\n\n";
            out += &self.crash_grid().markdown();
        }
        out += "\nClients per state over time: `states.svg`. Every number: `report.json`.\n";
        out
    }

    fn crash_grid(&self) -> Grid {
        let mut head = vec!["client".to_string(), "crash (s)".to_string()];
        head.extend(
            self.policies
                .iter()
                .map(|p| format!("{}: Suspected / Offline (s)", p.policy)),
        );
        let when = |v: Option<u64>| v.map_or_else(|| "-".into(), |ms| format!("{:.1}", secs(ms)));
        let mut rows = Vec::new();
        for c in &self.workload.crashes {
            let mut r = vec![c.client.clone(), format!("{:.1}", c.at_s)];
            for p in &self.policies {
                let d = p.crash_detections.iter().find(|d| d.client == c.client);
                r.push(d.map_or_else(
                    || "-".into(),
                    |d| format!("{} / {}", when(d.suspected_ms), when(d.offline_ms)),
                ));
            }
            rows.push(r);
        }
        Grid { head, rows }
    }
}

impl SweepReport {
    fn grid(&self) -> Grid {
        let head = [
            "active + suspicion",
            "false offboards",
            "objects lost",
            "Get misses",
            "Gets unreachable",
            "crash->Suspected",
            "crash->Offline",
            "dead held client-s",
        ]
        .map(String::from)
        .to_vec();
        let rows = self
            .cells
            .iter()
            .map(|c| {
                vec![
                    format!("{} + {} s", sec(c.active_ttl_s), sec(c.suspicion_ttl_s)),
                    opt(c.healthy_falsely_offboarded),
                    c.objects_lost_to_false_offboarding
                        .map_or_else(|| int(c.objects_lost), int),
                    int(c.get_misses),
                    opt(c.gets_to_unreachable),
                    latency(c.crash_to_suspected),
                    latency(c.crash_to_offline),
                    c.suspected_client_s_dead
                        .map_or_else(|| "n/a".into(), |v| int(v.round() as u64)),
                ]
            })
            .collect();
        Grid { head, rows }
    }

    /// The sweep as a terminal table: false offboards against detection latency per cell.
    pub fn table(&self) -> String {
        format!(
            "TTL sweep, policy {}: {} clients, {} s simulated, seed {}\n(healthy clients falsely offboarded and the objects lost with them, against crash detection latency, median / p99)\n\n{}",
            self.policy,
            int(self.clients as u64),
            sec(self.duration_s),
            self.seed,
            self.grid().text()
        )
    }

    /// The sweep as Markdown.
    pub fn markdown(&self) -> String {
        format!("# TTL sweep ({})\n\n{}", self.policy, self.grid().markdown())
    }
}
