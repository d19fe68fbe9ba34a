//! The subset of yalantinglibs' struct_pack that the Mooncake master's messages use.
//!
//! # Layout of one message
//!
//! ```text
//! u32 LE   type hash: MD5(type literal)[0..4] read big-endian, low bit cleared; low bit set =
//!          "a meta byte follows" (always, here)
//! u8       meta: bits 0-1 DATA_SIZE (a total-size field for compatible<T> members follows:
//!          1 → 2 bytes, 2 → 4, 3 → 8), bit 2 ADD_TYPE_INFO (the type literal follows,
//!          NUL-terminated), bits 3-4 LEN_SIZE (every container length in the payload is
//!          1, 2, 4 or 8 bytes: the narrowest that holds the longest container)
//! [total]  DATA_SIZE bytes, if DATA_SIZE ≠ 0
//! literal  the type literal + NUL, if ADD_TYPE_INFO
//! payload  the value, field by field, little-endian, no padding (except trivial structs)
//! ```
//!
//! Rules checked against yalantinglibs (`website/docs/en/struct_pack/struct_pack_layout.md`,
//! `include/ylt/struct_pack/{type_id,type_calculate,packer,unpacker,calculate_size}.hpp` at
//! 393e27e8) and reproduced by every capture in `tests/data`:
//!
//! | type | literal | payload |
//! |---|---|---|
//! | i32 u32 i64 u64 u8 bool char | `01 02 03 04 06 0b 0c` | fixed width, LE; bool is one byte, nonzero = true |
//! | enum | its underlying integer's code | the integer |
//! | `std::string` | `80 0c` | length, bytes |
//! | `std::vector<T>` | `84` T | length, elements |
//! | `std::optional<T>` | `85` T | bool, then T if present |
//! | `std::variant<A…>` | `86` A… `ff` | u8 index, the alternative |
//! | `tl::expected<T, E>` | `87` T E | bool (has value), then T or E |
//! | `void` / monostate | `fa` | nothing |
//! | struct (reflected) | `fd` fields `ff` | fields in order |
//! | trivial struct (`std::pair` of trivials) | `fd` fields pack-align align `ff` | the C layout |
//! | arguments (a tuple) | `fd` args `ff`, or the one argument itself | in order |
//!
//! A size in a literal (alignment) is `size + 129` for sizes below 127.
//!
//! Decoding checks the hash (its high 31 bits), then the literal byte for byte when it is sent
//! (struct_pack's receiver does the same), skips to the DATA_SIZE total when there is one (the
//! compatible members a newer peer appends), and otherwise refuses trailing bytes. Every length
//! is checked against the bytes left before anything is allocated: no input panics or makes the
//! decoder allocate more than a small multiple of its length.

mod io;
mod macros;
mod std_impls;

pub use io::{Reader, Writer};

use std::sync::OnceLock;

/// Meta bit: the type literal follows.
const META_TYPE_INFO: u8 = 0b100;
/// Meta bits 0-1: the width code of the total-size field.
const META_DATA_SIZE: u8 = 0b11;
/// Meta bits 3-4: the width code of container lengths.
const META_LEN_SHIFT: u8 = 3;

/// Type codes of struct_pack's type literal (`struct_pack::detail::type_id`).
pub mod code {
    /// `int32_t`.
    pub const I32: u8 = 1;
    /// `uint32_t`.
    pub const U32: u8 = 2;
    /// `int64_t`.
    pub const I64: u8 = 3;
    /// `uint64_t`.
    pub const U64: u8 = 4;
    /// `uint8_t`.
    pub const U8: u8 = 6;
    /// `bool`.
    pub const BOOL: u8 = 11;
    /// `char`.
    pub const CHAR: u8 = 12;
    /// A string (followed by its character type).
    pub const STRING: u8 = 0x80;
    /// A sequence container (followed by its element type).
    pub const CONTAINER: u8 = 0x84;
    /// `optional<T>`.
    pub const OPTIONAL: u8 = 0x85;
    /// `variant<...>` (alternatives, then [`END`]).
    pub const VARIANT: u8 = 0x86;
    /// `expected<T, E>`.
    pub const EXPECTED: u8 = 0x87;
    /// `void` / `std::monostate`.
    pub const MONOSTATE: u8 = 0xfa;
    /// A struct (fields, then [`END`]).
    pub const STRUCT: u8 = 0xfd;
    /// End of a struct or variant.
    pub const END: u8 = 0xff;

    /// A size inside a literal (an alignment): `size + 129`, for sizes below 127 (the only ones
    /// the master's types need).
    pub const fn size(n: u8) -> u8 {
        assert!(n < 127);
        n + 129
    }
}

/// A type with a struct_pack form.
pub trait Pack: Sized {
    /// Appends this type's literal.
    fn literal(out: &mut Vec<u8>);
    /// Fewest bytes one value's payload takes (bounds container lengths before allocating).
    const MIN_SIZE: usize;
    /// The longest container (string or vector) inside this value: decides the length width.
    fn max_len(&self) -> u64 {
        0
    }
    /// Appends the payload.
    fn encode(&self, w: &mut Writer<'_>);
    /// Reads one payload.
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError>;
}

/// Why a body did not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The body ended inside a value.
    #[error("body ends early: {needed} more byte(s) needed at offset {at}")]
    Truncated {
        /// Offset of the read.
        at: usize,
        /// Bytes it needed.
        needed: usize,
    },
    /// The type hash names another type.
    #[error("type hash {got:#010x} is not the expected {expected:#010x}")]
    HashMismatch {
        /// The expected hash (low bit clear).
        expected: u32,
        /// The hash sent.
        got: u32,
    },
    /// The type literal sent differs from ours (a hash collision or another client version).
    #[error("type literal differs from the expected one")]
    LiteralMismatch,
    /// A container length larger than the bytes left could hold.
    #[error("length {len} at offset {at} exceeds the {left} byte(s) left")]
    Length {
        /// Offset of the length field.
        at: usize,
        /// The length read.
        len: u64,
        /// Bytes left.
        left: usize,
    },
    /// A variant index outside the variant.
    #[error("variant index {0} out of range")]
    VariantIndex(u8),
    /// A string that is not UTF-8.
    #[error("string at offset {0} is not UTF-8")]
    Utf8(usize),
    /// Bytes after the value (and no DATA_SIZE field saying they are compatible members).
    #[error("{0} trailing byte(s) after the value")]
    Trailing(usize),
    /// A DATA_SIZE total that does not cover the value or exceeds the body.
    #[error("total size {total} does not fit a body of {len} byte(s) (value ends at {end})")]
    TotalSize {
        /// The total given.
        total: u64,
        /// The body's length.
        len: usize,
        /// Where the known members ended.
        end: usize,
    },
    /// A body where none is expected, or none where one is.
    #[error("expected an empty body, got {0} byte(s)")]
    NotEmpty(usize),
}

/// One type's literal and hash, computed once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    /// The type literal (without its NUL).
    pub literal: Vec<u8>,
    /// MD5-derived hash, low bit clear.
    pub hash: u32,
}

impl Schema {
    /// The schema of `T`.
    pub fn of<T: Pack>() -> Self {
        let mut literal = Vec::new();
        T::literal(&mut literal);
        Self {
            hash: hash32(&literal) & !1,
            literal,
        }
    }

    /// The schema of `T`, computed on the first call for this `cell`.
    pub fn cached<T: Pack>(cell: &'static OnceLock<Schema>) -> &'static Schema {
        cell.get_or_init(Self::of::<T>)
    }
}

/// The first four bytes of the MD5 digest of `data`, read big-endian (struct_pack's
/// `MD5Hash32Constexpr`, which coro_rpc also uses for function ids).
pub fn hash32(data: &[u8]) -> u32 {
    let d = md5::compute(data);
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// The length-width code (meta bits 3-4) for a longest container of `max`.
fn width_code(max: u64) -> u8 {
    match max {
        0..=0xff => 0,
        0x100..=0xffff => 1,
        0x1_0000..=0xffff_ffff => 2,
        _ => 3,
    }
}

/// Encodes `value` as the real master does: hash with the meta bit, meta `0x04` (type info)
/// plus the length width, the literal and its NUL, the payload.
pub fn encode_with<T: Pack>(schema: &Schema, value: &T) -> Vec<u8> {
    let code = width_code(value.max_len());
    let mut out = Vec::with_capacity(5 + schema.literal.len() + 1 + 32);
    out.extend_from_slice(&(schema.hash | 1).to_le_bytes());
    out.push(META_TYPE_INFO | (code << META_LEN_SHIFT));
    out.extend_from_slice(&schema.literal);
    out.push(0);
    value.encode(&mut Writer::new(&mut out, 1 << code));
    out
}

/// Encodes `value` (computing `T`'s schema: cache it with [`Schema::cached`] on hot paths).
pub fn to_bytes<T: Pack>(value: &T) -> Vec<u8> {
    encode_with(&Schema::of::<T>(), value)
}

/// Decodes a whole body as `T` under `schema` (see the module doc for what is checked).
pub fn decode_with<T: Pack>(schema: &Schema, body: &[u8]) -> Result<T, DecodeError> {
    let mut r = Reader::new(body, 1);
    let hash = r.u32()?;
    if hash >> 1 != schema.hash >> 1 {
        return Err(DecodeError::HashMismatch {
            expected: schema.hash,
            got: hash,
        });
    }
    let mut total = None;
    if hash & 1 == 1 {
        let meta = r.u8()?;
        total = match meta & META_DATA_SIZE {
            0 => None,
            1 => Some(r.uint(2)?),
            2 => Some(r.uint(4)?),
            _ => Some(r.uint(8)?),
        };
        if meta & META_TYPE_INFO != 0 {
            let sent = r.bytes(schema.literal.len() + 1)?;
            if sent[..schema.literal.len()] != schema.literal[..] || sent[schema.literal.len()] != 0 {
                return Err(DecodeError::LiteralMismatch);
            }
        }
        r.set_width(1 << ((meta >> META_LEN_SHIFT) & 0b11));
    }
    let value = T::decode(&mut r)?;
    match total {
        Some(total) => {
            let end = r.position();
            if total > body.len() as u64 || total < end as u64 {
                return Err(DecodeError::TotalSize {
                    total,
                    len: body.len(),
                    end,
                });
            }
            // The compatible members of a newer peer: not ours to read.
            r.skip(total as usize - end)?;
            if r.remaining() != 0 {
                return Err(DecodeError::Trailing(r.remaining()));
            }
        }
        None if r.remaining() != 0 => return Err(DecodeError::Trailing(r.remaining())),
        None => {}
    }
    Ok(value)
}

/// Decodes a whole body as `T` (computing `T`'s schema).
pub fn from_bytes<T: Pack>(body: &[u8]) -> Result<T, DecodeError> {
    decode_with(&Schema::of::<T>(), body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash of `pair<u64,u64>`'s literal as a Ping request carries it (`e1 83 6d 3c`, low
    /// bit set), and `expected<{i64,i32},i32>`'s (`53 8f 2a 74`).
    #[test]
    fn hashes_of_observed_literals() {
        assert_eq!(hash32(&[0xfd, 4, 4, 0x89, 0x89, 0xff]) | 1, 0x3c6d83e1);
        assert_eq!(hash32(&[0x87, 0xfd, 3, 1, 0xff, 1]) | 1, 0x742a8f53);
    }

    #[test]
    fn width_codes_switch_at_256_and_65536() {
        let table = [(0, 0), (255, 0), (256, 1), (65_535, 1), (65_536, 2), (1 << 32, 3)];
        for (max, code) in table {
            assert_eq!(width_code(max), code, "max {max}");
        }
    }

    #[test]
    fn a_long_string_widens_every_length_and_round_trips() {
        let v = (String::from("k"), vec!["x".repeat(300)]);
        let bytes = to_bytes(&v);
        let meta = bytes[4];
        assert_eq!(meta, 0x0c, "type info + 2-byte lengths");
        assert_eq!(from_bytes::<(String, Vec<String>)>(&bytes).unwrap(), v);
    }

    #[test]
    fn decode_refuses_another_type_a_changed_literal_and_trailing_bytes() {
        let bytes = to_bytes(&7u64);
        assert!(matches!(
            from_bytes::<i64>(&bytes),
            Err(DecodeError::HashMismatch { .. })
        ));
        let mut lit = bytes.clone();
        lit[5] ^= 0x40; // same hash, altered literal
        assert_eq!(from_bytes::<u64>(&lit), Err(DecodeError::LiteralMismatch));
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert_eq!(from_bytes::<u64>(&trailing), Err(DecodeError::Trailing(1)));
    }

    /// A body with DATA_SIZE (meta bits 0-1) skips the bytes past the known members up to the
    /// total, as struct_pack does for a newer peer's compatible members.
    #[test]
    fn a_total_size_skips_unknown_compatible_members() {
        let mut body = to_bytes(&5u32);
        body[4] |= 0b01; // a 2-byte total follows the meta byte
        let total = (body.len() + 2 + 3) as u16;
        body.splice(5..5, total.to_le_bytes());
        body.extend_from_slice(&[1, 2, 3]);
        assert_eq!(from_bytes::<u32>(&body), Ok(5));
        body.pop();
        assert!(matches!(from_bytes::<u32>(&body), Err(DecodeError::TotalSize { .. })));
    }
}
