//! The two "derives" of this crate, as declarative macros: [`pack_struct!`](crate::pack_struct)
//! (a reflected struct: `fd` fields `ff`, fields in order) and [`pack_int!`](crate::pack_int)
//! (an enum as the integer newtype it is on the wire: an unknown value decodes and re-encodes
//! unchanged, as C++ would carry it).

/// Declares a struct and its [`Pack`](crate::pack::Pack) impl: literal `fd` + each field's
/// literal + `ff`, payload = the fields in order. Derives `Clone`, `Debug`, `PartialEq`, `Eq`.
#[macro_export]
macro_rules! pack_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        $vis struct $name {
            $($(#[$fmeta])* $fvis $field: $ty),*
        }

        impl $crate::pack::Pack for $name {
            const MIN_SIZE: usize = 0 $(+ <$ty as $crate::pack::Pack>::MIN_SIZE)*;
            fn literal(out: &mut Vec<u8>) {
                out.push($crate::pack::code::STRUCT);
                $(<$ty as $crate::pack::Pack>::literal(out);)*
                out.push($crate::pack::code::END);
            }
            fn max_len(&self) -> u64 {
                0 $(.max($crate::pack::Pack::max_len(&self.$field)))*
            }
            fn encode(&self, w: &mut $crate::pack::Writer<'_>) {
                $($crate::pack::Pack::encode(&self.$field, w);)*
            }
            fn decode(r: &mut $crate::pack::Reader<'_>) -> Result<Self, $crate::pack::DecodeError> {
                Ok(Self {
                    $($field: <$ty as $crate::pack::Pack>::decode(r)?),*
                })
            }
        }
    };
}

/// Declares an enum as an integer newtype with named constants, and its
/// [`Pack`](crate::pack::Pack) impl (the integer's). `Display` prints the constant's name, or
/// the number for a value this crate does not name.
#[macro_export]
macro_rules! pack_int {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident($repr:ty) {
            $($(#[$cmeta:meta])* $konst:ident = $val:expr),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis struct $name(pub $repr);

        impl $name {
            $($(#[$cmeta])* pub const $konst: Self = Self($val);)*

            /// The upstream name of this value, if it has one.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $(v if v == $val => Some(stringify!($konst)),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }

        impl $crate::pack::Pack for $name {
            const MIN_SIZE: usize = <$repr as $crate::pack::Pack>::MIN_SIZE;
            fn literal(out: &mut Vec<u8>) {
                <$repr as $crate::pack::Pack>::literal(out);
            }
            fn encode(&self, w: &mut $crate::pack::Writer<'_>) {
                $crate::pack::Pack::encode(&self.0, w);
            }
            fn decode(r: &mut $crate::pack::Reader<'_>) -> Result<Self, $crate::pack::DecodeError> {
                Ok(Self(<$repr as $crate::pack::Pack>::decode(r)?))
            }
        }
    };
}
