//! Flag flow: a gated path that only sets a flag (`self.enable_x = True`, `FLAG = True`,
//! `os.environ["X"] = "1"`) or a gate whose value is stored or returned leads to the places
//! that read the flag back; the code those reads guard is what the gate really turns on.
//!
//! Each read is placed in its statement (parsed from the enclosing definitions only) and
//! followed up through `and`/`or`/`not`/parentheses to what uses it: the condition of an `if`,
//! `elif`, `while` or conditional expression (its branch runs when the flag holds; a negated
//! read whose branch returns or raises guards the code after it), an assignment (a local
//! followed to its uses in the function, an attribute or a global read back in turn), or a
//! `return` (the function becomes a predicate whose calls are reads). Anything else stops,
//! saying why. Gates in the same condition, or around the branch, joined by `and`, are kept as
//! guards: at a target where one of them blocks, the path is not taken.

use std::collections::HashMap;
use std::sync::Arc;

use crate::syntax::{Node, Tree};

use super::code::{
    Code, Facts, FileCache, FlagKey, Parsed, code_after_statement, enclosing_ranges_with,
    ends_with_raise, facts, field_is, file_of_module, line_indent, line_of, plain_word,
    raise_guarded, text, undecorated,
};
use super::site_text::{Hit, SiteText};
use crate::scan::Gate;
use crate::words::is_word_byte;

/// Reads of one flag followed before giving up on it.
pub const MAX_READS: usize = 48;
/// Uses of a local followed, and local hops in a row.
const MAX_LOCAL_USES: usize = 16;
const MAX_LOCAL_DEPTH: usize = 3;

/// Another gate on the path: where it blocks a target, the path is not taken there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Guard {
    /// Index into the scan's gates.
    pub gate: usize,
    /// The path runs where the gate does *not* hold (`and not _is_sm100`).
    pub negated: bool,
    /// The gate is a condition around the flag's own read (`eligible and backend != "x"` is a
    /// gate because `eligible` is): it fails wherever the flag does, so it says something of
    /// its own only at a target where the flag lets the path run.
    pub holds_read: bool,
}

/// What reading a flag leads to.
#[derive(Debug, Clone)]
pub enum Hop {
    /// Code that runs when the flag holds, in `module`; `what` says where (`file:line ...`).
    Code {
        module: String,
        /// Boxed: `Facts` is large, and most hops are flags or stops.
        facts: Box<Facts>,
        what: String,
        guards: Vec<Guard>,
    },
    /// Another flag set from this one (a local stored on an attribute, a predicate function).
    Flag {
        key: FlagKey,
        what: String,
        guards: Vec<Guard>,
    },
    /// The search stopped here, and why.
    Stop(String),
}

pub struct Reader<'a> {
    pub code: &'a Code,
    pub text: &'a SiteText,
    pub gates: &'a [Gate],
    /// File → indices of its gates.
    pub gates_by_file: &'a HashMap<String, Vec<usize>>,
}

/// The methods a class check's search reads (`Reader::class_capability`).
#[derive(Default)]
struct ClassRead {
    /// Methods still to turn into hops.
    queue: Vec<ClassMethod>,
    /// The names of the methods of the classes read whole (the checked class and its
    /// same-module subclasses): `self.<name>()` runs one of them.
    own: Vec<String>,
    /// (module, line) of each inherited method read.
    methods: Vec<(String, usize)>,
}

struct ClassMethod {
    /// The module and class that define the method.
    defining: Arc<Parsed>,
    class: String,
    found: Facts,
    what: String,
}

struct Place<'t> {
    parsed: &'t Parsed,
    path: &'t str,
    /// Walking a gate's own value: a helper that returns it is not followed to its calls.
    gate: bool,
}

impl Reader<'_> {
    /// Where the reads of `key` (found by `hits`, every occurrence of its name) lead.
    pub fn reads(&self, key: &FlagKey, hits: &[Hit]) -> Vec<Hop> {
        // Hits come in file order: whether a file stores its own attribute of the name is
        // asked once per file, not once per hit (a common name has thousands).
        let mut own_attribute: Option<(usize, bool)> = None;
        let reads: Vec<Hit> = hits
            .iter()
            .copied()
            .filter(|hit| self.is_read(key, hit, &mut own_attribute))
            .collect();
        if reads.is_empty() {
            if let FlagKey::Func { name, path } = key
                && let Some(hops) = self.class_capability(name, path, hits)
            {
                return hops;
            }
            // A function nobody on the site calls is an entry point: what its exit guards
            // runs in its callers, outside the site.
            return vec![Hop::Stop(match key {
                FlagKey::Func { name, .. } | FlagKey::Exit { name, .. } => format!(
                    "{name}() is not called in the site: an entry point, whose callers are outside it"
                ),
                _ => format!("{} is never read back in the site", key.words()),
            })];
        }
        if reads.len() > MAX_READS {
            return vec![Hop::Stop(format!(
                "{} has {} reads in the site, over the budget of {MAX_READS}",
                key.words(),
                reads.len()
            ))];
        }
        let mut out = Vec::new();
        let mut last = None;
        for hit in reads {
            let file = &self.text.files[hit.file];
            let Some(parsed) = file.module.as_deref().and_then(|m| self.code.module(m)) else {
                continue;
            };
            let place = Place {
                parsed: &parsed,
                path: &file.path,
                gate: false,
            };
            self.read_at(&place, hit, key, &mut last, &mut out);
        }
        out
    }

    /// Where the value of a gate (not the condition of a branch) goes: stored, returned.
    pub fn gate_value(
        &self,
        gate: &Gate,
        parsed: &Parsed,
        start: usize,
        end: usize,
        cache: &mut FileCache,
    ) -> Vec<Hop> {
        let place = Place {
            parsed,
            path: &gate.file,
            gate: true,
        };
        let mut out = Vec::new();
        let Some(mut node) = node_with_context(parsed, start, end, cache) else {
            return out;
        };
        while let Some(parent) = node.parent() {
            if parent.byte_range() != node.byte_range() {
                break;
            }
            node = parent;
        }
        self.walk(&place, node, true, false, 0, &mut out);
        out
    }

    /// The gates in the conditions of the `if`s around the code at `start..end`, up to its
    /// function: where one blocks a target, that code is not reached there.
    pub fn guards_around(
        &self,
        parsed: &Parsed,
        path: &str,
        start: usize,
        end: usize,
        cache: &mut FileCache,
    ) -> Vec<Guard> {
        let place = Place {
            parsed,
            path,
            gate: true,
        };
        match node_with_context(parsed, start, end, cache) {
            Some(node) => self.enclosing_guards(&place, node),
            None => Vec::new(),
        }
    }

    /// Whether an occurrence of the name is a read of the flag (not a store, a definition, or
    /// the same name in an unrelated place).
    ///
    /// `own_attribute` remembers `another_class_attribute` for the last file asked.
    fn is_read(&self, key: &FlagKey, hit: &Hit, own_attribute: &mut Option<(usize, bool)>) -> bool {
        let file = &self.text.files[hit.file];
        let src = &file.src;
        let before = hit.start.checked_sub(1).map(|i| src[i]);
        let rest = &src[hit.end..];
        let next = rest.iter().position(|b| *b != b' ').map(|i| (i, rest[i]));
        let stores = match next {
            Some((i, b'=')) => rest.get(i + 1) != Some(&b'='),
            _ => false,
        };
        match key {
            FlagKey::Attr { name, path } => {
                before == Some(b'.')
                    && !stores
                    && !match *own_attribute {
                        Some((file, other)) if file == hit.file => other,
                        _ => {
                            let other = self.another_class_attribute(name, path, hit);
                            *own_attribute = Some((hit.file, other));
                            other
                        }
                    }
            }
            FlagKey::Env(_) => {
                let quoted = matches!(before, Some(b'"' | b'\''))
                    && src.get(hit.end).copied() == before
                    && !env_store(rest);
                quoted || (before == Some(b'.') && !stores)
            }
            FlagKey::Func { name, path } | FlagKey::Exit { name, path } => {
                let called = matches!(next, Some((_, b'(')));
                let line_start = memchr::memrchr(b'\n', &src[..hit.start]).map_or(0, |i| i + 1);
                let lead = src[line_start..hit.start].trim_ascii_start();
                let definition = lead == b"def " || lead == b"async def ";
                called && !definition && self.calls_definition(name, path, hit.file)
            }
            FlagKey::Global { module, name } => {
                if before.is_some_and(|b| b == b'.' || is_word_byte(b)) || stores {
                    return false;
                }
                if file.module.as_deref() == Some(module.as_str()) {
                    return true;
                }
                file.module
                    .as_deref()
                    .and_then(|m| self.code.module(m))
                    .is_some_and(|p| {
                        p.imports().get(name.as_str())
                            == Some(&(module.clone(), Some(name.clone())))
                    })
            }
        }
    }

    /// A method whose value is the gate, which the site calls only through `cls.` or `self.`
    /// inside a base class that defines the method too (vllm's experts classes each define
    /// `_supports_current_device()`, and the base's `is_supported_config` asks
    /// `if not cls._supports_current_device(): return False, ...` to pick a class): the call
    /// dispatches to whichever subclass is asked, so no call site is this class's own. What
    /// the gate decides is whether the class is used, and the code that then runs is the
    /// class's other methods: each is a hop, and their kernels are joined. Only where the
    /// method is a check (each `return` gives a truth value), the file defines it once (two
    /// classes of one file would share the flag) and it stands directly in a top-level class.
    fn class_capability(&self, name: &str, path: &str, hits: &[Hit]) -> Option<Vec<Hop>> {
        let defs = self.text.defs(name);
        let mut own = defs
            .iter()
            .filter(|&&(file, _)| self.text.files[file].path == path);
        let &(own_file, offset) = own.next()?;
        if own.next().is_some() {
            return None;
        }
        let parsed = self.code.module(&Code::module_of_file(path)?)?;
        let src = &parsed.src[..];
        let (class_name, &class_range) = parsed.defs.iter().find(|&(_, &(start, end))| {
            start <= offset && offset < end && class_header(&src[start..end]).is_some()
        })?;
        // The method must stand directly in the class's body: one of its statements, at
        // that statement's own indentation (past its decorators).
        let parts = parsed.split(class_range)?;
        let &(statement, statement_end) = parts[1..]
            .iter()
            .find(|&&(start, end)| start <= offset && offset < end)?;
        let first = statement
            + src[statement..]
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
        if line_indent(src, offset) != line_indent(src, first) {
            return None;
        }
        // A check, not a method whose value merely carries the gate along (a `forward`
        // returning a tensor a gated helper computed): every `return` gives a truth value.
        let tree = parsed.parse(&[parts[0], (statement, statement_end)]);
        let method = tree
            .root_node()
            .descendant_for_byte_range(offset, offset + 1)
            .and_then(|n| {
                std::iter::successors(Some(n), |n| n.parent())
                    .find(|n| n.kind() == "function_definition")
            })?;
        if !returns_truth_values(method) {
            return None;
        }
        // The class and its subclasses in the same module that do not answer the check
        // themselves (a mixin holding the check, combined with the base in each subclass:
        // `class TrtLlmFp8ExpertsModular(TrtLlmFp8ExpertsBase, mk.FusedMoEExpertsModular)`).
        let mut members: Vec<(String, (usize, usize))> = vec![(class_name.clone(), class_range)];
        let mut by_start: Vec<(&String, &(usize, usize))> = parsed.defs.iter().collect();
        by_start.sort_by_key(|(_, range)| range.0);
        let mut grew = true;
        while grew {
            grew = false;
            for &(sub, &range) in &by_start {
                let text = &src[range.0..range.1];
                let Some(bases) = class_header(text) else {
                    continue;
                };
                let names_member = bases.iter().any(|b| {
                    let last = b.rsplit('.').next().unwrap_or(b);
                    members.iter().any(|(m, _)| m == last)
                });
                let redefines = memchr::memmem::find(text, format!("def {name}(").as_bytes());
                if names_member && redefines.is_none() && members.iter().all(|(m, _)| m != sub) {
                    members.push((sub.clone(), range));
                    grew = true;
                }
            }
        }
        let (base_path, base_line) = hits.iter().find_map(|hit| {
            let file = &self.text.files[hit.file];
            let before = &file.src[..hit.start];
            let receiver = [&b"cls."[..], b"self."].iter().any(|r| {
                before.ends_with(r)
                    && !before[..before.len() - r.len()]
                        .last()
                        .is_some_and(|b| is_word_byte(*b) || *b == b'.')
            });
            let called = file.src[hit.end..]
                .iter()
                .find(|b| **b != b' ')
                .is_some_and(|b| *b == b'(');
            let base_defines = defs.iter().any(|&(f, _)| f == hit.file);
            (hit.file != own_file
                && receiver
                && called
                && base_defines
                && members
                    .iter()
                    .any(|(_, range)| self.derives_from(path, range.0, &file.path, hit.start)))
            .then(|| (file.path.as_str(), line_of(&file.src, hit.start)))
        })?;
        let mut read = ClassRead::default();
        for (member, _) in &members {
            let whose = if member == class_name {
                format!("a method of the class that {name}() admits")
            } else {
                format!("a method of a subclass of {class_name}, whose {name}() admits it")
            };
            let why = format!("{whose} (its base asks cls.{name}() at {base_path}:{base_line})");
            self.read_class(&parsed, member, name, &why, &mut read);
        }
        read.own.push(name.to_string());
        let mut hops = Vec::new();
        // The queue is popped from its end: the first class's methods first.
        read.queue.reverse();
        while let Some(method) = read.queue.pop() {
            let ClassMethod {
                defining,
                class,
                mut found,
                what,
            } = method;
            // Calls through `self.`/`cls.` run a method of the classes read whole (a hop of
            // its own) or, where they have none of that name, the nearest base's; `super().`
            // the nearest base's of the class whose method makes the call. Each inherited
            // method is read once.
            let through: Vec<(String, bool, String)> = found
                .calls
                .iter()
                .filter_map(|call| {
                    // `cls(...)` makes an instance: it runs `__init__`.
                    if call == "cls" {
                        return Some((call.clone(), false, "__init__".to_string()));
                    }
                    let (rest, from_super) = match call.strip_prefix("super().") {
                        Some(rest) => (rest, true),
                        None => (
                            call.strip_prefix("self.")
                                .or_else(|| call.strip_prefix("cls."))?,
                            false,
                        ),
                    };
                    rest.bytes()
                        .all(is_word_byte)
                        .then(|| (call.clone(), from_super, rest.to_string()))
                })
                .collect();
            for (call, from_super, method) in through {
                if !from_super && read.own.contains(&method) {
                    found.calls.retain(|c| *c != call);
                    continue;
                }
                // From the calling method's class; for `self.`, also from the subclasses read
                // whole (a mixin's method calling what the class combining it inherits).
                let subclasses = members
                    .iter()
                    .filter(|_| !from_super)
                    .map(|(member, _)| (&parsed, member.as_str()));
                let found_in = std::iter::once((&defining, class.as_str()))
                    .chain(subclasses)
                    .find_map(|(module, from)| self.inherited_method(module, from, &method));
                let Some((module, base, line, body)) = found_in else {
                    continue;
                };
                found.calls.retain(|c| *c != call);
                if read.methods.contains(&(module.module.clone(), line)) {
                    continue;
                }
                read.methods.push((module.module.clone(), line));
                let file = file_of_module(&module);
                read.queue.push(ClassMethod {
                    defining: module,
                    class: base,
                    found: body,
                    what: format!("{what}: {call}() reads {file}:{line}"),
                });
            }
            if !found.calls.iter().any(|c| c.starts_with("super().")) {
                found.calls.retain(|c| c != "super");
            }
            let file = file_of_module(&defining);
            let place = Place {
                parsed: &defining,
                path: &file,
                gate: false,
            };
            self.push_code(&place, found, what, Vec::new(), &mut hops);
        }
        (!hops.is_empty()).then_some(hops)
    }

    /// Queues the methods of top-level class `class` of `module` but `skip` (the check
    /// itself), each described as `why`.
    fn read_class(
        &self,
        module: &Arc<Parsed>,
        class: &str,
        skip: &str,
        why: &str,
        read: &mut ClassRead,
    ) {
        let Some(&range) = module.defs.get(class) else {
            return;
        };
        let src = &module.src[..];
        let path = file_of_module(module);
        let tree = module.parse(&[range]);
        let Some(node) = tree.root_node().named_child(0).and_then(undecorated) else {
            return;
        };
        let Some(body) = node.child_by_field_name("body") else {
            return;
        };
        let mut cursor = body.walk();
        let methods = body
            .named_children(&mut cursor)
            .filter_map(undecorated)
            .filter(|f| f.kind() == "function_definition");
        for method in methods {
            let (Some(method_name), Some(method_body)) = (
                method.child_by_field_name("name"),
                method.child_by_field_name("body"),
            ) else {
                continue;
            };
            let method_name = text(method_name, src);
            if method_name == skip {
                continue;
            }
            read.own.push(method_name.to_string());
            read.queue.push(ClassMethod {
                defining: module.clone(),
                class: class.to_string(),
                found: facts(method_body, src),
                what: format!(
                    "{path}:{} {class}.{method_name}, {why}",
                    method.start_position().row + 1
                ),
            });
        }
    }

    /// Method `method` as the nearest base of top-level class `class` (in `parsed`) defines
    /// it: that base's module and name, the method's line and the facts of its body. What
    /// `super().<method>()` calls there, or `self.<method>()` where the class has none.
    fn inherited_method(
        &self,
        parsed: &Arc<Parsed>,
        class: &str,
        method: &str,
    ) -> Option<(Arc<Parsed>, String, usize, Facts)> {
        let mut todo: std::collections::VecDeque<(Arc<Parsed>, String, usize)> =
            std::collections::VecDeque::from([(parsed.clone(), class.to_string(), 0)]);
        while let Some((module, name, depth)) = todo.pop_front() {
            let &(start, end) = module.defs.get(&name)?;
            if depth > 0 {
                let tree = module.parse(&[(start, end)]);
                let class_node = tree.root_node().named_child(0).and_then(undecorated);
                let found = class_node
                    .and_then(|c| c.child_by_field_name("body"))
                    .and_then(|body| {
                        let mut cursor = body.walk();
                        body.named_children(&mut cursor)
                            .filter_map(undecorated)
                            .find(|n| {
                                n.kind() == "function_definition"
                                    && n.child_by_field_name("name")
                                        .is_some_and(|m| text(m, &module.src) == method)
                            })
                    })
                    .and_then(|f| {
                        Some((
                            f.start_position().row + 1,
                            facts(f.child_by_field_name("body")?, &module.src),
                        ))
                    });
                if let Some((line, found)) = found {
                    return Some((module.clone(), name, line, found));
                }
            }
            if depth > 6 {
                continue;
            }
            for expression in class_header(&module.src[start..end]).unwrap_or_default() {
                if let Some((defining, base)) = self.class_named(&module, &expression) {
                    todo.push_back((defining, base, depth + 1));
                }
            }
        }
        None
    }

    /// Whether the top-level class holding byte `offset` of file `path` derives (through the
    /// bases its module names, as far as imports resolve them) from the top-level class
    /// holding byte `at` of file `base_path`.
    fn derives_from(&self, path: &str, offset: usize, base_path: &str, at: usize) -> bool {
        let class_at = |module: &str, byte: usize| -> Option<(Arc<Parsed>, String)> {
            let parsed = self.code.module(module)?;
            let name = parsed
                .defs
                .iter()
                .find(|&(_, &(start, end))| {
                    start <= byte && byte < end && class_header(&parsed.src[start..end]).is_some()
                })
                .map(|(name, _)| name.clone())?;
            Some((parsed, name))
        };
        let (Some(module), Some(base_module)) =
            (Code::module_of_file(path), Code::module_of_file(base_path))
        else {
            return false;
        };
        let (Some(start), Some((_, base))) =
            (class_at(&module, offset), class_at(&base_module, at))
        else {
            return false;
        };
        let mut seen: Vec<(String, String)> = Vec::new();
        let mut todo = vec![(start.0, start.1, 0)];
        while let Some((parsed, name, depth)) = todo.pop() {
            if parsed.module == base_module && name == base {
                return true;
            }
            let key = (parsed.module.clone(), name.clone());
            if depth > 6 || seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let Some(&(start, end)) = parsed.defs.get(&name) else {
                continue;
            };
            let Some(bases) = class_header(&parsed.src[start..end]) else {
                continue;
            };
            for expression in bases {
                if let Some((defining, class)) = self.class_named(&parsed, &expression) {
                    todo.push((defining, class, depth + 1));
                }
            }
        }
        false
    }

    /// The module and name of the top-level class that `expression` (`Base`, `mk.Base`)
    /// names in `parsed`, through its imports and one re-export.
    fn class_named(&self, parsed: &Arc<Parsed>, expression: &str) -> Option<(Arc<Parsed>, String)> {
        let defines = |module: &Arc<Parsed>, name: &str| {
            module
                .defs
                .get(name)
                .is_some_and(|&(s, e)| class_header(&module.src[s..e]).is_some())
        };
        let in_module = |module: &str, name: &str, hops: usize| {
            let mut module = self.code.module(module)?;
            for _ in 0..=hops {
                if defines(&module, name) {
                    return Some((module, name.to_string()));
                }
                let (from, member) = module.imports().get(name)?.clone();
                if member.as_deref() != Some(name) {
                    return None;
                }
                module = self.code.module(&from)?;
            }
            None
        };
        match expression.split('.').collect::<Vec<_>>().as_slice() {
            [name] if defines(parsed, name) => Some((parsed.clone(), name.to_string())),
            [name] => {
                let (from, member) = parsed.imports().get(*name)?;
                in_module(from, member.as_deref()?, 1)
            }
            [alias, name] => match parsed.imports().get(*alias)? {
                (module, None) => in_module(module, name, 1),
                (from, Some(member)) => in_module(&format!("{from}.{member}"), name, 1),
            },
            _ => None,
        }
    }

    /// Whether a read of attribute `<name>` in another file than the store's is of another
    /// class's attribute: that file stores a `self.<name>` of its own (two kernel classes
    /// each with a `self.supported`, a script's `args.use_pdl` beside its kernel's
    /// `self.use_pdl`), so its reads are taken for its own.
    fn another_class_attribute(&self, name: &str, path: &str, hit: &Hit) -> bool {
        let file = &self.text.files[hit.file];
        if path.is_empty() || file.path == path {
            return false;
        }
        let store = format!("self.{name} =");
        memchr::memmem::find_iter(&file.src, store.as_bytes())
            .any(|at| file.src.get(at + store.len()) != Some(&b'='))
    }

    /// Whether a call of `name` in file `at` calls the definition in `path`. With one
    /// definition on the site, every call does (a method called on any receiver, a function
    /// imported under any route). With several (two modules each with a `_is_blackwell`, two
    /// kernel classes each with an `_ensure_loaded`), a call reads the one in its own file, or
    /// the one its file imports by name; a call in a third file that imports neither is
    /// ambiguous and not taken.
    fn calls_definition(&self, name: &str, path: &str, at: usize) -> bool {
        let defs = self.text.defs(name);
        let file = &self.text.files[at];
        if file.path == path {
            return true;
        }
        if defs.len() <= 1 {
            return true;
        }
        // `defs` is in file order: a name defined thousands of times (`forward`) is
        // bisected, not scanned, for each of its thousands of calls.
        if defs.binary_search_by_key(&at, |&(f, _)| f).is_ok() {
            return false;
        }
        let (Some(origin), Some(here)) = (Code::module_of_file(path), file.module.as_deref())
        else {
            return false;
        };
        // Imported from the defining module, or from a package above it that re-exports it
        // (`from sglang.srt.utils import f` for `sglang/srt/utils/common.py`).
        self.code
            .module(here)
            .and_then(|p| p.imports().get(name).cloned())
            .is_some_and(|(from, member)| {
                member.as_deref() == Some(name)
                    && (from == origin
                        || origin
                            .strip_prefix(from.as_str())
                            .is_some_and(|rest| rest.starts_with('.')))
            })
    }

    /// `last` is the parse of the previous read: reads come in file order, and the reads in
    /// one function share its parse (a third of what the flag flow parsed was such repeats).
    fn read_at(
        &self,
        place: &Place,
        hit: Hit,
        key: &FlagKey,
        last: &mut Option<LastParse>,
        out: &mut Vec<Hop>,
    ) {
        let (start, end) = (hit.start, hit.end);
        let ranges = enclosing_ranges_with(place.parsed, start, true);
        let ranges = [ranges.around, ranges.after].concat();
        let tree = match last.take() {
            Some(kept) if kept.file == hit.file && kept.ranges == ranges => kept.tree,
            _ => place.parsed.parse(&ranges),
        };
        let tree = &last
            .insert(LastParse {
                file: hit.file,
                ranges,
                tree,
            })
            .tree;
        let Some(mut node) = tree.root_node().descendant_for_byte_range(start, end) else {
            return;
        };
        if matches!(node.kind(), "comment") {
            return;
        }
        if node.kind() == "string_content" {
            match node.parent() {
                Some(string) if matches!(key, FlagKey::Env(_)) => node = string,
                _ => return,
            }
        } else if matches!(key, FlagKey::Env(_)) && node.kind() == "string" {
        } else if node.kind() != "identifier" {
            return;
        }
        if let Some(parent) = node.parent()
            && parent.kind() == "attribute"
            && field_is(parent, "attribute", node)
        {
            node = parent;
        }
        if let FlagKey::Exit { name, .. } = key {
            self.after_exit_call(place, node, name, out);
            return;
        }
        self.walk(place, node, true, matches!(key, FlagKey::Env(_)), 0, out);
    }

    /// A call of a function that raises where the gate holds. Called as a statement (a
    /// check: `check_arch(x)`), the caller goes on past it only where it passes, so the code
    /// after it is what the gate protects. Where the call's value is used (`out =
    /// run_fmha(...)`, `return run_fmha(...)`), the function does the work itself: what the
    /// gate protects is its own code, and the value is its result, not the gate's (following
    /// it reached the next kernel the caller happened to run).
    fn after_exit_call(&self, place: &Place, callee: Node, name: &str, out: &mut Vec<Hop>) {
        let src = &place.parsed.src;
        let line = callee.start_position().row + 1;
        let call = callee.parent().filter(|p| p.kind() == "call");
        let statement = call
            .and_then(|c| c.parent())
            .filter(|p| p.kind() == "expression_statement");
        let Some(statement) = statement else {
            out.push(Hop::Stop(format!(
                "{}:{line} uses the result of {name}(), which raises where the gate holds: its own code is what the gate guards, not the code after the call",
                place.path
            )));
            return;
        };
        let guards = self.enclosing_guards(place, statement);
        self.push_code(
            place,
            code_after_statement(statement, src),
            format!(
                "{}:{line} calls {name}(); followed the code after it",
                place.path
            ),
            guards,
            out,
        );
    }

    /// Follows a value up to what uses it.
    fn walk(
        &self,
        place: &Place,
        start: Node,
        positive: bool,
        env: bool,
        depth: usize,
        out: &mut Vec<Hop>,
    ) {
        let src = &place.parsed.src;
        let mut node = start;
        let mut positive = positive;
        // The read as a literal (the flag, or its negation once `positive` flips) against the
        // expression reached so far: whether the literal implies it, and whether it implies
        // the literal. Joined by `and` with a condition that is no gate (`backend == "x"`),
        // the literal no longer implies the whole; by `or`, the whole no longer implies it.
        let mut implies = true;
        let mut implied = true;
        let line = |n: Node| n.start_position().row + 1;
        loop {
            let Some(parent) = node.parent() else {
                return;
            };
            match parent.kind() {
                "parenthesized_expression" => {}
                "boolean_operator" => {
                    let free = (0..parent.named_child_count())
                        .filter_map(|i| parent.named_child(i as u32))
                        .filter(|c| c.id() != node.id())
                        .any(|c| !self.is_gate_expression(place, c));
                    match parent.child_by_field_name("operator").map(|o| o.kind()) {
                        Some("and") if free => implies = false,
                        Some("or") if free => implied = false,
                        _ => {}
                    }
                }
                "not_operator" => {
                    positive = !positive;
                    std::mem::swap(&mut implies, &mut implied);
                }
                "call" if field_is(parent, "function", node) => {}
                // `envs.X.get()`, `envs.X.value`
                "attribute"
                    if field_is(parent, "object", node)
                        && parent
                            .child_by_field_name("attribute")
                            .is_some_and(|a| matches!(text(a, src), "get" | "value")) => {}
                "argument_list" if env => {
                    let Some(call) = parent.parent() else { return };
                    let function = call
                        .child_by_field_name("function")
                        .map_or("", |f| text(f, src))
                        .to_ascii_lowercase();
                    let first = parent.named_child(0).map(|c| c.id()) == Some(node.id());
                    if !(first && function.contains("env")) {
                        out.push(Hop::Stop(format!(
                            "{}:{} the variable is passed to {function}()",
                            place.path,
                            line(parent)
                        )));
                        return;
                    }
                    node = call;
                    continue;
                }
                "subscript" if env => {}
                "comparison_operator" if env => {
                    let words: Vec<String> = (0..parent.named_child_count())
                        .filter_map(|i| parent.named_child(i as u32))
                        .filter(|c| c.id() != node.id())
                        .filter_map(|c| plain_word(c, src))
                        .collect();
                    let op = parent
                        .child_by_field_name("operators")
                        .map_or("", |o| text(o, src));
                    let truthy = words.iter().any(|w| {
                        matches!(w.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
                    });
                    let falsy = words.iter().any(|w| {
                        matches!(
                            w.to_ascii_lowercase().as_str(),
                            "0" | "false" | "no" | "off"
                        )
                    });
                    let negated_op = matches!(op, "!=" | "not in" | "is not");
                    match (truthy, falsy) {
                        (true, false) => positive ^= negated_op,
                        (false, true) => positive ^= !negated_op,
                        _ => {
                            out.push(Hop::Stop(format!(
                                "{}:{} the variable is compared with a value gatefix does not read as true or false",
                                place.path,
                                line(parent)
                            )));
                            return;
                        }
                    }
                }
                "if_statement" | "elif_clause" | "while_statement"
                    if field_is(parent, "condition", node) =>
                {
                    let read = Read {
                        node: start,
                        positive,
                        decides: if positive { implied } else { implies },
                    };
                    self.branch(place, parent, node, read, out);
                    return;
                }
                // `assert flag` (or `assert arch in (100, 103)`, the gate itself): an error exit
                // where it fails, so the code after it runs only where it holds, as after
                // `if not flag: raise`.
                "assert_statement" if parent.named_child(0).map(|c| c.id()) == Some(node.id()) => {
                    self.asserted(place, parent, positive, implied, out);
                    return;
                }
                "conditional_expression"
                    if parent.named_child(1).map(|c| c.id()) == Some(node.id()) =>
                {
                    let decides = if positive { implied } else { implies };
                    if !decides {
                        out.push(Hop::Stop(format!(
                            "{}:{} picks a value on it only together with conditions that are no gate; that value is picked where the gate does not hold as well",
                            place.path,
                            line(parent)
                        )));
                        return;
                    }
                    let Some(picked) = parent.named_child(if positive { 0 } else { 2 }) else {
                        return;
                    };
                    let mut guards = self.condition_guards(place, node, Some(start));
                    guards.extend(self.enclosing_guards(place, parent));
                    self.code_hop(
                        place,
                        picked,
                        format!(
                            "{}:{} picks this value when it holds",
                            place.path,
                            line(parent)
                        ),
                        guards,
                        out,
                    );
                    return;
                }
                "assignment" if field_is(parent, "right", node) => {
                    self.assigned(place, parent, positive, env, depth, out);
                    return;
                }
                // A predicate helper returns the gate: the code its calls decide is what the
                // gate decides, so its calls are followed like a flag's reads. Only where the
                // value returned holds just when the gate does (`return a and x` with `x` no
                // gate also fails where the gate holds: its callers' code is not all the gate's).
                "return_statement"
                    if place.gate && depth == 0 && !(if positive { implied } else { implies }) =>
                {
                    out.push(Hop::Stop(format!(
                        "{}:{} a helper returns the gate only together with conditions that are no gate",
                        place.path,
                        line(parent)
                    )));
                    return;
                }
                "return_statement" => {
                    if !positive {
                        out.push(Hop::Stop(format!(
                            "{}:{} returns the flag's negation",
                            place.path,
                            line(parent)
                        )));
                        return;
                    }
                    match enclosing_function(parent) {
                        Some((name, _)) => out.push(Hop::Flag {
                            key: FlagKey::Func {
                                name: text(name, src).to_string(),
                                path: place.path.to_string(),
                            },
                            what: format!(
                                "{}:{} {}() returns it",
                                place.path,
                                line(parent),
                                text(name, src)
                            ),
                            guards: self.enclosing_guards(place, parent),
                        }),
                        None => out.push(Hop::Stop(format!(
                            "{}:{} a return outside a function",
                            place.path,
                            line(parent)
                        ))),
                    }
                    return;
                }
                // `check(x)` as a statement: a check that raises unless the flag holds; the
                // code after it runs only then.
                "expression_statement" if node.kind() == "call" && positive => {
                    let after = code_after_statement(parent, src);
                    let guards = self.enclosing_guards(place, parent);
                    self.push_code(
                        place,
                        after,
                        format!(
                            "{}:{} calls the check; followed the code after it",
                            place.path,
                            line(parent)
                        ),
                        guards,
                        out,
                    );
                    return;
                }
                // `run(x, fast=flag)`: the call it is passed to is what it configures.
                "argument_list" | "keyword_argument" if let Some(call) = enclosing_call(parent) => {
                    let function = call
                        .child_by_field_name("function")
                        .map_or("", |f| text(f, src));
                    let guards = self.enclosing_guards(place, call);
                    self.code_hop(
                        place,
                        call,
                        format!(
                            "{}:{} is passed to {function}(); followed that call",
                            place.path,
                            line(parent)
                        ),
                        guards,
                        out,
                    );
                    return;
                }
                kind => {
                    let why = match kind {
                        "argument_list" | "keyword_argument" => "passed as an argument",
                        "assert_statement" => "asserted",
                        "expression_statement" => "evaluated as a statement",
                        "comparison_operator" => "compared with a value",
                        _ => "used in an expression gatefix does not follow",
                    };
                    out.push(Hop::Stop(format!(
                        "{}:{} the value is {why}",
                        place.path,
                        line(parent)
                    )));
                    return;
                }
            }
            node = parent;
        }
    }

    /// An `assert` whose test holds the read: the code after it runs only where the test
    /// holds, so where the test implies the flag, that code is what the flag decides; an
    /// `assert` standing in a function's body also makes the function a check its callers
    /// pass only where the flag holds (`FlagKey::Exit`), as `if not flag: raise` does.
    fn asserted(
        &self,
        place: &Place,
        statement: Node,
        positive: bool,
        implied: bool,
        out: &mut Vec<Hop>,
    ) {
        let src = &place.parsed.src;
        let line = statement.start_position().row + 1;
        if !positive {
            out.push(Hop::Stop(format!(
                "{}:{line} only its negation is asserted",
                place.path
            )));
            return;
        }
        if !implied {
            out.push(Hop::Stop(format!(
                "{}:{line} is asserted only together with conditions that are no gate; the code after runs where the gate does not hold as well",
                place.path
            )));
            return;
        }
        let after = code_after_statement(statement, src);
        if !(after.calls.is_empty() && after.strings.is_empty() && after.stores.is_empty()) {
            self.push_code(
                place,
                after,
                format!("{}:{line} asserts it; followed the code after", place.path),
                self.enclosing_guards(place, statement),
                out,
            );
        }
        self.push_check_exit(place, statement, out);
    }

    /// A statement standing in a function's own body that raises unless the flag holds (not
    /// one nested under another condition: `if backend == "x": if not flag: raise` does not
    /// make the function a check): the function is a check, and the code after each of its
    /// calls runs only where the flag holds (`FlagKey::Exit`).
    fn push_check_exit(&self, place: &Place, statement: Node, out: &mut Vec<Hop>) {
        let src = &place.parsed.src;
        let in_body = statement
            .parent()
            .filter(|block| block.kind() == "block")
            .and_then(|block| block.parent())
            .is_some_and(|f| f.kind() == "function_definition");
        let Some((name, _)) = enclosing_function(statement).filter(|_| in_body) else {
            return;
        };
        out.push(Hop::Flag {
            key: FlagKey::Exit {
                name: text(name, src).to_string(),
                path: place.path.to_string(),
            },
            what: format!(
                "{}:{} {}() raises unless it holds",
                place.path,
                statement.start_position().row + 1,
                text(name, src)
            ),
            guards: self.enclosing_guards(place, statement),
        });
    }

    /// The branch an `if`/`elif`/`while` condition guards, by the polarity of the flag in it.
    fn branch(
        &self,
        place: &Place,
        statement: Node,
        condition: Node,
        read: Read,
        out: &mut Vec<Hop>,
    ) {
        let Read {
            node: read,
            positive,
            decides,
        } = read;
        let src = &place.parsed.src;
        let line = statement.start_position().row + 1;
        // `if backend == "x" and not flag: raise`: the code after (or the else branch) runs
        // where the flag holds, but also wherever `backend != "x"`, gate or no gate; `if flag
        // or forced:` runs its branch wherever `forced` holds. Neither is what the gate
        // decides. The search goes on at the flag's other reads.
        if !decides {
            out.push(Hop::Stop(format!(
                "{}:{line} branches on it only together with conditions that are no gate; that code runs where the gate does not hold as well",
                place.path
            )));
            return;
        }
        let consequence = statement
            .child_by_field_name("consequence")
            .or_else(|| statement.child_by_field_name("body"));
        let Some(consequence) = consequence else {
            return;
        };
        if positive {
            let mut guards = self.condition_guards(place, condition, Some(read));
            guards.extend(self.enclosing_guards(place, statement));
            self.code_hop(
                place,
                consequence,
                format!("{}:{line} its branch runs when it holds", place.path),
                guards,
                out,
            );
            return;
        }
        if !(ends_with_raise(consequence) || starts_with_return(consequence)) {
            // `if not flag: A else: B`: B runs when it holds.
            if let Some(alternative) = statement.child_by_field_name("alternative")
                && alternative.kind() == "else_clause"
                && let Some(body) = alternative.child_by_field_name("body")
            {
                self.code_hop(
                    place,
                    body,
                    format!("{}:{line} its else branch runs when it holds", place.path),
                    self.enclosing_guards(place, statement),
                    out,
                );
            } else {
                out.push(Hop::Stop(format!(
                    "{}:{line} only its negation guards a branch",
                    place.path
                )));
            }
            return;
        }
        // `if not flag: return False`: the code after runs when it holds.
        let guarded = if statement.kind() == "elif_clause" {
            statement.parent()
        } else {
            Some(statement)
        };
        let Some(guarded) = guarded else { return };
        if let Some(after) = raise_guarded(guarded, src) {
            let after = Facts {
                raises: false,
                ..after
            };
            if !(after.calls.is_empty() && after.strings.is_empty() && after.stores.is_empty()) {
                self.push_code(
                    place,
                    after,
                    format!(
                        "{}:{line} returns early unless it holds; followed the code after",
                        place.path
                    ),
                    self.enclosing_guards(place, statement),
                    out,
                );
            }
        }
        // `if not self.supported: raise ...` in a check its callers call first: the code
        // after each call runs only where the flag holds, as after a gate's own raise.
        if statement.kind() == "if_statement" && ends_with_raise(consequence) {
            self.push_check_exit(place, statement, out);
        }
        let mut next = guarded.next_named_sibling();
        while let Some(sibling) = next {
            if sibling.kind() == "return_statement"
                && sibling
                    .named_child(0)
                    .is_some_and(|v| !matches!(v.kind(), "none" | "false"))
            {
                if let Some((name, _)) = enclosing_function(sibling) {
                    out.push(Hop::Flag {
                        key: FlagKey::Func {
                            name: text(name, src).to_string(),
                            path: place.path.to_string(),
                        },
                        what: format!(
                            "{}:{line} {}() returns early unless it holds, then returns a value",
                            place.path,
                            text(name, src)
                        ),
                        guards: self.enclosing_guards(place, statement),
                    });
                }
                break;
            }
            next = sibling.next_named_sibling();
        }
    }

    fn assigned(
        &self,
        place: &Place,
        assignment: Node,
        positive: bool,
        env: bool,
        depth: usize,
        out: &mut Vec<Hop>,
    ) {
        let src = &place.parsed.src;
        let line = assignment.start_position().row + 1;
        let Some(left) = assignment.child_by_field_name("left") else {
            return;
        };
        if !positive {
            out.push(Hop::Stop(format!(
                "{}:{line} stores the flag's negation",
                place.path
            )));
            return;
        }
        match left.kind() {
            "attribute" => {
                let Some(attribute) = left.child_by_field_name("attribute") else {
                    return;
                };
                out.push(Hop::Flag {
                    key: FlagKey::Attr {
                        name: text(attribute, src).to_string(),
                        path: place.path.to_string(),
                    },
                    what: format!("{}:{line} stores it in {}", place.path, text(left, src)),
                    guards: self.enclosing_guards(place, assignment),
                });
            }
            "identifier" => {
                let name = text(left, src);
                match enclosing_function(assignment) {
                    None => out.push(Hop::Flag {
                        key: FlagKey::Global {
                            module: place.parsed.module.clone(),
                            name: name.to_string(),
                        },
                        what: format!("{}:{line} stores it in the global {name}", place.path),
                        guards: self.enclosing_guards(place, assignment),
                    }),
                    Some((_, function)) => {
                        if depth >= MAX_LOCAL_DEPTH {
                            out.push(Hop::Stop(format!(
                                "{}:{line} the local {name} is past {MAX_LOCAL_DEPTH} local hops",
                                place.path
                            )));
                            return;
                        }
                        let uses = identifier_uses(function, name, assignment.end_byte(), src);
                        if uses.is_empty() {
                            out.push(Hop::Stop(format!(
                                "{}:{line} the local {name} is not read after",
                                place.path
                            )));
                        }
                        for used in uses.into_iter().take(MAX_LOCAL_USES) {
                            let mut found = Vec::new();
                            self.walk(place, used, true, env, depth + 1, &mut found);
                            for hop in found {
                                out.push(prefix(
                                    hop,
                                    &format!("{}:{line} stores it in the local {name}", place.path),
                                ));
                            }
                        }
                    }
                }
            }
            _ => out.push(Hop::Stop(format!(
                "{}:{line} the value is unpacked into several names",
                place.path
            ))),
        }
    }

    fn code_hop(
        &self,
        place: &Place,
        node: Node,
        what: String,
        guards: Vec<Guard>,
        out: &mut Vec<Hop>,
    ) {
        let found = facts(node, &place.parsed.src);
        self.push_code(place, found, what, guards, out);
    }

    fn push_code(
        &self,
        place: &Place,
        mut found: Facts,
        what: String,
        guards: Vec<Guard>,
        out: &mut Vec<Hop>,
    ) {
        for store in &mut found.stores {
            match &mut store.key {
                FlagKey::Global { module, .. } if module.is_empty() => {
                    *module = place.parsed.module.clone();
                }
                FlagKey::Attr { path, .. } if path.is_empty() => *path = place.path.to_string(),
                _ => {}
            }
        }
        out.push(Hop::Code {
            module: place.parsed.module.clone(),
            facts: Box::new(found),
            what,
            guards,
        });
    }

    /// The gates inside a condition that the path needs: those joined to the condition's
    /// root by `and` (and `not`, which flips them), the flag's own read excepted.
    fn condition_guards(&self, place: &Place, condition: Node, except: Option<Node>) -> Vec<Guard> {
        let Some(indices) = self.gates_by_file.get(place.path) else {
            return Vec::new();
        };
        let first = condition.start_position().row as u32 + 1;
        let last = condition.end_position().row as u32 + 1;
        let mut guards = Vec::new();
        for &index in indices {
            let gate = &self.gates[index];
            if gate.line < first || gate.line > last {
                continue;
            }
            let Some((start, end)) = place.parsed.gate_bytes(gate) else {
                continue;
            };
            if start < condition.start_byte() || end > condition.end_byte() {
                continue;
            }
            if except.is_some_and(|e| e.start_byte() <= start && end <= e.end_byte()) {
                continue;
            }
            let holds_read = except.is_some_and(|e| start <= e.start_byte() && e.end_byte() <= end);
            let Some(mut node) = condition.descendant_for_byte_range(start, end) else {
                continue;
            };
            while let Some(parent) = node.parent() {
                if parent.byte_range() != node.byte_range() || node.id() == condition.id() {
                    break;
                }
                node = parent;
            }
            if let Some(negated) = conjunct_polarity(node, condition) {
                guards.push(Guard {
                    gate: index,
                    negated,
                    holds_read,
                });
            }
        }
        guards
    }

    /// Whether `node`, under `not`s and parentheses, is a gate of the scan: a test whose
    /// value the device decides, as opposed to a configuration (`backend == "x"`).
    fn is_gate_expression(&self, place: &Place, node: Node) -> bool {
        let mut node = node;
        while matches!(node.kind(), "not_operator" | "parenthesized_expression") {
            let inner = match node.kind() {
                "not_operator" => node.child_by_field_name("argument"),
                _ => node.named_child(0),
            };
            let Some(inner) = inner else { break };
            node = inner;
        }
        let Some(indices) = self.gates_by_file.get(place.path) else {
            return false;
        };
        indices.iter().any(|&index| {
            place
                .parsed
                .gate_bytes(&self.gates[index])
                .is_some_and(|(start, end)| start == node.start_byte() && end == node.end_byte())
        })
    }

    /// The gates of the `if` statements whose branch holds `node`.
    fn enclosing_guards(&self, place: &Place, node: Node) -> Vec<Guard> {
        let mut guards = Vec::new();
        let mut child = node;
        while let Some(parent) = child.parent() {
            if matches!(parent.kind(), "if_statement" | "elif_clause")
                && parent
                    .child_by_field_name("consequence")
                    .is_some_and(|c| c.id() == child.id())
                && let Some(condition) = parent.child_by_field_name("condition")
            {
                guards.extend(self.condition_guards(place, condition, None));
            }
            if parent.kind() == "function_definition" {
                break;
            }
            child = parent;
        }
        guards
    }
}

/// The node at `start..end`, parsed with the statement that holds it, the headers around it
/// and the code after it: the gates of one function share that parse (`FileCache`).
fn node_with_context<'c>(
    parsed: &Parsed,
    start: usize,
    end: usize,
    cache: &'c mut FileCache,
) -> Option<Node<'c>> {
    let ranges = enclosing_ranges_with(parsed, start, true);
    let tree = cache.tree(&parsed.src, [ranges.around, ranges.after].concat());
    tree.root_node().descendant_for_byte_range(start, end)
}

/// The pieces of a file parsed for the last read of a flag, and their tree (`read_at`).
struct LastParse {
    file: usize,
    ranges: Vec<(usize, usize)>,
    tree: Tree,
}

/// Prepends a hop's place to what it says.
fn prefix(hop: Hop, before: &str) -> Hop {
    match hop {
        Hop::Code {
            module,
            facts,
            what,
            guards,
        } => Hop::Code {
            module,
            facts,
            what: format!("{before} -> {what}"),
            guards,
        },
        Hop::Flag { key, what, guards } => Hop::Flag {
            key,
            what: format!("{before} -> {what}"),
            guards,
        },
        Hop::Stop(why) => Hop::Stop(why),
    }
}

/// `os.environ["X"] = ...` after the name: a store, not a read.
fn env_store(rest: &[u8]) -> bool {
    let rest = rest.get(1..).unwrap_or(&[]).trim_ascii_start();
    let Some(rest) = rest.strip_prefix(b"]") else {
        return false;
    };
    let rest = rest.trim_ascii_start();
    rest.starts_with(b"=") && !rest.starts_with(b"==")
}

fn starts_with_return(branch: Node) -> bool {
    let mut cursor = branch.walk();
    branch
        .named_children(&mut cursor)
        .find(|n| n.kind() != "comment")
        .is_some_and(|n| n.kind() == "return_statement")
}

/// The bases of a class statement (`class X(A, mod.B, metaclass=M):` gives `A`, `mod.B`),
/// or `None` where the statement is no class. Read from the header's text: a base is a
/// dotted name; keyword arguments and anything else are left out.
fn class_header(statement: &[u8]) -> Option<Vec<String>> {
    // Past the decorators (one line each): the class's own header.
    let mut at = 0;
    loop {
        let line_end = memchr::memchr(b'\n', &statement[at..]).map_or(statement.len(), |i| at + i);
        if !statement[at..line_end].trim_ascii_start().starts_with(b"@") {
            break;
        }
        at = (line_end + 1).min(statement.len());
    }
    at += statement[at..]
        .iter()
        .take_while(|b| b.is_ascii_whitespace())
        .count();
    let rest = statement[at..].strip_prefix(b"class ")?;
    let open = rest.iter().position(|b| matches!(b, b'(' | b':'))?;
    if rest[open] == b':' {
        return Some(Vec::new());
    }
    // The bases may span lines: read on to the closing parenthesis.
    let from = at + b"class ".len() + open + 1;
    let mut depth = 1;
    let end = statement[from..].iter().position(|b| {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            _ => {}
        }
        depth == 0
    })?;
    let inside = std::str::from_utf8(&statement[from..from + end]).ok()?;
    Some(
        inside
            .split(',')
            .map(str::trim)
            .filter(|b| {
                !b.is_empty()
                    && b.split('.')
                        .all(|p| !p.is_empty() && p.bytes().all(is_word_byte))
            })
            .map(str::to_string)
            .collect(),
    )
}

/// Whether a function returns, at each of its own `return`s (not those of functions
/// defined inside it), a comparison, a boolean operation, a negation, `True` or `False`,
/// and has at least one.
fn returns_truth_values(function: Node) -> bool {
    let Some(body) = function.child_by_field_name("body") else {
        return false;
    };
    let mut stack = vec![body];
    let mut returns = 0;
    while let Some(node) = stack.pop() {
        match node.kind() {
            "function_definition" | "class_definition" | "lambda" => continue,
            "return_statement" => {
                let mut value = node.named_child(0);
                while let Some(inner) = value.filter(|v| v.kind() == "parenthesized_expression") {
                    value = inner.named_child(0);
                }
                let truth = value.is_some_and(|v| {
                    matches!(
                        v.kind(),
                        "comparison_operator"
                            | "boolean_operator"
                            | "not_operator"
                            | "true"
                            | "false"
                    )
                });
                if !truth {
                    return false;
                }
                returns += 1;
                continue;
            }
            _ => {}
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    returns > 0
}

/// The name and node of the function around a node.
fn enclosing_function(node: Node) -> Option<(Node, Node)> {
    let mut up = node.parent();
    while let Some(n) = up {
        match n.kind() {
            "function_definition" => return Some((n.child_by_field_name("name")?, n)),
            "class_definition" | "lambda" => return None,
            _ => up = n.parent(),
        }
    }
    None
}

/// Identifiers named `name` in a function after `from` (uses of a local).
fn identifier_uses<'t>(function: Node<'t>, name: &str, from: usize, src: &[u8]) -> Vec<Node<'t>> {
    let mut uses = Vec::new();
    let mut stack = vec![function];
    while let Some(n) = stack.pop() {
        if n.end_byte() <= from {
            continue;
        }
        if n.kind() == "identifier" && n.start_byte() >= from && text(n, src) == name {
            let is_store = n
                .parent()
                .is_some_and(|p| p.kind() == "assignment" && field_is(p, "left", n));
            let is_attribute = n
                .parent()
                .is_some_and(|p| p.kind() == "attribute" && field_is(p, "attribute", n));
            let is_keyword = n
                .parent()
                .is_some_and(|p| p.kind() == "keyword_argument" && field_is(p, "name", n));
            if !is_store && !is_attribute && !is_keyword {
                uses.push(n);
            }
            continue;
        }
        if matches!(
            n.kind(),
            "function_definition" | "class_definition" | "lambda"
        ) && n.id() != function.id()
        {
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    uses.sort_by_key(|n| n.start_byte());
    uses
}

/// The call whose argument list holds `node` (an `argument_list`, or a keyword argument in
/// one).
fn enclosing_call(node: Node) -> Option<Node> {
    let list = if node.kind() == "keyword_argument" {
        node.parent()?
    } else {
        node
    };
    let call = list.parent()?;
    (list.kind() == "argument_list" && call.kind() == "call").then_some(call)
}

/// A read of a flag where it reaches the condition of a branch.
#[derive(Clone, Copy)]
struct Read<'t> {
    node: Node<'t>,
    /// The condition holds when the flag does (`false`: when it does not).
    positive: bool,
    /// The branch the read picks runs only where the flag holds, whatever else the
    /// condition tests: `if flag and x:` (its branch) and `if not flag or x: raise` (the code
    /// after), not `if flag or x:` nor `if x and not flag: raise`.
    decides: bool,
}

/// Whether `node` is joined to `root` through `and`, parentheses and `not` only; `Some(true)`
/// when an odd number of `not`s flip it.
fn conjunct_polarity(node: Node, root: Node) -> Option<bool> {
    let mut negated = false;
    let mut current = node;
    while current.id() != root.id() {
        let parent = current.parent()?;
        match parent.kind() {
            "parenthesized_expression" => {}
            "not_operator" => negated = !negated,
            "boolean_operator" => {
                let op = parent.child_by_field_name("operator")?;
                if op.kind() != "and" {
                    return None;
                }
            }
            _ => return None,
        }
        current = parent;
    }
    Some(negated)
}

#[cfg(test)]
mod tests {
    use super::{class_header, returns_truth_values};

    /// `returns_truth_values` of the first function in `src`.
    fn truth(src: &str) -> bool {
        let tree = crate::syntax::parse(src.as_bytes());
        let root = tree.root_node();
        let mut cursor = root.walk();
        let function = root
            .named_children(&mut cursor)
            .find(|n| n.kind() == "function_definition")
            .expect("a function");
        returns_truth_values(function)
    }

    #[test]
    fn a_check_returns_truth_values_and_a_forward_does_not() {
        assert!(truth(
            "def f(p):\n    if not p.is_cuda():\n        return False\n    return (\n        p.major == 10 or p.major == 12\n    )\n"
        ));
        assert!(truth("def f(c):\n    return not (c.major < 9)\n"));
        // A value carried along, a name holding it, no return at all.
        assert!(!truth("def forward(self, x):\n    return self.impl(x)\n"));
        assert!(!truth("def f(c):\n    ok = c.major == 10\n    return ok\n"));
        assert!(!truth("def f(c):\n    print(c)\n"));
        // A nested function's returns are its own.
        assert!(!truth(
            "def f(c):\n    def inner():\n        return True\n    return inner\n"
        ));
    }

    fn bases(src: &str) -> Option<Vec<String>> {
        class_header(src.as_bytes())
    }

    #[test]
    fn a_class_header_names_its_dotted_bases() {
        assert_eq!(
            bases("class X(A, mod.B, metaclass=M):\n    pass\n"),
            Some(vec!["A".to_string(), "mod.B".to_string()])
        );
        assert_eq!(
            bases(
                "@dataclass\n@register('x')\nclass X(\n    Base,\n    Generic[T],\n):\n    x = 1\n"
            ),
            Some(vec!["Base".to_string()])
        );
        assert_eq!(bases("class X:\n    pass\n"), Some(Vec::new()));
        assert_eq!(
            bases("    class Nested(Base):\n        pass\n"),
            Some(vec!["Base".to_string()])
        );
        assert_eq!(bases("def f(x):\n    return x\n"), None);
        assert_eq!(bases("classify = 1\n"), None);
        assert_eq!(bases("@decorator\n"), None);
    }
}
