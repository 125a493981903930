//! Options whose values have names: each option's enum says its names once,
//! and every front end (the command line, Python, the docs' checks) reads
//! them from here, for parsing, for `--help` and for errors.

use std::fmt;

/// An option whose values are spelled by name (`"fast"`, `"random"`, ...).
///
/// `NAMES` lists every spelling a user is shown, in the order the docs
/// give them; [`Choice::from_name`] may accept a few more (old or British
/// spellings), never fewer.
pub trait Choice: Sized + Copy + 'static {
    /// The option's name, as the APIs spell it (`"dct"`, `"crop"`).
    const OPTION: &'static str;
    /// The values' names, as users are shown them.
    const NAMES: &'static [&'static str];

    /// The value a name spells, if any.
    fn from_name(name: &str) -> Option<Self>;

    /// The value's name (one of [`NAMES`](Self::NAMES)).
    fn name(&self) -> &'static str;

    /// The value `name` spells, or an error that lists the names.
    fn parse_choice(name: &str) -> Result<Self, UnknownChoice> {
        Self::from_name(name).ok_or_else(|| UnknownChoice {
            option: Self::OPTION,
            given: name.to_owned(),
            names: Self::NAMES,
        })
    }
}

/// A name that is none of an option's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownChoice {
    /// The option.
    pub option: &'static str,
    /// What was given.
    pub given: String,
    /// The option's names.
    pub names: &'static [&'static str],
}

impl fmt::Display for UnknownChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} must be one of {}, not {:?}",
            self.option,
            quoted(self.names),
            self.given
        )
    }
}

impl std::error::Error for UnknownChoice {}

/// `'a', 'b', 'c'`: names as an error or a docstring lists them.
pub fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Implements [`Choice`] and `FromStr` for a field-less enum from one table
/// of `Variant => "name"` (the first name of a variant is the one shown;
/// more after `|` are accepted too).
#[macro_export]
macro_rules! choice {
    ($ty:ty, $option:literal, { $($variant:path => $name:literal $(| $alias:literal)*),+ $(,)? }) => {
        impl $crate::Choice for $ty {
            const OPTION: &'static str = $option;
            const NAMES: &'static [&'static str] = &[$($name),+];

            fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($name $(| $alias)* => Some($variant),)+
                    _ => None,
                }
            }

            fn name(&self) -> &'static str {
                match self {
                    $($variant => $name,)+
                }
            }
        }

        $crate::choice_from_str!($ty);
    };
}

/// Implements `FromStr` by [`Choice::parse_choice`], for an enum that
/// implements [`Choice`] by hand (values with parameters, such as
/// `frame:K`).
#[macro_export]
macro_rules! choice_from_str {
    ($ty:ty) => {
        impl ::std::str::FromStr for $ty {
            type Err = $crate::UnknownChoice;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                <$ty as $crate::Choice>::parse_choice(text)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Speed {
        Fast,
        Careful,
    }

    crate::choice!(Speed, "speed", { Speed::Fast => "fast", Speed::Careful => "careful" | "slow" });

    /// Every listed name parses to a value that names itself so; an
    /// alias parses but is not listed; an unknown name's error lists them
    /// all.
    #[test]
    fn every_listed_name_parses_and_errors_list_them_all() {
        for name in Speed::NAMES {
            let value = Speed::from_name(name).expect("a listed name parses");
            assert_eq!(value.name(), *name);
        }
        assert_eq!("slow".parse::<Speed>(), Ok(Speed::Careful));
        let err = "no-such-value".parse::<Speed>().expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "speed must be one of 'fast', 'careful', not \"no-such-value\""
        );
    }
}
