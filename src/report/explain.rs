//! Printers for `gatefix explain`: the findings `cli::explain` puts together (where the
//! message is raised, the generators or gate that lead there, their verdicts, the advice), as
//! text for a person or as JSON for tools. Both printers read the same `Explanation`, so they
//! cannot say different things.

use std::fmt::Write as _;

use serde::Serialize;

use crate::report::human::elide;
use crate::verdict::VerdictKind;

/// Everything `explain` found for one message at one target.
#[derive(Debug, Serialize)]
pub struct Explanation {
    /// The exception type, when the message had one (`RuntimeError`).
    pub exception: Option<String>,
    pub message: String,
    pub site: String,
    pub target: String,
    /// The raise and check sites whose message matches, best first.
    pub raises: Vec<RaiseSite>,
    /// Shipped patches related to the generators found.
    pub patches: Vec<PatchAdvice>,
    /// gatefix transactions still in effect that wrote a file the findings name: the gate
    /// may be open (or the check changed) because of them.
    pub transactions: Vec<TransactionNote>,
    pub conclusion: Conclusion,
}

/// One transaction of the site's ledger that wrote files the explanation names.
#[derive(Debug, Serialize)]
pub struct TransactionNote {
    pub txn: u32,
    /// The target it was applied for (`sm_120`).
    pub target: Option<String>,
    /// Its patches, `id (safe)` or `id (unsafe)` (a fix synthesized from the audit).
    pub patches: Vec<String>,
    /// The files it wrote that the findings name.
    pub files: Vec<String>,
    /// The command that undoes it, byte for byte.
    pub revert: String,
}

#[derive(Debug, Serialize)]
pub struct RaiseSite {
    /// `raise`, `assert` or the check macro (`FLASHINFER_CHECK`, `throw`).
    pub kind: String,
    pub file: String,
    pub line: u32,
    pub function: Option<String>,
    /// The distribution owning the file, `name version`.
    pub distribution: Option<String>,
    /// Matched only as a part of the message.
    pub partial: bool,
    /// The message template, placeholders as `{expr}`.
    pub template: String,
    /// What each placeholder stood for in the message (`""` names a placeholder with no
    /// expression).
    pub captures: Vec<Capture>,
    /// A native check's condition: no Python gate decides it.
    pub native_condition: Option<String>,
    /// JIT generators that call the raising function (with the list the message printed).
    pub generators: Vec<GeneratorFinding>,
    /// The list placeholder the generators were picked by, as printed (`[9, 10]`).
    pub generator_list: Option<String>,
    /// Otherwise, the gate nearest above the raise in the same function.
    pub guard: Option<GuardFinding>,
}

#[derive(Debug, Serialize)]
pub struct Capture {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Serialize)]
pub struct GeneratorFinding {
    pub id: String,
    pub file: String,
    pub line: u32,
    /// `present`, `missing` or `unknown` at the target.
    pub kernel: &'static str,
    /// Why the kernel is unknown.
    pub why: Option<String>,
    /// Gates in other files whose verdict's path goes through this generator.
    pub reached_from: Vec<GateReach>,
}

#[derive(Debug, Serialize)]
pub struct GateReach {
    pub distribution: Option<String>,
    pub file: String,
    pub line: u32,
    pub text: String,
    pub verdict: VerdictKind,
}

#[derive(Debug, Serialize)]
pub struct GuardFinding {
    pub file: String,
    pub line: u32,
    pub text: String,
    pub predicate: String,
    /// The guard's verdict at the target, none when it was not judged.
    pub verdict: Option<VerdictKind>,
    /// Whether the check raises at the target: `yes`, `no` or `unknown`.
    pub raises: &'static str,
    /// Why it is unknown.
    pub why: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct PatchAdvice {
    pub id: String,
    pub summary: String,
    /// Every kernel it needs is present at the target.
    pub applies: bool,
    /// The kernels missing at the target, in words.
    pub missing: Vec<String>,
    /// What to run when it applies.
    pub command: Option<String>,
}

/// The closing word.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Conclusion {
    /// No raise or check site has the message.
    NotFound,
    /// No kernel for the target exists behind the check: the gates must stay closed.
    NoKernel,
    /// The check raises at the target, but the kernel behind it serves the target: the gate
    /// guarding it is an opportunity.
    CanOpen,
    /// The check raises at the target and whether a kernel exists behind it is not known.
    Unverified,
    /// A shipped patch applies or is refused (see `patches`).
    SeePatches,
    /// Nothing shipped covers the path.
    NoPatch,
}

pub fn render_json(explanation: &Explanation) -> String {
    let mut text = serde_json::to_string_pretty(explanation).expect("plain data serialises");
    text.push('\n');
    text
}

pub fn render_human(e: &Explanation) -> String {
    let mut out = String::new();
    let shown = match &e.exception {
        Some(kind) => format!("{kind}: {}", e.message),
        None => e.message.clone(),
    };
    let _ = writeln!(out, "explain: {shown}");
    if matches!(e.conclusion, Conclusion::NotFound) {
        return out;
    }
    // First: a file gatefix wrote is the likeliest cause of a crash that followed it.
    for t in &e.transactions {
        let _ = writeln!(
            out,
            "gatefix wrote {} in transaction {} (apply{}: {}); if the error came after it, undo it: {}",
            t.files.join(", "),
            t.txn,
            t.target
                .as_deref()
                .map(|target| format!(" {target}"))
                .unwrap_or_default(),
            t.patches.join(", "),
            t.revert
        );
    }
    let target = &e.target;
    for raise in &e.raises {
        site_lines(&mut out, raise);
        if let Some(condition) = &raise.native_condition {
            let _ = writeln!(
                out,
                "  a check in native code: it fails unless `{condition}`; the kernel behind it was \
                 built for what that condition names, and no Python gate decides it"
            );
            continue;
        }
        if !raise.generators.is_empty() {
            let function = raise.function.as_deref().unwrap_or_default();
            let which = raise
                .generator_list
                .as_ref()
                .map(|l| format!(" with the list {l}"))
                .unwrap_or_default();
            let _ = writeln!(out, "  JIT generators that call {function}{which}:");
            for g in &raise.generators {
                let word = match (g.kernel, &g.why) {
                    ("present", _) => format!("kernel present at {target}"),
                    ("missing", _) => format!("NO kernel at {target}"),
                    (_, why) => format!("unknown at {target} ({})", why.as_deref().unwrap_or("")),
                };
                let _ = writeln!(out, "    {}  {}:{}  {word}", g.id, g.file, g.line);
                for reach in &g.reached_from {
                    let _ = writeln!(
                        out,
                        "      reached from {} {}:{}  `{}`: {} at {target}",
                        reach.distribution.as_deref().unwrap_or("?"),
                        reach.file,
                        reach.line,
                        elide(&reach.text, 70),
                        reach.verdict.name()
                    );
                    if reach.verdict == VerdictKind::Trap {
                        let _ = writeln!(
                            out,
                            "        this gate lets {target} onto the path that raises: keep off \
                             it (the flag or backend it guards) until a kernel exists"
                        );
                    }
                }
            }
            continue;
        }
        match &raise.guard {
            Some(guard) => {
                let _ = writeln!(
                    out,
                    "  guarded by {}:{}  `{}`  ({})",
                    guard.file,
                    guard.line,
                    elide(&guard.text, 80),
                    guard.predicate
                );
                let verdict = guard.verdict.map_or("not judged", VerdictKind::name);
                let _ = match (guard.raises, guard.verdict) {
                    ("yes", Some(VerdictKind::Opportunity)) => writeln!(
                        out,
                        "  at {target} this check raises, yet the code after it has a kernel for \
                         {target} (verdict: opportunity): the gate can open"
                    ),
                    ("yes", Some(VerdictKind::Wall | VerdictKind::Trap)) => writeln!(
                        out,
                        "  at {target} this check raises (verdict: {verdict}): the code after it has no \
                         path for {target}; the gate must stay closed"
                    ),
                    ("yes", _) => writeln!(
                        out,
                        "  at {target} this check raises (verdict: {verdict}): whether the code after it \
                         has a kernel for {target} is not known; keep the gate closed"
                    ),
                    ("no", _) => writeln!(
                        out,
                        "  at {target} this check does not raise (verdict: {verdict}): the message came \
                         from another GPU or another call; check --target"
                    ),
                    _ => writeln!(
                        out,
                        "  at {target} whether it raises is unknown: {}",
                        guard.why.join("; ")
                    ),
                };
            }
            None => {
                let _ = writeln!(
                    out,
                    "  no architecture gate guards it: it is not an arch check, or one gatefix \
                     does not read"
                );
            }
        }
    }
    let _ = writeln!(out);
    for patch in &e.patches {
        if patch.applies {
            let _ = writeln!(
                out,
                "fix: patch {} applies here ({}): its kernel is present at {target}. Run: {}",
                patch.id,
                patch.summary,
                patch.command.as_deref().unwrap_or_default()
            );
        } else {
            let _ = writeln!(
                out,
                "no fix: patch {} ({}) would open it, but is refused: no kernel at {target} for {}",
                patch.id,
                patch.summary,
                patch.missing.join(", ")
            );
        }
    }
    match e.conclusion {
        Conclusion::NoKernel => {
            let _ = writeln!(
                out,
                "verdict: no kernel for {target} exists behind the check that raised: the gates \
                 that reach it must stay closed (do not force them open){}",
                if e.patches.is_empty() {
                    ", or install a release whose kernels list this GPU"
                } else {
                    ""
                }
            );
        }
        Conclusion::NoPatch => {
            let _ = writeln!(
                out,
                "verdict: no shipped patch covers this path; the lines above name the check and its gate"
            );
        }
        Conclusion::CanOpen => {
            let _ = writeln!(
                out,
                "verdict: a kernel for {target} exists behind the check that raised: the gate can \
                 open. Run: gatefix apply {target} --dry-run (it shows the fix for this site, or \
                 that none is built for this file)"
            );
        }
        Conclusion::Unverified => {
            let _ = writeln!(
                out,
                "verdict: gatefix cannot tell whether a kernel for {target} exists behind the check \
                 that raised; keep its gate closed (`gatefix audit --target {target}` shows what \
                 is unknown)"
            );
        }
        Conclusion::SeePatches | Conclusion::NotFound => {}
    }
    out
}

fn site_lines(out: &mut String, s: &RaiseSite) {
    let owner = s
        .distribution
        .as_ref()
        .map(|d| format!(" ({d})"))
        .unwrap_or_default();
    let place = match &s.function {
        Some(f) => format!("{}:{} in {f}{owner}", s.file, s.line),
        None => format!("{}:{}{owner}", s.file, s.line),
    };
    let how = if s.partial {
        " (part of the message)"
    } else {
        ""
    };
    let _ = writeln!(out, "\n{} at {place}{how}", s.kind);
    let _ = writeln!(out, "  message  {}", elide(&s.template, 160));
    for capture in &s.captures {
        let name = if capture.name.is_empty() {
            "…"
        } else {
            &capture.name
        };
        let _ = writeln!(out, "  {{{name}}} = {}", capture.value);
    }
}
