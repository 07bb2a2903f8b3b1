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

/// The text [`Serialize`] writes, read back (gatefix's cache).
impl<'de> serde::Deserialize<'de> for Arch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Why a target string was rejected: the message says what was expected instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseArchError(pub String);

impl ParseArchError {
    fn invalid(text: &str) -> Self {
        ParseArchError(format!(
            "invalid target `{text}`: expected an architecture such as sm_120, sm120, sm_120a, 12.0 or 120"
        ))
    }
}

/// The compute capabilities NVIDIA has shipped or announced (nvcc's `--list-gpu-arch` over
/// CUDA 11-13, plus the older ones still seen in fatbins). A target outside this list is
/// almost always a typo; `--allow-unknown-arch` takes one anyway, for new hardware.
pub const KNOWN: &[(u32, u32)] = &[
    (3, 5),
    (3, 7),
    (5, 0),
    (5, 2),
    (5, 3),
    (6, 0),
    (6, 1),
    (6, 2),
    (7, 0),
    (7, 2),
    (7, 5),
    (8, 0),
    (8, 6),
    (8, 7),
    (8, 9),
    (9, 0),
    (10, 0),
    (10, 1),
    (10, 3),
    (10, 7),
    (11, 0),
    (12, 0),
    (12, 1),
];

impl Arch {
    /// Whether the compute capability is one of [`KNOWN`].
    pub fn is_known(self) -> bool {
        KNOWN.contains(&(self.major, self.minor))
    }
}

/// Refuses targets outside [`KNOWN`] (unless `allow`), naming the known ones.
pub fn check_known(targets: &[Arch], allow: bool) -> Result<(), ParseArchError> {
    if allow {
        return Ok(());
    }
    let Some(unknown) = targets.iter().find(|t| !t.is_known()) else {
        return Ok(());
    };
    let known: Vec<String> = KNOWN
        .iter()
        .map(|&(major, minor)| Arch::new(major, minor).to_string())
        .collect();
    Err(ParseArchError(format!(
        "unknown architecture `{unknown}` (compute capability {}.{}); known: {}. \
         For hardware newer than this list, pass --allow-unknown-arch",
        unknown.major,
        unknown.minor,
        known.join(", ")
    )))
}

impl FromStr for Arch {
    type Err = ParseArchError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = || ParseArchError::invalid(text);
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
        let prefixed = lower
            .strip_prefix("sm_")
            .or_else(|| lower.strip_prefix("sm"))
            .or_else(|| lower.strip_prefix("compute_"));
        let digits = prefixed.unwrap_or(&lower);
        let (digits, variant) = split_variant(digits);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        let sm: u32 = digits.parse().map_err(|_| err())?;
        // A bare `12` reads as a major version (12.0) to a person but as sm 12 (1.2) to the
        // sm-number rule: refuse it rather than guess.
        if prefixed.is_none() && sm < 20 {
            let suffix = variant.suffix();
            return Err(ParseArchError(format!(
                "ambiguous target `{}`: a bare number is an sm number (90 is 9.0, 120 is 12.0); \
                 for compute capability {sm}.0 write {sm}.0{suffix} or sm_{sm}0{suffix}",
                text.trim()
            )));
        }
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
    fn serde_reads_back_what_it_writes() {
        for &(major, minor) in KNOWN {
            for variant in [Variant::Plain, Variant::A, Variant::F] {
                let arch = Arch {
                    major,
                    minor,
                    variant,
                };
                let text = serde_json::to_string(&arch).unwrap();
                assert_eq!(serde_json::from_str::<Arch>(&text).unwrap(), arch, "{text}");
            }
        }
        assert!(serde_json::from_str::<Arch>("\"sm_x\"").is_err());
    }

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
    fn a_bare_major_is_ambiguous_and_suggests_both_spellings() {
        let message = "12".parse::<Arch>().unwrap_err().to_string();
        assert!(
            message.contains("12.0") && message.contains("sm_120"),
            "{message}"
        );
        let message = "9".parse::<Arch>().unwrap_err().to_string();
        assert!(
            message.contains("9.0") && message.contains("sm_90"),
            "{message}"
        );
        // With a prefix the sm number is explicit: sm_12 is 1.2 (and unknown, see below).
        assert_eq!("sm_12".parse::<Arch>().unwrap(), Arch::new(1, 2));
        assert_eq!("90".parse::<Arch>().unwrap(), Arch::new(9, 0));
    }

    #[test]
    fn unknown_archs_are_refused_unless_allowed() {
        let odd: Arch = "sm_999".parse().unwrap();
        let message = check_known(&[Arch::new(12, 0), odd], false)
            .unwrap_err()
            .to_string();
        assert!(message.contains("sm_999"), "{message}");
        assert!(message.contains("sm_120, sm_121"), "{message}");
        assert!(message.contains("--allow-unknown-arch"), "{message}");
        assert!(check_known(&[odd], true).is_ok());
        assert!(check_known(&["sm_120a".parse().unwrap()], false).is_ok());
        assert!(check_known(&["sm_12".parse().unwrap()], false).is_err());
    }

    #[test]
    fn displays_canonically() {
        assert_eq!("12.0".parse::<Arch>().unwrap().to_string(), "sm_120");
        assert_eq!("sm100f".parse::<Arch>().unwrap().to_string(), "sm_100f");
    }
}
