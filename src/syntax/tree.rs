//! The tree `convert` builds and the read-only view of it the consumers walk (`Node`), with
//! tree-sitter's method names so that code written against tree-sitter reads it unchanged.

/// No node (a missing parent, child or sibling).
pub(super) const NONE: u32 = u32::MAX;

/// One node. `kind` and `field` are tree-sitter-python's names.
#[derive(Debug, Clone)]
pub(super) struct NodeData {
    pub(super) kind: &'static str,
    pub(super) field: Option<&'static str>,
    pub(super) start: u32,
    pub(super) end: u32,
    pub(super) named: bool,
    pub(super) parent: u32,
    pub(super) first_child: u32,
    pub(super) last_child: u32,
    pub(super) prev_sibling: u32,
    pub(super) next_sibling: u32,
}

/// A parsed file (or the parts of one that `parse_ranges` kept).
pub struct Tree {
    pub(super) nodes: Vec<NodeData>,
    /// Where the parser found the text invalid (byte offsets), first first.
    pub(super) errors: Vec<u32>,
    /// Where the first construct nested too deep to lay out starts (an `ERROR` node there).
    pub(super) too_deep: Option<u32>,
    /// The offset of every line's start, `0` first (shared: the verdicts parse many pieces of
    /// one file).
    pub(super) line_starts: std::sync::Arc<[u32]>,
}

/// A row and column, both from zero (tree-sitter's `Point`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Point {
    pub row: usize,
    pub column: usize,
}

/// A node of a `Tree`: cheap to copy, compared by identity.
#[derive(Clone, Copy)]
pub struct Node<'t> {
    tree: &'t Tree,
    id: u32,
}

impl PartialEq for Node<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.tree, other.tree) && self.id == other.id
    }
}

impl Eq for Node<'_> {}

impl std::fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} [{}..{}]",
            self.kind(),
            self.start_byte(),
            self.end_byte()
        )
    }
}

/// What `Node::walk` hands out: iteration over children needs none here, but the calls keep
/// tree-sitter's form (`node.named_children(&mut node.walk())`). As tree-sitter's, the cursor
/// stays inside the node it was made from: at that node it has no parent and no sibling.
pub struct TreeCursor<'t> {
    node: Node<'t>,
    root: u32,
}

impl<'t> TreeCursor<'t> {
    pub fn node(&self) -> Node<'t> {
        self.node
    }

    pub fn goto_first_child(&mut self) -> bool {
        match self.node.child(0) {
            Some(child) => {
                self.node = child;
                true
            }
            None => false,
        }
    }

    pub fn goto_next_sibling(&mut self) -> bool {
        if self.node.id == self.root {
            return false;
        }
        match self.node.next_sibling() {
            Some(next) => {
                self.node = next;
                true
            }
            None => false,
        }
    }

    pub fn goto_parent(&mut self) -> bool {
        if self.node.id == self.root {
            return false;
        }
        match self.node.parent() {
            Some(parent) => {
                self.node = parent;
                true
            }
            None => false,
        }
    }

    pub fn field_name(&self) -> Option<&'static str> {
        self.node.data().field
    }
}

macro_rules! fields {
    ($($variant:ident = $name:literal),* $(,)?) => {
        /// The grammar fields the lowering reads, by name.
        #[derive(Clone, Copy, Debug)]
        pub enum F { $($variant),* }

        impl F {
            pub const ALL: &[F] = &[$(F::$variant),*];

            pub fn name(self) -> &'static str {
                match self { $(F::$variant => $name),* }
            }
        }
    };
}

fields! {
    Alias = "alias",
    Alternative = "alternative",
    Argument = "argument",
    Arguments = "arguments",
    Attribute = "attribute",
    Body = "body",
    Condition = "condition",
    Consequence = "consequence",
    Definition = "definition",
    Expression = "expression",
    Function = "function",
    Guard = "guard",
    Key = "key",
    Left = "left",
    ModuleName = "module_name",
    Name = "name",
    Object = "object",
    Operator = "operator",
    Parameters = "parameters",
    Right = "right",
    Subject = "subject",
    Subscript = "subscript",
    Superclasses = "superclasses",
    Type = "type",
    Value = "value",
}

impl Tree {
    pub fn root_node(&self) -> Node<'_> {
        Node { tree: self, id: 0 }
    }

    /// Where the parser found the text invalid, as byte offsets (at most a few dozen).
    pub fn errors(&self) -> &[u32] {
        &self.errors
    }

    /// Where valid text nests too deep for the tree: an `ERROR` node stands for the rest.
    pub fn too_deep(&self) -> Option<u32> {
        self.too_deep
    }

    /// Ends the module at `end` (where the last parsed range ends, as tree-sitter does).
    pub(super) fn end_root_at(&mut self, end: u32) {
        if let Some(root) = self.nodes.first_mut() {
            root.end = end.max(root.start);
        }
    }

    /// Moves every offset from the text that was parsed to the file it was cut from
    /// (`parse_ranges`), whose line starts are `line_starts`.
    /// `to_file(offset, closing)` maps an offset, `closing` for a node's end.
    pub(super) fn relocate(
        &mut self,
        mut to_file: impl FnMut(u32, bool) -> u32,
        line_starts: std::sync::Arc<[u32]>,
    ) {
        for node in &mut self.nodes {
            let s = to_file(node.start, false);
            let e = to_file(node.end, true);
            node.start = s;
            node.end = e.max(s);
        }
        for at in &mut self.errors {
            *at = to_file(*at, false);
        }
        self.too_deep = self.too_deep.map(|at| to_file(at, false));
        self.line_starts = line_starts;
    }

    /// The row and column of a byte offset.
    pub fn position(&self, offset: u32) -> Point {
        self.point(offset)
    }

    fn point(&self, offset: u32) -> Point {
        let row = self.line_starts.partition_point(|&s| s <= offset) - 1;
        Point {
            row,
            column: (offset - self.line_starts[row]) as usize,
        }
    }
}

impl<'t> Node<'t> {
    fn data(&self) -> &'t NodeData {
        &self.tree.nodes[self.id as usize]
    }

    fn at(&self, id: u32) -> Option<Node<'t>> {
        (id != NONE).then_some(Node {
            tree: self.tree,
            id,
        })
    }

    pub fn kind(&self) -> &'static str {
        self.data().kind
    }

    /// `kind`, under the name the tree-sitter code used for its table lookup.
    pub fn kind_name(&self) -> &'static str {
        self.data().kind
    }

    /// A unique id within the tree.
    pub fn id(&self) -> usize {
        self.id as usize
    }

    pub fn is_named(&self) -> bool {
        self.data().named
    }

    pub fn is_error(&self) -> bool {
        self.data().kind == "ERROR"
    }

    /// Never: ruff's parser does not insert missing tokens as nodes.
    pub fn is_missing(&self) -> bool {
        false
    }

    /// Whether the text under this node is invalid Python somewhere.
    pub fn has_error(&self) -> bool {
        let (start, end) = (self.data().start, self.data().end);
        self.tree
            .errors
            .iter()
            .any(|&at| at >= start && (at < end || (at == end && self.id == 0)))
    }

    pub fn start_byte(&self) -> usize {
        self.data().start as usize
    }

    pub fn end_byte(&self) -> usize {
        self.data().end as usize
    }

    pub fn byte_range(&self) -> std::ops::Range<usize> {
        self.start_byte()..self.end_byte()
    }

    pub fn start_position(&self) -> Point {
        self.tree.point(self.data().start)
    }

    pub fn end_position(&self) -> Point {
        self.tree.point(self.data().end)
    }

    pub fn utf8_text<'s>(&self, src: &'s [u8]) -> Result<&'s str, std::str::Utf8Error> {
        std::str::from_utf8(&src[self.byte_range()])
    }

    pub fn parent(&self) -> Option<Node<'t>> {
        self.at(self.data().parent)
    }

    pub fn next_sibling(&self) -> Option<Node<'t>> {
        self.at(self.data().next_sibling)
    }

    pub fn prev_sibling(&self) -> Option<Node<'t>> {
        self.at(self.data().prev_sibling)
    }

    pub fn next_named_sibling(&self) -> Option<Node<'t>> {
        let mut at = self.next_sibling();
        while let Some(node) = at {
            if node.is_named() {
                return Some(node);
            }
            at = node.next_sibling();
        }
        None
    }

    pub fn walk(&self) -> TreeCursor<'t> {
        TreeCursor {
            node: *self,
            root: self.id,
        }
    }

    /// Every child, named or not, in order.
    pub fn children<'c>(
        &self,
        _cursor: &'c mut TreeCursor<'t>,
    ) -> impl Iterator<Item = Node<'t>> + 'c
    where
        't: 'c,
    {
        let tree = self.tree;
        let mut at = self.data().first_child;
        std::iter::from_fn(move || {
            (at != NONE).then(|| {
                let node = Node { tree, id: at };
                at = tree.nodes[at as usize].next_sibling;
                node
            })
        })
    }

    pub fn named_children<'c>(
        &self,
        cursor: &'c mut TreeCursor<'t>,
    ) -> impl Iterator<Item = Node<'t>> + 'c
    where
        't: 'c,
    {
        self.children(cursor).filter(|n| n.is_named())
    }

    pub fn children_by_field_name<'c>(
        &self,
        name: &'c str,
        cursor: &'c mut TreeCursor<'t>,
    ) -> impl Iterator<Item = Node<'t>> + 'c
    where
        't: 'c,
    {
        self.children(cursor)
            .filter(move |n| n.data().field == Some(name))
    }

    pub fn child(&self, index: u32) -> Option<Node<'t>> {
        self.children(&mut self.walk()).nth(index as usize)
    }

    pub fn child_count(&self) -> usize {
        self.children(&mut self.walk()).count()
    }

    pub fn named_child(&self, index: u32) -> Option<Node<'t>> {
        self.named_children(&mut self.walk()).nth(index as usize)
    }

    pub fn named_child_count(&self) -> usize {
        self.named_children(&mut self.walk()).count()
    }

    /// The first child under this field.
    pub fn child_by_field_name(&self, name: &str) -> Option<Node<'t>> {
        self.children(&mut self.walk())
            .find(|n| n.data().field == Some(name))
    }

    pub fn field(&self, field: F) -> Option<Node<'t>> {
        self.child_by_field_name(field.name())
    }

    /// The field this node sits under in its parent.
    pub fn field_name(&self) -> Option<&'static str> {
        self.data().field
    }

    /// The smallest node that spans `start..end`.
    pub fn descendant_for_byte_range(&self, start: usize, end: usize) -> Option<Node<'t>> {
        if start < self.start_byte() || end > self.end_byte() {
            return None;
        }
        let mut node = *self;
        'down: loop {
            for child in node.children(&mut node.walk()) {
                if child.start_byte() <= start
                    && end <= child.end_byte()
                    && (child.start_byte() < child.end_byte() || start == end)
                {
                    node = child;
                    continue 'down;
                }
            }
            return Some(node);
        }
    }
}
