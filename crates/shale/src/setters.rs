//! The `setters!` macro of the options structs, apart from them so that any
//! module may use it without importing the options.

/// Chained setters for the public fields of an options struct, so that a
/// caller writes `Options::default().create_if_missing(false)` and a field
/// added later is not a breaking change (the structs are
/// `#[non_exhaustive]`: no struct literal outside the crate). Every field
/// must be listed: the pattern at the end names them all, so a field without
/// a setter does not compile.
macro_rules! setters {
    ($ty:ident $(<$lt:lifetime>)? { $($field:ident: $fty:ty),* $(,)? }) => {
        impl$(<$lt>)? $ty$(<$lt>)? {
            $(
                #[doc = concat!("Sets [`", stringify!($ty), "::", stringify!($field), "`].")]
                #[must_use]
                pub fn $field(mut self, value: $fty) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
        const _: () = {
            #[allow(dead_code)]
            fn every_field_has_a_setter$(<$lt>)?(o: &$ty$(<$lt>)?) {
                let $ty { $($field: _),* } = o;
            }
        };
    };
}
pub(crate) use setters;
