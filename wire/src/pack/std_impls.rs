//! [`Pack`] for the standard types the master's messages are built from: fixed-width
//! integers, bool, `String`, `Vec<T>`, `Option<T>`, `Result<T, E>` (struct_pack's
//! `expected<T, E>`), `()` (void) and tuples (an argument list).

use super::{code, DecodeError, Pack, Reader, Writer};

macro_rules! int {
    ($($t:ty => $code:expr),* $(,)?) => {$(
        impl Pack for $t {
            const MIN_SIZE: usize = std::mem::size_of::<$t>();
            fn literal(out: &mut Vec<u8>) {
                out.push($code);
            }
            fn encode(&self, w: &mut Writer<'_>) {
                w.put(&self.to_le_bytes());
            }
            fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
                Ok(<$t>::from_le_bytes(r.array()?))
            }
        }
    )*};
}

int!(i32 => code::I32, u32 => code::U32, i64 => code::I64, u64 => code::U64, u8 => code::U8);

impl Pack for bool {
    const MIN_SIZE: usize = 1;
    fn literal(out: &mut Vec<u8>) {
        out.push(code::BOOL);
    }
    fn encode(&self, w: &mut Writer<'_>) {
        w.put(&[u8::from(*self)]);
    }
    /// struct_pack: false when every bit is 0, true otherwise.
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(r.u8()? != 0)
    }
}

impl Pack for String {
    const MIN_SIZE: usize = 1;
    fn literal(out: &mut Vec<u8>) {
        out.extend_from_slice(&[code::STRING, code::CHAR]);
    }
    fn max_len(&self) -> u64 {
        self.len() as u64
    }
    fn encode(&self, w: &mut Writer<'_>) {
        w.put_len(self.len());
        w.put(self.as_bytes());
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.len(1)?;
        let at = r.position();
        let bytes = r.bytes(n)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError::Utf8(at))
    }
}

impl<T: Pack> Pack for Vec<T> {
    const MIN_SIZE: usize = 1;
    fn literal(out: &mut Vec<u8>) {
        out.push(code::CONTAINER);
        T::literal(out);
    }
    fn max_len(&self) -> u64 {
        self.iter().map(Pack::max_len).fold(self.len() as u64, u64::max)
    }
    fn encode(&self, w: &mut Writer<'_>) {
        w.put_len(self.len());
        for v in self {
            v.encode(w);
        }
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.len(T::MIN_SIZE)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(T::decode(r)?);
        }
        Ok(out)
    }
}

impl<T: Pack> Pack for Option<T> {
    const MIN_SIZE: usize = 1;
    fn literal(out: &mut Vec<u8>) {
        out.push(code::OPTIONAL);
        T::literal(out);
    }
    fn max_len(&self) -> u64 {
        self.as_ref().map_or(0, Pack::max_len)
    }
    fn encode(&self, w: &mut Writer<'_>) {
        w.put(&[u8::from(self.is_some())]);
        if let Some(v) = self {
            v.encode(w);
        }
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        if bool::decode(r)? {
            Ok(Some(T::decode(r)?))
        } else {
            Ok(None)
        }
    }
}

/// `tl::expected<T, E>`: a bool (has value), then the value or the error.
impl<T: Pack, E: Pack> Pack for Result<T, E> {
    const MIN_SIZE: usize = 1;
    fn literal(out: &mut Vec<u8>) {
        out.push(code::EXPECTED);
        T::literal(out);
        E::literal(out);
    }
    fn max_len(&self) -> u64 {
        match self {
            Ok(v) => v.max_len(),
            Err(e) => e.max_len(),
        }
    }
    fn encode(&self, w: &mut Writer<'_>) {
        w.put(&[u8::from(self.is_ok())]);
        match self {
            Ok(v) => v.encode(w),
            Err(e) => e.encode(w),
        }
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        if bool::decode(r)? {
            Ok(Ok(T::decode(r)?))
        } else {
            Ok(Err(E::decode(r)?))
        }
    }
}

/// `void` (in `expected<void, E>`) and `std::monostate`: no bytes.
impl Pack for () {
    const MIN_SIZE: usize = 0;
    fn literal(out: &mut Vec<u8>) {
        out.push(code::MONOSTATE);
    }
    fn encode(&self, _: &mut Writer<'_>) {}
    fn decode(_: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(())
    }
}

/// An argument list of two or more: a non-trivial struct of the arguments.
macro_rules! tuple {
    ($($name:ident)+) => {
        impl<$($name: Pack),+> Pack for ($($name,)+) {
            const MIN_SIZE: usize = 0 $(+ $name::MIN_SIZE)+;
            fn literal(out: &mut Vec<u8>) {
                out.push(code::STRUCT);
                $($name::literal(out);)+
                out.push(code::END);
            }
            #[allow(non_snake_case)]
            fn max_len(&self) -> u64 {
                let ($($name,)+) = self;
                0 $(.max($name.max_len()))+
            }
            #[allow(non_snake_case)]
            fn encode(&self, w: &mut Writer<'_>) {
                let ($($name,)+) = self;
                $($name.encode(w);)+
            }
            fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
                Ok(($($name::decode(r)?,)+))
            }
        }
    };
}

tuple!(A B);
tuple!(A B C);
tuple!(A B C D);
tuple!(A B C D E);

#[cfg(test)]
mod tests {
    use super::super::{from_bytes, to_bytes, Schema};

    fn literal<T: super::Pack>() -> Vec<u8> {
        Schema::of::<T>().literal
    }

    #[test]
    fn literals_of_the_standard_types() {
        assert_eq!(literal::<String>(), [0x80, 0x0c]);
        assert_eq!(literal::<Vec<u64>>(), [0x84, 0x04]);
        assert_eq!(literal::<Option<Vec<String>>>(), [0x85, 0x84, 0x80, 0x0c]);
        assert_eq!(literal::<Result<(), i32>>(), [0x87, 0xfa, 0x01]);
        assert_eq!(
            literal::<(String, bool, String)>(),
            [0xfd, 0x80, 0x0c, 0x0b, 0x80, 0x0c, 0xff]
        );
    }

    /// `expected<void, ErrorCode>` holding −706, as the real master answers Remove during a
    /// lease (tests/data: `cd 68 28 af 04 87 fa 01 00 00 3e fd ff ff`).
    #[test]
    fn expected_void_error_matches_the_capture() {
        let bytes = to_bytes(&Err::<(), i32>(-706));
        assert_eq!(
            bytes,
            [0xcd, 0x68, 0x28, 0xaf, 0x04, 0x87, 0xfa, 0x01, 0x00, 0x00, 0x3e, 0xfd, 0xff, 0xff]
        );
        assert_eq!(from_bytes::<Result<(), i32>>(&bytes), Ok(Err(-706)));
    }

    #[test]
    fn a_huge_vector_length_is_refused_before_allocating() {
        let mut bytes = to_bytes(&vec![1u64]);
        let at = bytes.len() - 9; // the one-byte length before the element
        bytes[at] = 0xff;
        assert!(matches!(
            from_bytes::<Vec<u64>>(&bytes),
            Err(super::DecodeError::Length { len: 255, .. })
        ));
    }
}
