//! The model's small indices and the master's names and events.

use super::super::model::{Ev, State, CLIENTS, CLIENT_NAMES, KEY_NAMES, SEGMENT_NAMES};
use crate::liveness::{ClientId, LivenessState};
use crate::master::{Master, MasterEvent};
use crate::LivenessEvent;

pub(super) fn client_index(name: &str) -> usize {
    CLIENT_NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("unknown client {name}"))
}

pub(super) fn segment_index(name: &str) -> usize {
    SEGMENT_NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("unknown segment {name}"))
}

pub(super) fn nof_index(name: &str) -> usize {
    super::super::model::NOF_NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("unknown NoF segment {name}"))
}

/// A replica descriptor's segment name as the model's replica index (`local_disk:cN` is
/// client N's LocalDisk).
pub(super) fn replica_index_of(name: &str) -> usize {
    match name.strip_prefix("local_disk:") {
        Some(client) => super::super::model::disk(client_index(client)),
        None => segment_index(name),
    }
}

/// The descriptor of the model's replica index `r`.
pub(super) fn replica_desc(md: &super::super::model::Model, r: usize) -> crate::master::ReplicaDesc {
    match super::super::model::disk_owner(r) {
        Some(c) => crate::master::ReplicaDesc {
            segment: format!("local_disk:{}", CLIENT_NAMES[c]),
            client: CLIENT_NAMES[c].to_string(),
        },
        None => crate::master::ReplicaDesc {
            segment: SEGMENT_NAMES[r].to_string(),
            client: CLIENT_NAMES[md.segments[&r].owner].to_string(),
        },
    }
}

pub(super) fn state_of(s: LivenessState) -> State {
    match s {
        LivenessState::Active => State::Active,
        LivenessState::Suspected => State::Suspected,
        LivenessState::Offline => State::Offline,
    }
}

/// A master event as the model writes it.
pub(super) fn ev_of(m: &Master, e: &MasterEvent) -> Ev {
    let c = |id| client_index(&m.client_name(id));
    match e {
        MasterEvent::Liveness(LivenessEvent::Transition(t)) => Ev::Transition {
            at: t.at_ms,
            client: c(t.client),
            incarnation: t.incarnation.0,
            from: state_of(t.from),
            to: state_of(t.to),
        },
        MasterEvent::OffboardingRetry {
            client,
            incarnation,
            step,
            attempt,
            at_ms,
        } => Ev::Retry {
            at: *at_ms,
            client: c(*client),
            incarnation: incarnation.0,
            step: *step as usize,
            attempt: *attempt,
        },
        MasterEvent::Offboarded {
            client,
            incarnation,
            attempts,
            at_ms,
        } => Ev::Offboarded {
            at: *at_ms,
            client: c(*client),
            incarnation: incarnation.0,
            attempts: *attempts,
        },
        MasterEvent::Liveness(LivenessEvent::MassSuspicionBrake {
            at_ms,
            engaged,
            suspected,
            registered,
        }) => Ev::Brake {
            at: *at_ms,
            engaged: *engaged,
            suspected: *suspected,
            registered: *registered,
        },
        other => panic!("unexpected event (stall reports are taken out by the tick check): {other:?}"),
    }
}

pub(super) fn key_index(name: &str) -> usize {
    KEY_NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("unknown key {name}"))
}

/// The master's ids of the harness's clients (`None` until a client is first named).
pub(super) fn client_ids(m: &Master) -> [Option<ClientId>; CLIENTS] {
    CLIENT_NAMES.map(|n| m.known_client_id(n))
}
