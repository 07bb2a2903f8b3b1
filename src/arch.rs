//! GPU architectures and audit targets: parsing (`sm_120`, `sm120`, `12.0`, `120`, `sm_120a`)
//! and display. Loadability of device code at a target lives in `kernel::load`.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// The variant suffix of an architecture: plain, `a` (arch-specific) or `f` (family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Variant {
    #[default]
    Plain,
    A,
    F,
}

impl Variant {
    pub fn suffix(self) -> &'static str {
        match self {
            Variant::Plain => "",
            Variant::A => "a",
            Variant::F => "f",
        }
    }
}

/// A compute capability (major, minor) with an optional variant suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    pub major: u32,
    pub minor: u32,
    pub variant: Variant,
}

impl Arch {
    pub const fn new(major: u32, minor: u32) -> Self {
        Arch {
            major,
            minor,
            variant: Variant::Plain,
        }
    }

    /// Builds an arch from the `sm` number used in fatbins and cubins (`120` is 12.0).
    pub fn from_sm(sm: u32, variant: Variant) -> Self {
        Arch {
            major: sm / 10,
            minor: sm % 10,
            variant,
        }
    }

    /// `major * 10 + minor`, the number Python code compares (`get_device_sm() >= 90`).
    pub fn sm(self) -> u32 {
        self.major * 10 + self.minor
    }

    /// The same arch without its variant: what a device *is*.
    pub fn plain(self) -> Self {
        Arch {
            variant: Variant::Plain,
            ..self
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.sm(), self.variant.suffix())
    }
}

impl Serialize for Arch {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Why a target string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid target `{0}`: expected an architecture such as sm_120, sm120, sm_120a, 12.0 or 120"
)]
pub struct ParseArchError(pub String);

impl FromStr for Arch {
    type Err = ParseArchError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = || ParseArchError(text.to_string());
        let lower = text.trim().to_ascii_lowercase();
        if let Some((major, minor)) = lower.split_once('.') {
            let (minor, variant) = split_variant(minor);
            let major: u32 = major.parse().map_err(|_| err())?;
            let minor: u32 = minor.parse().map_err(|_| err())?;
            if minor > 9 || !(1..=99).contains(&major) {
                return Err(err());
            }
            return Ok(Arch {
                major,
                minor,
                variant,
            });
        }
        let digits = lower
            .strip_prefix("sm_")
            .or_else(|| lower.strip_prefix("sm"))
            .or_else(|| lower.strip_prefix("compute_"))
            .unwrap_or(&lower);
        let (digits, variant) = split_variant(digits);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        let sm: u32 = digits.parse().map_err(|_| err())?;
        if !(10..=999).contains(&sm) {
            return Err(err());
        }
        Ok(Arch::from_sm(sm, variant))
    }
}

fn split_variant(text: &str) -> (&str, Variant) {
    if let Some(rest) = text.strip_suffix('a') {
        (rest, Variant::A)
    } else if let Some(rest) = text.strip_suffix('f') {
        (rest, Variant::F)
    } else {
        (text, Variant::Plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_every_documented_spelling() {
        for text in ["sm_120", "sm120", "12.0", "120", "SM_120", " sm_120 "] {
            assert_eq!(text.parse::<Arch>().unwrap(), Arch::new(12, 0), "{text}");
        }
        let a: Arch = "sm_120a".parse().unwrap();
        assert_eq!((a.sm(), a.variant), (120, Variant::A));
        let f: Arch = "sm_100f".parse().unwrap();
        assert_eq!((f.sm(), f.variant), (100, Variant::F));
        assert_eq!("12.1".parse::<Arch>().unwrap(), Arch::new(12, 1));
        assert_eq!("sm_90".parse::<Arch>().unwrap(), Arch::new(9, 0));
        assert_eq!("9.0a".parse::<Arch>().unwrap().variant, Variant::A);
    }

    #[test]
    fn rejects_garbage() {
        for text in ["", "sm_", "smx", "12.x", "12.10", "sm_1200000", "a", "1"] {
            assert!(text.parse::<Arch>().is_err(), "{text}");
        }
    }

    #[test]
    fn displays_canonically() {
        assert_eq!("12.0".parse::<Arch>().unwrap().to_string(), "sm_120");
        assert_eq!("sm100f".parse::<Arch>().unwrap().to_string(), "sm_100f");
    }
}
