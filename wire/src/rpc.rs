//! The master's RPCs a 0.3.13.post1 client calls: each one's function id, argument list and
//! reply type, with the struct_pack schemas computed once per process.
//!
//! Function id = the first four bytes of `md5("mooncake::WrappedMasterService::" + name)`, read
//! big-endian (coro_rpc's id of a registered member function; Ping → `0xd6c2dae5`). The
//! request body is the struct_pack of the argument list (one argument alone, several as a
//! tuple, none as an empty body); the reply body is the struct_pack of the return type.
//! Argument lists and replies as rpc_service.cpp declares them (Mooncake 3b5a594), confirmed by
//! the type literals the client sends and the master answers (`tests/data`).

use crate::enums::{ErrorCode, ReplicaType};
use crate::pack::{decode_with, encode_with, hash32, DecodeError, Pack, Schema};
use crate::types::{
    GetReplicaListResponse, GetStorageConfigResponse, ObjectMeta, PingResponse, ReplicaDescriptor, ReplicateConfig,
    Segment, TaskAssignment, Uuid,
};
use std::sync::OnceLock;

/// The function id of `WrappedMasterService::<name>`.
pub fn function_id(name: &str) -> u32 {
    hash32(format!("mooncake::WrappedMasterService::{name}").as_bytes())
}

/// One RPC: its name, argument list and reply.
pub trait Rpc {
    /// `WrappedMasterService::<NAME>`.
    const NAME: &'static str;
    /// The member of [`Function`].
    const FUNCTION: Function;
    /// No arguments: the request body is empty.
    const NO_ARGS: bool;
    /// The argument list (a tuple for several, `()` for none).
    type Request: Pack;
    /// The reply.
    type Reply: Pack;
    /// The argument list's schema.
    fn request_schema() -> &'static Schema;
    /// The reply's schema.
    fn reply_schema() -> &'static Schema;

    /// Decodes a request body.
    fn decode_request(body: &[u8]) -> Result<Self::Request, DecodeError> {
        if Self::NO_ARGS {
            if !body.is_empty() {
                return Err(DecodeError::NotEmpty(body.len()));
            }
            // `()` is the only argument list of no arguments: decoding it reads nothing.
            return Self::Request::decode(&mut crate::pack::Reader::new(body, 1));
        }
        decode_with(Self::request_schema(), body)
    }

    /// Encodes a request body.
    fn encode_request(req: &Self::Request) -> Vec<u8> {
        if Self::NO_ARGS {
            return Vec::new();
        }
        encode_with(Self::request_schema(), req)
    }

    /// Decodes a reply body.
    fn decode_reply(body: &[u8]) -> Result<Self::Reply, DecodeError> {
        decode_with(Self::reply_schema(), body)
    }

    /// Encodes a reply body.
    fn encode_reply(reply: &Self::Reply) -> Vec<u8> {
        encode_with(Self::reply_schema(), reply)
    }
}

/// `expected<T, ErrorCode>`.
pub type Expected<T> = Result<T, ErrorCode>;

macro_rules! rpcs {
    (@req) => { () };
    (@req $a:ty) => { $a };
    (@req $($a:ty),+) => { ($($a,)+) };
    (@none) => { true };
    (@none $($a:ty),+) => { false };
    ($($(#[$m:meta])* $name:ident ( $($arg:ident : $ty:ty),* ) -> $reply:ty;)*) => {
        /// Every RPC this crate knows.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Function {
            $($(#[$m])* $name,)*
        }

        impl Function {
            /// Every member.
            pub const ALL: &'static [Function] = &[$(Function::$name),*];

            /// Its name (`WrappedMasterService::<name>`).
            pub fn name(self) -> &'static str {
                match self {
                    $(Function::$name => stringify!($name),)*
                }
            }
        }

        $(
            $(#[$m])*
            #[doc = concat!("\n\nArguments: `(", $(stringify!($arg), ": ", stringify!($ty), ", ",)* ")`.")]
            #[derive(Clone, Copy, Debug)]
            pub struct $name;

            impl Rpc for $name {
                const NAME: &'static str = stringify!($name);
                const FUNCTION: Function = Function::$name;
                const NO_ARGS: bool = rpcs!(@none $($ty),*);
                type Request = rpcs!(@req $($ty),*);
                type Reply = $reply;
                fn request_schema() -> &'static Schema {
                    static S: OnceLock<Schema> = OnceLock::new();
                    Schema::cached::<Self::Request>(&S)
                }
                fn reply_schema() -> &'static Schema {
                    static S: OnceLock<Schema> = OnceLock::new();
                    Schema::cached::<Self::Reply>(&S)
                }
            }
        )*
    };
}

rpcs! {
    /// Must answer exactly "2.0.0" (the client's protocol check).
    ServiceReady() -> Expected<String>;
    /// The disk tier's configuration.
    GetStorageConfig() -> Expected<GetStorageConfigResponse>;
    /// Registers one segment of the client.
    MountSegment(segment: Segment, client_id: Uuid) -> Expected<()>;
    /// Re-announces the client's segments after a Ping answered NEED_REMOUNT.
    ReMountSegment(segments: Vec<Segment>, client_id: Uuid) -> Expected<()>;
    /// Unregisters one segment (the client's close).
    UnmountSegment(segment_id: Uuid, client_id: Uuid) -> Expected<()>;
    /// The heartbeat (every second, on its own connection).
    Ping(client_id: Uuid) -> Expected<PingResponse>;
    /// Tasks for the client to run (every second).
    FetchTasks(client_id: Uuid, batch_size: u64) -> Expected<Vec<TaskAssignment>>;
    /// Allocates the replicas of a new object.
    PutStart(client_id: Uuid, key: String, size: u64, config: ReplicateConfig, tenant: String)
        -> Expected<Vec<ReplicaDescriptor>>;
    /// The client wrote the replicas.
    PutEnd(client_id: Uuid, meta: ObjectMeta, replica_type: ReplicaType, tenant: String) -> Expected<()>;
    /// The client gives the put up.
    PutRevoke(client_id: Uuid, key: String, replica_type: ReplicaType, tenant: String) -> Expected<()>;
    /// PutStart for several keys.
    BatchPutStart(client_id: Uuid, keys: Vec<String>, sizes: Vec<u64>, config: ReplicateConfig, tenant: String)
        -> Vec<Expected<Vec<ReplicaDescriptor>>>;
    /// PutEnd for several keys.
    BatchPutEnd(client_id: Uuid, metas: Vec<ObjectMeta>, replica_type: ReplicaType, tenant: String)
        -> Vec<Expected<()>>;
    /// PutRevoke for several keys.
    BatchPutRevoke(client_id: Uuid, keys: Vec<String>, replica_type: ReplicaType, tenant: String)
        -> Vec<Expected<()>>;
    /// The readable replicas of a key, and a read lease.
    GetReplicaList(key: String, tenant: String) -> Expected<GetReplicaListResponse>;
    /// GetReplicaList for several keys.
    BatchGetReplicaList(keys: Vec<String>, tenant: String) -> Vec<Expected<GetReplicaListResponse>>;
    /// Does the key exist?
    ExistKey(key: String, tenant: String) -> Expected<bool>;
    /// ExistKey for several keys.
    BatchExistKey(keys: Vec<String>, tenant: String) -> Vec<Expected<bool>>;
    /// Removes a key (refused during its lease unless forced).
    Remove(key: String, force: bool, tenant: String) -> Expected<()>;
    /// Remove for several keys.
    BatchRemove(keys: Vec<String>, force: bool, tenant: String) -> Vec<Expected<()>>;
    /// Removes every key it may; returns how many.
    RemoveAll(force: bool, tenant: String) -> i64;
}

impl Function {
    /// The function id on the wire.
    pub fn id(self) -> u32 {
        Self::ids_table()
            .iter()
            .find(|(_, f)| *f == self)
            .map_or(0, |(id, _)| *id)
    }

    /// The function with this id, if this crate knows it.
    pub fn from_id(id: u32) -> Option<Function> {
        let table = Self::ids_table();
        table.binary_search_by_key(&id, |(i, _)| *i).ok().map(|at| table[at].1)
    }

    /// (id, function) of every member, sorted by id, computed once.
    fn ids_table() -> &'static [(u32, Function)] {
        static TABLE: OnceLock<Vec<(u32, Function)>> = OnceLock::new();
        TABLE.get_or_init(|| {
            let mut t: Vec<(u32, Function)> = Function::ALL.iter().map(|f| (function_id(f.name()), *f)).collect();
            t.sort();
            t
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_has_the_observed_function_id_and_ids_are_distinct() {
        assert_eq!(Function::Ping.id(), 0xd6c2dae5);
        assert_eq!(Function::from_id(0xd6c2dae5), Some(Function::Ping));
        assert_eq!(Function::from_id(0xdeadbeef), None);
        let mut ids: Vec<u32> = Function::ALL.iter().map(|f| f.id()).collect();
        ids.dedup();
        assert_eq!(ids.len(), Function::ALL.len());
        for f in Function::ALL {
            assert_eq!(Function::from_id(f.id()), Some(*f), "{f:?}");
        }
    }

    #[test]
    fn a_call_without_arguments_has_an_empty_body() {
        assert!(ServiceReady::encode_request(&()).is_empty());
        assert_eq!(ServiceReady::decode_request(&[]), Ok(()));
        assert_eq!(ServiceReady::decode_request(&[1]), Err(DecodeError::NotEmpty(1)));
    }
}
