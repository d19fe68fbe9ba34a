//! Fuzz bodies (feature `fuzzing`): `fuzz/fuzz_targets/wire_decode.rs` calls [`wire_decode`];
//! the root package's fuzz smoke replays `fuzz/seeds/wire_decode` through it.

use crate::frame::{split_request, split_response};
use crate::rpc::{self, Function, Rpc};

/// Bodies larger than this are not looked at (keeps one input fast).
const LIMIT: u64 = 1 << 16;

/// Splits `data` as a stream of request frames (then, from the same bytes, response frames),
/// and decodes every body as every argument list and every reply of [`rpc`]. Nothing may
/// panic; whatever decodes must survive encode → decode unchanged.
pub fn wire_decode(data: &[u8]) {
    let mut rest = data;
    while let Ok(Some(split)) = split_request(rest, LIMIT) {
        let body = &rest[crate::frame::REQUEST_HEADER_LEN..][..split.header.length as usize];
        if let Some(f) = Function::from_id(split.header.function_id) {
            decode_as(f, body);
        }
        rest = &rest[split.len..];
    }
    let mut rest = data;
    while let Ok(Some(split)) = split_response(rest, LIMIT) {
        rest = &rest[split.len..];
    }
    // Every body decoder on the raw bytes, whatever the function id says.
    for f in Function::ALL {
        decode_as(*f, data);
    }
}

/// Decodes `body` as `f`'s argument list and as its reply (each checked by a round trip).
pub fn decode_as(f: Function, body: &[u8]) {
    macro_rules! each {
        ($($name:ident),*) => {
            match f {
                $(Function::$name => {
                    round_trip::<rpc::$name>(body);
                })*
            }
        };
    }
    each!(
        ServiceReady,
        GetStorageConfig,
        MountSegment,
        ReMountSegment,
        UnmountSegment,
        Ping,
        FetchTasks,
        PutStart,
        PutEnd,
        PutRevoke,
        BatchPutStart,
        BatchPutEnd,
        BatchPutRevoke,
        GetReplicaList,
        BatchGetReplicaList,
        ExistKey,
        BatchExistKey,
        Remove,
        BatchRemove,
        RemoveAll
    );
}

fn round_trip<R: Rpc>(body: &[u8])
where
    R::Request: PartialEq + std::fmt::Debug,
    R::Reply: PartialEq + std::fmt::Debug,
{
    if let Ok(req) = R::decode_request(body) {
        let again = R::decode_request(&R::encode_request(&req));
        assert_eq!(again.as_ref(), Ok(&req), "{} request", R::NAME);
    }
    if let Ok(reply) = R::decode_reply(body) {
        let again = R::decode_reply(&R::encode_reply(&reply));
        assert_eq!(again.as_ref(), Ok(&reply), "{} reply", R::NAME);
    }
}
