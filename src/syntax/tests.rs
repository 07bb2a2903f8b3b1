use super::*;

fn assert_same_as_tree_sitter(src: &str) {
    let theirs = super::ts::outline_of_text(src.as_bytes()).expect("tree-sitter parses the sample");
    let ours = outline(&parse(src.as_bytes()));
    if theirs != ours {
        let at = theirs
            .iter()
            .zip(&ours)
            .position(|(a, b)| a != b)
            .unwrap_or(theirs.len().min(ours.len()));
        let from = at.saturating_sub(5);
        panic!(
            "differs at line {at}\ntree-sitter:\n{}\nthis tree:\n{}",
            theirs[from..(at + 5).min(theirs.len())].join("\n"),
            ours[from..(at + 5).min(ours.len())].join("\n")
        );
    }
}

#[test]
fn statements_and_expressions_have_tree_sitters_shape() {
    assert_same_as_tree_sitter(
        r#"import a.b as c, d
from .x import (y as z, w)
from . import q
from __future__ import annotations
@d(e=1)  # why
class K(B, metaclass=M):
    def f(self, p: int = 3, /, *a, q=1, **k) -> None:
        '''doc'''
        if p > 2 and not q and r: return x.y[1:2]
        elif p not in (1, 2): pass
        else:
            r = lambda t, *u: t if t else -1
        for i, j in range(3), 4: print(f"{i!r:>3} {j} {{x}}")
        try:
            pass
        except E as e:
            raise X from e
        except (A, B):
            pass
        else:
            pass
        finally:
            del r, s
        with o as v, (p) as (w, z): yield {1: 2, **w}
        with (open(a) as f, open(b) as g,):
            pass
        with (a if b else c):
            pass
        return [i async for i in g() if i]
        # the end of f
    # the end of K's body
x = (1,
 # c
 2)
a, *b = c = d, e
(self.x) = 1
x += 1
y: int = 3
f((x))
f(x for x in y)
a[1, 2]
a[b][::2]
(yield)
global g
assert a, "m"
while not a: break
else: pass
x = a if b else c
w = (n := 3)
s = "a" "b" f"c{d}" 'e\n' b"f"
t = -x ** ~y
u = a is not b
v = {k: v for k, v in z}
v2 = {1, 2}
print(*a, **k)
lambda: 0
"#,
    );
}

#[test]
fn annotations_are_types_as_tree_sitter_reads_them() {
    // `Name[...]` opens a generic type; a union after one continues as types, a union after
    // anything else stays an expression.
    assert_same_as_tree_sitter(
        r#"def f(a: List[int], b: Optional["X"] = None, c: int | None = 1, d: Dict[str, Tuple[int, ...]] = {}, e: a.B[int] = 0, g: Callable[[int], str] = 0) -> list[int]:
    x: tuple[int | None, ...] | int | None = 1
    y: Sequence[str] | frozenset[str] | None = None
    z: int | List[int] = 0
"#,
    );
}

#[test]
fn a_star_binds_as_tree_sitter_binds_it() {
    // In a one-item list and a tuple without parentheses, tree-sitter reads `*a.b` as
    // `(*a).b`; elsewhere as `*(a.b)`.
    assert_same_as_tree_sitter(
        "x = [*a.b]\nx = [1, *a.b]\nx = *a.b, 1\nx = 1, *a[0]\nx = [*a.b, 1]\nf([*a.b()])\nx = (*a.b, 1)\n",
    );
}

#[test]
fn a_block_ends_past_the_comments_indented_into_it() {
    assert_same_as_tree_sitter(
        "def f():\n    if a:\n        return 1  # one\n    # back at f's level\n        # deeper\n# at the top\nx = 1\n",
    );
}

#[test]
fn parentheses_are_found_past_comments_line_breaks_and_continuations() {
    // `paren_span` decides from the text next to an expression when it can (a byte other than
    // `(` before it, other than `)` after it) and asks the tokens otherwise.
    assert_same_as_tree_sitter(
        "y = (x)\ny = ( x )\ny = (  # c\n    x\n)\ny = (\n    x  # c\n)\ny = ( \\\n x)\n\
         f((x), (y, z))\nf(x)\ny = ((a + b) * (c))\ny = [(\n  a\n)]\nif (a) and (\n b\n):\n    pass\n\
         y = x  # (\ny = '(' + x + ')'\ny = f\"({x})\"\n",
    );
}

#[test]
fn match_statements_keep_their_patterns() {
    assert_same_as_tree_sitter(
        "match s:\n    case [1, *r] if r: pass\n    case {\"k\": v}: pass\n    case P(a=1) | None: pass\n    case x.y.z: pass\n    case _: pass\n",
    );
}

/// Compares, for every Python file under `testdata`, this module's tree with tree-sitter's
/// (`compare` gives both outlines, `None` where tree-sitter finds an error). Fails on any
/// difference and when fewer than 100 files could be compared.
fn every_fixture_file(compare: impl Fn(&[u8]) -> Option<(Vec<String>, Vec<String>)>) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut compared = 0;
    let mut differing = Vec::new();
    for entry in walkdir::WalkDir::new(&root).into_iter().flatten() {
        if entry.path().extension().is_none_or(|e| e != "py") {
            continue;
        }
        let src = std::fs::read(entry.path()).unwrap();
        let Some((ours, theirs)) = compare(&src) else {
            continue;
        };
        compared += 1;
        if ours != theirs {
            differing.push(entry.path().display().to_string());
        }
    }
    assert!(compared > 100, "{compared} fixture files");
    assert!(differing.is_empty(), "{differing:#?}");
}

#[test]
fn every_fixture_file_has_tree_sitters_shape() {
    every_fixture_file(|src| {
        let theirs = super::ts::outline_of_text(src)?;
        Some((outline(&parse(src)), theirs))
    });
}

/// tree-sitter's tree of these byte ranges only (its included ranges), outlined.
fn tree_sitter_ranges_outline(src: &[u8], ranges: &[(usize, usize)]) -> Option<Vec<String>> {
    let mut included = Vec::new();
    let point = |offset: usize| {
        let row = src[..offset].iter().filter(|&&b| b == b'\n').count();
        let line_start = src[..offset]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        tree_sitter::Point::new(row, offset - line_start)
    };
    for &(start, end) in ranges {
        included.push(tree_sitter::Range {
            start_byte: start,
            end_byte: end,
            start_point: point(start),
            end_point: point(end),
        });
    }
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .ok()?;
    parser.set_included_ranges(&included).ok()?;
    let tree = parser.parse(src, None)?;
    if tree.root_node().has_error() {
        return None;
    }
    Some(super::ts::outline(&tree))
}

#[test]
fn pieces_of_every_fixture_file_have_tree_sitters_shape() {
    // Every other top-level statement of each fixture, parsed alone: the same tree as
    // tree-sitter's over the same included ranges.
    every_fixture_file(|src| {
        let ranges: Vec<(usize, usize)> = crate::gate::chunks::top_level_statements(src)
            .into_iter()
            .step_by(2)
            .collect();
        if ranges.is_empty() {
            return None;
        }
        let theirs = tree_sitter_ranges_outline(src, &ranges)?;
        Some((outline(&parse_ranges(src, &ranges)), theirs))
    });
}

#[test]
fn parts_of_a_file_keep_the_files_offsets_and_rows() {
    let src = b"import os\n\ndef f():\n    x = 1\n    return x\n\ny = f()\n";
    let def = src.windows(3).position(|w| w == b"def").unwrap();
    let ret = src.windows(6).position(|w| w == b"return").unwrap();
    let ret_end = ret + "return x".len();
    let tree = parse_ranges(src, &[(def, def + "def f():".len()), (ret, ret_end)]);
    assert!(tree.errors().is_empty(), "{:?}", tree.errors());
    let root = tree.root_node();
    let names: Vec<&str> = root
        .named_children(&mut root.walk())
        .map(|n| n.kind())
        .collect();
    assert_eq!(names, ["function_definition"]);
    let function = root.named_child(0).unwrap();
    let body = function.field(F::Body).unwrap();
    let statement = body.named_child(0).unwrap();
    assert_eq!(statement.kind(), "return_statement");
    assert_eq!(statement.byte_range(), ret..ret_end);
    assert_eq!(statement.start_position(), Point { row: 4, column: 4 });
    assert_eq!(
        root.descendant_for_byte_range(ret + 7, ret + 8)
            .map(|n| n.kind()),
        Some("identifier")
    );
}

#[test]
fn invalid_text_is_a_tree_with_errors_not_a_failure() {
    let tree = parse(b"def f(:\n    return \xff\xfe 1\nx = 2\n");
    assert!(!tree.errors().is_empty());
    assert!(tree.root_node().has_error());
    // The valid statement after the error is still there.
    let root = tree.root_node();
    assert!(
        root.named_children(&mut root.walk())
            .any(|n| n.kind() == "expression_statement")
    );
}

#[test]
fn nesting_past_the_limit_is_an_error_node_not_a_stack_overflow() {
    // On a stack as big as the scan's threads have (`main.rs`): a test thread's 2 MiB is
    // too small for ruff's parser at these depths, whatever this module does.
    let chain = format!("x = {}\n", vec!["a"; 20_000].join(" + "));
    let parens = format!("y = {}1{}\n", "(".repeat(5_000), ")".repeat(5_000));
    let ands = format!("z = {}\n", vec!["a"; 5_000].join(" and "));
    let handle = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            [chain, parens, ands].map(|src| {
                let tree = parse(src.as_bytes());
                let root = tree.root_node();
                let mut stack = vec![root];
                let mut errors = 0;
                while let Some(node) = stack.pop() {
                    errors += usize::from(node.is_error());
                    stack.extend(node.children(&mut node.walk()));
                }
                (tree.errors().is_empty(), tree.too_deep().is_some(), errors)
            })
        })
        .unwrap();
    let [chain, parens, ands] = handle.join().unwrap();
    // The chains are valid Python: the cut is marked and said, and is no syntax error.
    for (valid, cut, nodes) in [chain, ands] {
        assert!(valid && cut && nodes >= 1, "{valid} {cut} {nodes}");
    }
    // CPython refuses 5,000 nested parentheses; the tree is cut either way.
    assert!(parens.1 && parens.2 >= 1, "{parens:?}");
}
