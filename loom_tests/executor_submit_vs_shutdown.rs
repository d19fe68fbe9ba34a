//! Race: a `submit` on one thread against `shutdown` on another, with the worker running.
//!
//! The executor's types decide how the two can meet: `submit` borrows the executor and
//! `shutdown` consumes it, so a submitter must reach it through a shared handle, and a handle
//! that can hand the executor over to `shutdown` is a lock around an `Option` — the master's
//! `Pool` (`master/offboard/pool.rs`: `submit_to_workers` submits under the pool lock and parks
//! a job it cannot submit; `stop_offboarding_workers` takes the executor out under the lock and
//! shuts it down outside it). This model is that handle (under loom the master has no pool:
//! its models drive jobs by hand) around the real executor. A push cannot meet the queue's close
//! through it (`PushError::Closed`): the lock orders every submit before the take, hence before
//! the close. That race, one layer down, is `queue_close_vs_push`'s.
//!
//! Invariant 18: every job ends in exactly one place. The job the main thread submitted first is
//! completed or handed back by `shutdown`; the racing one is refused to its submitter (the
//! executor was already taken: the caller keeps the job, as the master parks it), completed, or
//! handed back (never run, or interrupted).
//!
//! Allowed outcomes, for the racing job: refused, completed, handed back never run, handed back
//! interrupted.
#![cfg(loom)]

mod common;

use common::executor::{account, fate, spawn, Succeed, DRAIN};
use common::{model_covering, Master};
use loom::sync::{Arc, Mutex};
use loom::thread;
use mooncake_liveness::ClientId;

const REFUSED: &str = "refused: the executor was taken";
const COMPLETED: &str = "completed";

/// The main thread submits one job, then a submitter thread submits a second through the handle
/// while the main thread takes the executor out of it and shuts it down (one-poll drain); the
/// one worker runs throughout.
#[test]
fn submit_vs_shutdown_through_a_handle() {
    let expected = [REFUSED, COMPLETED, "handed back: never run", "handed back: interrupted"];
    model_covering("submit_vs_shutdown_through_a_handle", &expected, |seen| {
        let clients = [ClientId(1), ClientId(2)];
        let mut master = Master::new();
        let mut jobs = master.offline_jobs(&clients);
        let job = jobs.pop().unwrap();
        let (exec, done) = spawn(&master, Succeed);
        exec.submit(jobs.pop().unwrap())
            .expect("an open queue with room takes the job");
        let handle = Arc::new(Mutex::new(Some(exec)));

        let submitter = {
            let handle = handle.clone();
            thread::spawn(move || match handle.lock().unwrap().as_ref() {
                Some(exec) => match exec.submit(job) {
                    Ok(()) => None,
                    Err(e) => panic!("a push ordered before the close by the lock was refused: {e:?}"),
                },
                None => Some(job),
            })
        };
        let exec = handle.lock().unwrap().take().expect("only this thread takes it");
        let returned = exec.shutdown(DRAIN);
        let refused: Vec<_> = submitter.join().unwrap().into_iter().collect();

        let completed = done.take();
        account(&master, &clients, &completed, &returned, &refused);
        if !refused.is_empty() {
            assert_eq!((refused[0].client(), refused[0].attempts()), (clients[1], 0));
            seen.saw(REFUSED);
        }
        if completed.iter().any(|d| d.client == clients[1]) {
            seen.saw(COMPLETED);
        }
        for job in returned.iter().filter(|j| j.client() == clients[1]) {
            seen.saw(fate(job));
        }
    });
}
