//! coro_rpc framing (yalantinglibs `include/ylt/coro_rpc/impl/protocol/coro_rpc_protocol.hpp`
//! at 393e27e8), little-endian:
//!
//! ```text
//! request  (20 bytes): magic 0x15 | version 0 | serialize_type 0 | msg_type 0 | seq u32
//!                      | function_id u32 | length u32 | attach_length u32
//! response (16 bytes): magic 0x15 | version 0 | err_code u8 | msg_type 0 | seq u32
//!                      | length u32 | attach_length u32
//! ```
//!
//! then `length` bytes of body and `attach_length` bytes of attachment. A request whose magic
//! is not 0x15 or whose version is above 0 is a protocol error: coro_rpc closes the connection
//! (the capture's `raw_bad_magic` shows the real master doing so). A transport-level failure is
//! answered with `err_code` ≠ 0 and a body that is the struct_pack of the message string
//! ([`error_response`]): 11 "the rpc function not registered" for an unknown function id, 4
//! "invalid rpc arg" for arguments that do not decode (both byte for byte as captured).

use crate::pack::{encode_with, Schema};
use std::sync::OnceLock;

/// The first byte of every frame.
pub const MAGIC: u8 = 0x15;
/// The protocol version this crate speaks (and the highest a server accepts).
pub const VERSION: u8 = 0;
/// Bytes of a request header.
pub const REQUEST_HEADER_LEN: usize = 20;
/// Bytes of a response header.
pub const RESPONSE_HEADER_LEN: usize = 16;

/// coro_rpc's transport error codes (`coro_rpc::errc`), as a response header's `err_code`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Errc(pub u8);

impl Errc {
    /// The arguments did not decode as the function's parameters.
    pub const INVALID_RPC_ARGUMENTS: Self = Self(4);
    /// No function with this id.
    pub const FUNCTION_NOT_REGISTERED: Self = Self(11);

    /// The message the real master sends with this code (`make_error_message`, prefixed as
    /// observed for the unknown function).
    pub fn message(self) -> &'static str {
        match self.0 {
            4 => "invalid rpc arg",
            11 => "the rpc function not registered",
            _ => "rpc error",
        }
    }
}

/// Why a frame is refused (the connection is then closed: no reply can be matched to it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The first byte is not [`MAGIC`].
    #[error("bad magic byte {0:#04x} (coro_rpc frames start with 0x15)")]
    BadMagic(u8),
    /// A protocol version above [`VERSION`].
    #[error("unsupported coro_rpc version {0}")]
    BadVersion(u8),
    /// Body plus attachment larger than the configured limit.
    #[error("frame of {length} byte(s) exceeds the limit of {limit}")]
    TooLarge {
        /// Body plus attachment, bytes.
        length: u64,
        /// The limit.
        limit: u64,
    },
}

/// A request header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHeader {
    /// Protocol version.
    pub version: u8,
    /// Serialization type (0: struct_pack).
    pub serialize_type: u8,
    /// Message type.
    pub msg_type: u8,
    /// Sequence number; the response echoes it.
    pub seq: u32,
    /// The function called.
    pub function_id: u32,
    /// Body length.
    pub length: u32,
    /// Attachment length.
    pub attach_length: u32,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl RequestHeader {
    /// A request for `function_id` with `length` body bytes and no attachment.
    pub fn new(seq: u32, function_id: u32, length: u32) -> Self {
        Self {
            version: VERSION,
            serialize_type: 0,
            msg_type: 0,
            seq,
            function_id,
            length,
            attach_length: 0,
        }
    }

    /// Parses and checks a header (magic, version, the size limit on body plus attachment).
    pub fn parse(b: &[u8; REQUEST_HEADER_LEN], limit: u64) -> Result<Self, FrameError> {
        if b[0] != MAGIC {
            return Err(FrameError::BadMagic(b[0]));
        }
        if b[1] > VERSION {
            return Err(FrameError::BadVersion(b[1]));
        }
        let h = Self {
            version: b[1],
            serialize_type: b[2],
            msg_type: b[3],
            seq: u32_at(b, 4),
            function_id: u32_at(b, 8),
            length: u32_at(b, 12),
            attach_length: u32_at(b, 16),
        };
        h.check(limit)?;
        Ok(h)
    }

    fn check(&self, limit: u64) -> Result<(), FrameError> {
        let length = u64::from(self.length) + u64::from(self.attach_length);
        if length > limit {
            return Err(FrameError::TooLarge { length, limit });
        }
        Ok(())
    }

    /// The 20 header bytes.
    pub fn to_bytes(&self) -> [u8; REQUEST_HEADER_LEN] {
        let mut b = [0u8; REQUEST_HEADER_LEN];
        b[..4].copy_from_slice(&[MAGIC, self.version, self.serialize_type, self.msg_type]);
        b[4..8].copy_from_slice(&self.seq.to_le_bytes());
        b[8..12].copy_from_slice(&self.function_id.to_le_bytes());
        b[12..16].copy_from_slice(&self.length.to_le_bytes());
        b[16..20].copy_from_slice(&self.attach_length.to_le_bytes());
        b
    }
}

/// A response header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseHeader {
    /// Protocol version.
    pub version: u8,
    /// 0, or a transport error ([`Errc`]; the body is then its message).
    pub err_code: u8,
    /// Message type.
    pub msg_type: u8,
    /// The request's sequence number.
    pub seq: u32,
    /// Body length.
    pub length: u32,
    /// Attachment length.
    pub attach_length: u32,
}

impl ResponseHeader {
    /// Parses and checks a header (magic, the size limit).
    pub fn parse(b: &[u8; RESPONSE_HEADER_LEN], limit: u64) -> Result<Self, FrameError> {
        if b[0] != MAGIC {
            return Err(FrameError::BadMagic(b[0]));
        }
        let h = Self {
            version: b[1],
            err_code: b[2],
            msg_type: b[3],
            seq: u32_at(b, 4),
            length: u32_at(b, 8),
            attach_length: u32_at(b, 12),
        };
        let length = u64::from(h.length) + u64::from(h.attach_length);
        if length > limit {
            return Err(FrameError::TooLarge { length, limit });
        }
        Ok(h)
    }

    /// The 16 header bytes.
    pub fn to_bytes(&self) -> [u8; RESPONSE_HEADER_LEN] {
        let mut b = [0u8; RESPONSE_HEADER_LEN];
        b[..4].copy_from_slice(&[MAGIC, self.version, self.err_code, self.msg_type]);
        b[4..8].copy_from_slice(&self.seq.to_le_bytes());
        b[8..12].copy_from_slice(&self.length.to_le_bytes());
        b[12..16].copy_from_slice(&self.attach_length.to_le_bytes());
        b
    }
}

/// A whole response frame: header (err_code 0) and `body`.
pub fn response(seq: u32, body: &[u8]) -> Vec<u8> {
    frame_with(seq, 0, body)
}

fn frame_with(seq: u32, err_code: u8, body: &[u8]) -> Vec<u8> {
    let header = ResponseHeader {
        version: VERSION,
        err_code,
        msg_type: 0,
        seq,
        length: body.len() as u32,
        attach_length: 0,
    };
    let mut out = Vec::with_capacity(RESPONSE_HEADER_LEN + body.len());
    out.extend_from_slice(&header.to_bytes());
    out.extend_from_slice(body);
    out
}

/// A transport-error response: `err_code` = `errc`, body = the struct_pack of its message.
pub fn error_response(seq: u32, errc: Errc) -> Vec<u8> {
    static STRING: OnceLock<Schema> = OnceLock::new();
    let body = encode_with(Schema::cached::<String>(&STRING), &errc.message().to_string());
    frame_with(seq, errc.0, &body)
}

/// One frame split off the front of a buffer: its header and where body and attachment lie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split<H> {
    /// The header.
    pub header: H,
    /// Bytes of the whole frame.
    pub len: usize,
}

/// Splits the first request frame off `buf`: `Ok(None)` when `buf` holds less than a whole
/// frame. The body is `buf[20 .. 20 + length]`.
pub fn split_request(buf: &[u8], limit: u64) -> Result<Option<Split<RequestHeader>>, FrameError> {
    let Some(head) = buf.first_chunk::<REQUEST_HEADER_LEN>() else {
        return Ok(None);
    };
    let header = RequestHeader::parse(head, limit)?;
    let len = REQUEST_HEADER_LEN + header.length as usize + header.attach_length as usize;
    Ok((buf.len() >= len).then_some(Split { header, len }))
}

/// Splits the first response frame off `buf` (as [`split_request`]).
pub fn split_response(buf: &[u8], limit: u64) -> Result<Option<Split<ResponseHeader>>, FrameError> {
    let Some(head) = buf.first_chunk::<RESPONSE_HEADER_LEN>() else {
        return Ok(None);
    };
    let header = ResponseHeader::parse(head, limit)?;
    let len = RESPONSE_HEADER_LEN + header.length as usize + header.attach_length as usize;
    Ok((buf.len() >= len).then_some(Split { header, len }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The real master's answer to an unknown function id and to a Ping whose body does not
    /// decode (tests/data/exchanges.jsonl, `raw_unknown_function`, `raw_ping_garbage_body`).
    #[test]
    fn error_responses_match_the_captures() {
        let unknown = "15000b0007000000280000000000000077facf9d04800c001f746865207270632066756e6374696f6e206e6f742072656769737465726564";
        assert_eq!(error_response(7, Errc::FUNCTION_NOT_REGISTERED), hex(unknown));
        let invalid = "1500040008000000180000000000000077facf9d04800c000f696e76616c69642072706320617267";
        assert_eq!(error_response(8, Errc::INVALID_RPC_ARGUMENTS), hex(invalid));
    }

    #[test]
    fn headers_round_trip_and_bad_ones_are_refused() {
        let h = RequestHeader::new(9, 0xd6c2dae5, 28);
        let b = h.to_bytes();
        assert_eq!(&b[8..12], &[0xe5, 0xda, 0xc2, 0xd6]);
        assert_eq!(RequestHeader::parse(&b, 1 << 20), Ok(h));
        let mut bad = b;
        bad[0] = 0x16;
        assert_eq!(RequestHeader::parse(&bad, 1 << 20), Err(FrameError::BadMagic(0x16)));
        bad = b;
        bad[1] = 1;
        assert_eq!(RequestHeader::parse(&bad, 1 << 20), Err(FrameError::BadVersion(1)));
        assert!(matches!(
            RequestHeader::parse(&b, 27),
            Err(FrameError::TooLarge { length: 28, .. })
        ));
    }

    #[test]
    fn split_waits_for_a_whole_frame() {
        let mut buf = RequestHeader::new(1, 2, 3).to_bytes().to_vec();
        assert_eq!(split_request(&buf[..10], 100), Ok(None));
        assert_eq!(split_request(&buf, 100), Ok(None));
        buf.extend_from_slice(&[1, 2, 3, 4]);
        assert_eq!(split_request(&buf, 100).unwrap().unwrap().len, 23);
    }
}
