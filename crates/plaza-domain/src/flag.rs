//! Booleans that read the same from both engines.
//!
//! sqlx's `Any` driver cannot read SQLite columns declared `BOOLEAN`, so on
//! SQLite flags are `INTEGER` 0/1 while PostgreSQL keeps `BOOLEAN`. [`Flag`]
//! decodes either (and computed expressions such as `x IS NOT NULL`, which
//! SQLite returns as integers).

use sqlx::any::{Any, AnyTypeInfo, AnyTypeInfoKind, AnyValueRef};
use sqlx::error::BoxDynError;
use sqlx::{Decode, Type, ValueRef};

/// A boolean read from the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flag(pub bool);

impl From<Flag> for bool {
    fn from(flag: Flag) -> bool {
        flag.0
    }
}

impl Type<Any> for Flag {
    fn type_info() -> AnyTypeInfo {
        <bool as Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        matches!(
            ty.kind(),
            AnyTypeInfoKind::Bool
                | AnyTypeInfoKind::SmallInt
                | AnyTypeInfoKind::Integer
                | AnyTypeInfoKind::BigInt
        )
    }
}

impl<'r> Decode<'r, Any> for Flag {
    fn decode(value: AnyValueRef<'r>) -> Result<Self, BoxDynError> {
        if value.type_info().kind() == AnyTypeInfoKind::Bool {
            Ok(Flag(<bool as Decode<Any>>::decode(value)?))
        } else {
            Ok(Flag(<i64 as Decode<Any>>::decode(value)? != 0))
        }
    }
}
