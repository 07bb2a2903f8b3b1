//! The literal tokens every gate form starts from. One aho-corasick automaton over them is the
//! file prefilter (may over-match, never under-match) and the cheap "could this expression
//! depend on the architecture?" test that keeps resolution off unrelated code.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

/// Tokens of the built-in forms (docs/gates.md F1–F12). Every gate has at least one of these
/// in its own text, in the text of a same-module name it uses, or in a rule-declared helper name.
pub const FORM_TOKENS: &[&str] = &[
    "capabilit",      // get_device_capability, has_device_capability, compute_capability ...
    "is_sm",          // is_sm90_supported, is_sm100, _is_sm120a_supported, IS_SM90 ...
    "sm_version",     // sm_version < 90
    "device_sm",      // get_device_sm(), get_platform().device_sm
    "is_blackwell",   // is_blackwell(), is_blackwell_supported()
    "is_hopper",      // is_hopper(), is_hopper_with_cuda_12_3()
    "is_ampere",      // is_ampere_with_cuda_12_3()
    "major_versions", // supported_major_versions=[...]
    "get_nvcc_flags_list",
    "get_device_properties",
    "arch_support", // is_arch_support_pdl
];

/// Extra tokens that matter while resolving (CUDA version atoms) but that alone do not make a
/// file worth parsing.
pub const RESOLVE_TOKENS: &[&str] = &["version.cuda", "cuda_version", "get_platform"];

/// A compiled token set.
#[derive(Clone, Debug)]
pub struct Tokens {
    /// One automaton per group of spellings. aho-corasick's SIMD search (Teddy) takes at most
    /// `PATTERNS_PER_AUTOMATON` patterns; past that one automaton steps byte by byte, about
    /// three times slower over the bench site's parsed files than the form tokens and the
    /// rule names searched apart.
    automata: Vec<AhoCorasick>,
    /// The length of the shortest pattern: a shorter text holds none. Resolution tests the
    /// text of nearly every expression it evaluates, most of them short names, and an
    /// automaton's search costs more than the test it makes on a few bytes.
    shortest: usize,
}

const PATTERNS_PER_AUTOMATON: usize = 64;

impl Tokens {
    pub fn new<I, S>(tokens: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Self::grouped([tokens])
    }

    /// A token set searched group by group (see `automata`): the same occurrences, but each
    /// group small enough for the fast search.
    pub fn grouped<G, I, S>(groups: G) -> Self
    where
        G: IntoIterator<Item = I>,
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut automata = Vec::new();
        let mut shortest = usize::MAX;
        for group in groups {
            let list = spellings(group);
            shortest = list.iter().map(String::len).fold(shortest, usize::min);
            for patterns in list.chunks(PATTERNS_PER_AUTOMATON) {
                automata.push(
                    AhoCorasickBuilder::new()
                        .kind(Some(AhoCorasickKind::DFA))
                        // Leftmost-first lets aho-corasick use its SIMD (Teddy) prefilter.
                        .match_kind(MatchKind::LeftmostFirst)
                        .build(patterns)
                        .expect("token automaton builds from plain literals"),
                );
            }
        }
        Tokens { automata, shortest }
    }

    /// Where each token occurrence starts, in order, found as the iterator is read. Tokens
    /// never span a line, so a range of whole lines holds a token exactly when one of these
    /// starts in it. With several automata, occurrences that overlap are all reported (one
    /// automaton reports the leftmost); a token holds no quote, `#` or line break, so
    /// overlapping occurrences lie in the same code, string or comment.
    pub fn starts<'b>(&'b self, bytes: &'b [u8]) -> impl Iterator<Item = usize> + 'b {
        let mut sources: Vec<_> = self
            .automata
            .iter()
            .map(|automaton| automaton.find_iter(bytes).map(|m| m.start()).peekable())
            .collect();
        let mut last = None;
        std::iter::from_fn(move || {
            loop {
                let (source, _) = sources
                    .iter_mut()
                    .enumerate()
                    .filter_map(|(i, source)| source.peek().map(|&at| (i, at)))
                    .min_by_key(|&(_, at)| at)?;
                let at = sources[source].next()?;
                if last != Some(at) {
                    last = Some(at);
                    return Some(at);
                }
            }
        })
    }

    /// True when the bytes contain any token.
    pub fn hit(&self, bytes: &[u8]) -> bool {
        bytes.len() >= self.shortest
            && self
                .automata
                .iter()
                .any(|automaton| automaton.is_match(bytes))
    }
}

/// lower, UPPER and Capitalized spellings (`is_sm100`, `IS_SM100`, `DeviceCapability`) as
/// plain patterns, sorted: a case-sensitive DFA is several times faster than ASCII case
/// folding here.
fn spellings<I, S>(tokens: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut list: Vec<String> = tokens
        .into_iter()
        .map(|s| s.as_ref().to_string())
        .filter(|s| !s.is_empty())
        .flat_map(|s| {
            // `Capabilit` as in `DeviceCapability`; a capitalized `Is_sm` is nobody's
            // spelling (CamelCase drops the underscores), and every extra pattern slows
            // the scan of 290 MB a little.
            let camel = (!s.contains('_')).then(|| capitalized(&s));
            [
                Some(s.to_ascii_lowercase()),
                Some(s.to_ascii_uppercase()),
                camel,
                Some(s),
            ]
            .into_iter()
            .flatten()
        })
        .collect();
    list.sort();
    list.dedup();
    list
}

fn capitalized(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut chars = lower.chars();
    match chars.next() {
        Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// The file prefilter: form tokens plus the helper names that rules declare.
pub fn prefilter_tokens(rule_names: &[String]) -> Tokens {
    memoised(Filter::Prefilter, rule_names, || {
        Tokens::new(
            FORM_TOKENS
                .iter()
                .map(|s| s.to_string())
                .chain(rule_names.iter().map(|name| last_segment(name).to_string())),
        )
    })
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Filter {
    Prefilter,
    Resolve,
}

/// The filters built for the last few rule sets. Building the automata costs about as much as
/// scanning a small site, and one process scans the same rules again and again: apply's
/// re-resolution of edited text, explain, the fuzzer's one-file sites. A `Tokens` clone shares
/// its automata.
fn memoised(filter: Filter, names: &[String], build: impl FnOnce() -> Tokens) -> Tokens {
    type Built = Vec<(Filter, Vec<String>, Tokens)>;
    static BUILT: std::sync::Mutex<Built> = std::sync::Mutex::new(Vec::new());
    const KEPT: usize = 8;
    let lookup = |built: &Built| {
        built
            .iter()
            .find(|(f, n, _)| *f == filter && n.as_slice() == names)
            .map(|(_, _, tokens)| tokens.clone())
    };
    if let Some(tokens) = lookup(&BUILT.lock().unwrap_or_else(|e| e.into_inner())) {
        return tokens;
    }
    let tokens = build();
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if lookup(&built).is_none() {
        if built.len() == KEPT {
            built.remove(0);
        }
        built.push((filter, names.to_vec(), tokens.clone()));
    }
    tokens
}

/// The form tokens alone, built once for the process: the resolver asks it of every name it
/// meets, and one resolver is made per module.
pub fn form_tokens() -> &'static Tokens {
    static FORM: std::sync::OnceLock<Tokens> = std::sync::OnceLock::new();
    FORM.get_or_init(|| prefilter_tokens(&[]))
}

/// The resolution filter: form tokens, CUDA-version tokens, and the names rules mention
/// (as `Rules::resolve_names` spells them); the form tokens and the rest are searched apart
/// (see `Tokens::automata`).
pub fn resolve_tokens(rule_names: &[String]) -> Tokens {
    memoised(Filter::Resolve, rule_names, || {
        resolve_tokens_built(rule_names)
    })
}

fn resolve_tokens_built(rule_names: &[String]) -> Tokens {
    let form = FORM_TOKENS
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>();
    let rest = RESOLVE_TOKENS
        .iter()
        .map(|s| s.to_string())
        .chain(rule_names.iter().cloned())
        .collect::<Vec<_>>();
    Tokens::grouped([form, rest])
}

/// Where one of `names` is declared as a parameter of a `def` (`def supported(cls, arch: int)`),
/// in order. Parameter names such as `arch` or `cc` are too common as substrings to be
/// prefilter tokens (`search`, `access`), but a `def` that takes one is a parametric gate
/// candidate (rules/parameters.toml), so the scan treats these places as token hits.
pub fn def_parameter_starts(bytes: &[u8], names: &[String]) -> Vec<usize> {
    /// How far a parameter list is read: longer ones are generated code.
    const MAX_PARAMS_BYTES: usize = 4096;
    let mut out = Vec::new();
    if names.is_empty() {
        return out;
    }
    // Built once per file, not per definition and name: a module has hundreds of defs.
    let finders: Vec<memchr::memmem::Finder> = names
        .iter()
        .map(|name| memchr::memmem::Finder::new(name.as_bytes()))
        .collect();
    for def in memchr::memmem::find_iter(bytes, b"def ") {
        if def > 0 && !matches!(bytes[def - 1], b' ' | b'\t' | b'\n') {
            continue;
        }
        let limit = bytes.len().min(def + MAX_PARAMS_BYTES);
        let Some(open) = memchr::memchr(b'(', &bytes[def..limit]).map(|i| def + i) else {
            continue;
        };
        // The name between `def ` and `(` must be one identifier.
        if !bytes[def + 4..open]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b' ')
        {
            continue;
        }
        let mut depth = 0usize;
        let mut close = None;
        for (i, &c) in bytes[open..limit].iter().enumerate() {
            match c {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        close = Some(open + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else { continue };
        let params = &bytes[open + 1..close];
        for finder in &finders {
            for at in finder.find_iter(params) {
                let end = at + finder.needle().len();
                let ident = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
                let before = params[..at].iter().rev().find(|c| !c.is_ascii_whitespace());
                let after = params[end..].iter().find(|c| !c.is_ascii_whitespace());
                let whole = (at == 0 || !ident(&params[at - 1]))
                    && params.get(end).is_none_or(|c| !ident(c));
                if whole
                    && before.is_none_or(|c| matches!(c, b',' | b'*'))
                    && after.is_none_or(|c| matches!(c, b':' | b',' | b'='))
                {
                    out.push(open + 1 + at);
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn last_segment(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_parameters_of_defs_are_found_and_look_alikes_are_not() {
        let names = vec!["arch".to_string(), "cc".to_string()];
        let src = b"def supported(cls, arch: int):\n    pass\nasync def f(cc, *, x=1): pass\n\
            search = arch_list(cc)\ndef g(self, archs, access=cc): pass\nx = 'def h(arch)'\n";
        let found: Vec<&[u8]> = def_parameter_starts(src, &names)
            .into_iter()
            .map(|at| &src[at..at + 4.min(src.len() - at)])
            .collect();
        // `arch` of `supported`, `cc` of `f`; not the call's `cc`, not `archs`, not a default
        // value, not a `def` glued to a quote.
        assert_eq!(found, [&b"arch"[..], b"cc, "]);
    }

    #[test]
    fn many_tokens_are_searched_by_several_automata_finding_every_occurrence() {
        // 100 tokens, 200 spellings: more than one automaton takes.
        let tokens = Tokens::new((0..100).map(|i| format!("tok{i}_x")));
        assert!(tokens.automata.len() > 1);
        let text = b"tok5_x = tok99_x or TOK42_X  # tok7";
        assert_eq!(tokens.starts(text).collect::<Vec<_>>(), [0, 9, 20]);
        assert!(tokens.hit(b"y = TOK99_X"));
        assert!(!tokens.hit(b"tok7 tok_x"));
    }

    #[test]
    fn groups_report_overlapping_occurrences_in_order() {
        let text = b"x = device_sm_version; y = is_sm90";
        let one = Tokens::new(["device_sm", "sm_version", "is_sm"]);
        assert_eq!(one.starts(text).collect::<Vec<_>>(), [4, 27]);
        let apart = Tokens::grouped([vec!["device_sm", "is_sm"], vec!["sm_version", "is_sm"]]);
        assert_eq!(apart.starts(text).collect::<Vec<_>>(), [4, 11, 27]);
    }

    #[test]
    fn matches_lower_upper_case_and_rule_names() {
        let tokens = prefilter_tokens(&["vllm.platforms.current_platform".to_string()]);
        assert!(tokens.hit(b"if IS_SM100: pass"));
        assert!(tokens.hit(b"prop = DeviceCapability(9, 0)"));
        assert!(tokens.hit(b"x = current_platform.foo()"));
        assert!(!tokens.hit(b"import os\nprint('hello')\n"));
    }
}
