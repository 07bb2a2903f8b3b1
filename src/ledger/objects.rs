//! Reading ledger objects with a bound, and checking each against its id.
//!
//! libgit2 inflates a loose object until zlib says the stream ended; a loose object cut
//! short (a full disk, a crash of the file system, a hand edit) makes it spin for ever. So
//! every object gatefix needs is read here first: the compressed file is read whole (its
//! size is bounded), inflated by a loop that must make progress at every step and may not
//! produce more than the size its header announces, and the result is hashed and compared
//! with the id it is stored under. Only an object that passed is handed to libgit2 to parse.
//! Objects in pack files (after a `git gc` of the ledger) are read through libgit2's pack
//! reader, whose sizes come from the pack index, and are hashed the same way.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use flate2::{Decompress, FlushDecompress, Status};
use git2::{ObjectType, Oid, Repository};

/// The largest object gatefix reads back: far above any Python file it patches.
pub const MAX_OBJECT_BYTES: u64 = 1 << 30;

/// Why an object cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectError {
    pub oid: Oid,
    pub problem: String,
}

impl fmt::Display for ObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "object {} {}", self.oid, self.problem)
    }
}

impl std::error::Error for ObjectError {}

fn fail(oid: Oid, problem: impl Into<String>) -> ObjectError {
    ObjectError {
        oid,
        problem: problem.into(),
    }
}

/// An object's kind and content, checked against its id.
pub struct Object {
    pub kind: ObjectType,
    pub content: Vec<u8>,
}

pub fn loose_path(git_dir: &Path, oid: Oid) -> PathBuf {
    let hex = oid.to_string();
    git_dir.join("objects").join(&hex[..2]).join(&hex[2..])
}

/// Reads one object, bounded and verified.
pub fn read(repo: &Repository, git_dir: &Path, oid: Oid) -> Result<Object, ObjectError> {
    let path = loose_path(git_dir, oid);
    let object = match std::fs::metadata(&path) {
        Ok(meta) => {
            if meta.len() > MAX_OBJECT_BYTES {
                return Err(fail(
                    oid,
                    format!("is {} bytes compressed, over the limit", meta.len()),
                ));
            }
            let bytes = std::fs::read(&path)
                .map_err(|e| fail(oid, format!("cannot be read ({}): {e}", path.display())))?;
            inflate_loose(oid, &bytes)?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => read_packed(repo, oid)?,
        Err(e) => {
            return Err(fail(
                oid,
                format!("cannot be read ({}): {e}", path.display()),
            ));
        }
    };
    let actual = Oid::hash_object(object.kind, &object.content)
        .map_err(|e| fail(oid, format!("cannot be hashed: {}", e.message())))?;
    if actual != oid {
        return Err(fail(
            oid,
            format!("is damaged: its content hashes to {actual}"),
        ));
    }
    Ok(object)
}

/// Reads an object and requires a kind.
pub fn read_kind(
    repo: &Repository,
    git_dir: &Path,
    oid: Oid,
    kind: ObjectType,
) -> Result<Vec<u8>, ObjectError> {
    let object = read(repo, git_dir, oid)?;
    if object.kind != kind {
        return Err(fail(
            oid,
            format!("is a {}, not a {}", kind_name(object.kind), kind_name(kind)),
        ));
    }
    Ok(object.content)
}

fn kind_name(kind: ObjectType) -> &'static str {
    kind.str()
}

fn read_packed(repo: &Repository, oid: Oid) -> Result<Object, ObjectError> {
    let odb = repo
        .odb()
        .map_err(|e| fail(oid, format!("cannot be looked up: {}", e.message())))?;
    let (size, _) = odb.read_header(oid).map_err(|e| {
        if e.code() == git2::ErrorCode::NotFound {
            fail(oid, "is missing (neither a loose object nor in a pack)")
        } else {
            fail(oid, format!("cannot be read: {}", e.message()))
        }
    })?;
    if size as u64 > MAX_OBJECT_BYTES {
        return Err(fail(oid, format!("claims {size} bytes, over the limit")));
    }
    let object = odb.read(oid).map_err(|e| {
        fail(
            oid,
            format!("cannot be read from its pack: {}", e.message()),
        )
    })?;
    Ok(Object {
        kind: object.kind(),
        content: object.data().to_vec(),
    })
}

/// Inflates a loose object (`<kind> <size>\0<content>`, zlib). Every step must consume input
/// or produce output, and the output may not outgrow the header: a cut or corrupt stream is
/// an error after at most `input.len()` steps, never a loop.
pub fn inflate_loose(oid: Oid, input: &[u8]) -> Result<Object, ObjectError> {
    const HEADER_MAX: usize = 32;
    let mut z = Decompress::new(true);
    let mut out: Vec<u8> = Vec::new();
    let mut header: Option<(ObjectType, usize, usize)> = None; // kind, header length, size
    loop {
        let limit = match header {
            Some((_, len, size)) => len + size,
            None => HEADER_MAX,
        };
        // Room for a step: never more than the header allows (plus one byte, to notice
        // a stream that keeps going).
        let room = (limit + 1).saturating_sub(out.len()).clamp(1, 1 << 20);
        out.reserve(room);
        let (in_before, out_before) = (z.total_in(), z.total_out());
        let consumed = in_before as usize;
        let status = z
            .decompress_vec(
                &input[consumed.min(input.len())..],
                &mut out,
                FlushDecompress::None,
            )
            .map_err(|e| fail(oid, format!("is damaged (zlib: {e})")))?;
        if header.is_none() {
            if let Some(nul) = out.iter().position(|&b| b == 0) {
                header = Some(parse_header(oid, &out[..nul])?);
            } else if out.len() >= HEADER_MAX {
                return Err(fail(oid, "is damaged (no object header)"));
            }
        }
        if let Some((_, len, size)) = header
            && out.len() > len + size
        {
            return Err(fail(
                oid,
                format!("is damaged (more content than the {size} bytes its header says)"),
            ));
        }
        if status == Status::StreamEnd {
            break;
        }
        if z.total_in() == in_before && z.total_out() == out_before {
            let why = if consumed >= input.len() {
                format!(
                    "is damaged: cut short ({} compressed bytes end before the stream does)",
                    input.len()
                )
            } else {
                "is damaged (the zlib stream makes no progress)".to_string()
            };
            return Err(fail(oid, why));
        }
    }
    let Some((kind, len, size)) = header else {
        return Err(fail(oid, "is damaged (no object header)"));
    };
    if out.len() != len + size {
        return Err(fail(
            oid,
            format!(
                "is damaged (its header says {size} bytes, it holds {})",
                out.len() - len
            ),
        ));
    }
    out.drain(..len);
    Ok(Object { kind, content: out })
}

/// `<kind> <size>` → (kind, header length with the NUL, size).
fn parse_header(oid: Oid, header: &[u8]) -> Result<(ObjectType, usize, usize), ObjectError> {
    let text = std::str::from_utf8(header).map_err(|_| fail(oid, "is damaged (bad header)"))?;
    let (kind, size) = text
        .split_once(' ')
        .ok_or_else(|| fail(oid, "is damaged (bad header)"))?;
    let kind = match kind {
        "blob" => ObjectType::Blob,
        "tree" => ObjectType::Tree,
        "commit" => ObjectType::Commit,
        "tag" => ObjectType::Tag,
        _ => return Err(fail(oid, "is damaged (unknown object kind)")),
    };
    let size: u64 = size
        .parse()
        .map_err(|_| fail(oid, "is damaged (bad size in its header)"))?;
    if size > MAX_OBJECT_BYTES {
        return Err(fail(oid, format!("claims {size} bytes, over the limit")));
    }
    Ok((kind, header.len() + 1, size as usize))
}

/// The tree and parents a commit names (its header lines).
pub fn commit_links(oid: Oid, content: &[u8]) -> Result<(Oid, Vec<Oid>), ObjectError> {
    let mut tree = None;
    let mut parents = Vec::new();
    for line in content.split(|&b| b == b'\n') {
        if line.is_empty() {
            break; // the message starts
        }
        let text = std::str::from_utf8(line).unwrap_or("");
        let parse = |hex: &str| Oid::from_str(hex).map_err(|_| fail(oid, "is damaged (bad id)"));
        if let Some(hex) = text.strip_prefix("tree ") {
            tree = Some(parse(hex)?);
        } else if let Some(hex) = text.strip_prefix("parent ") {
            parents.push(parse(hex)?);
        }
    }
    let tree = tree.ok_or_else(|| fail(oid, "is damaged (a commit without a tree)"))?;
    Ok((tree, parents))
}

/// A tree's entries: (mode, name, id).
pub fn tree_entries(oid: Oid, content: &[u8]) -> Result<Vec<(u32, Vec<u8>, Oid)>, ObjectError> {
    let bad = || fail(oid, "is damaged (a bad tree entry)");
    let mut entries = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        let space = rest.iter().position(|&b| b == b' ').ok_or_else(bad)?;
        let mode = std::str::from_utf8(&rest[..space])
            .ok()
            .and_then(|m| u32::from_str_radix(m, 8).ok())
            .ok_or_else(bad)?;
        rest = &rest[space + 1..];
        let nul = rest.iter().position(|&b| b == 0).ok_or_else(bad)?;
        let name = rest[..nul].to_vec();
        rest = &rest[nul + 1..];
        if rest.len() < 20 {
            return Err(bad());
        }
        let id = Oid::from_bytes(&rest[..20]).map_err(|_| bad())?;
        rest = &rest[20..];
        entries.push((mode, name, id));
    }
    Ok(entries)
}

/// Checks every commit reachable from `tips` and every tree they hold; with `blobs`, every
/// blob too. Returns the first problem, with the path that led to it.
pub fn check_reachable(
    repo: &Repository,
    git_dir: &Path,
    tips: &[Oid],
    blobs: bool,
    seen: &mut HashSet<Oid>,
) -> Result<usize, (String, ObjectError)> {
    let mut stack: Vec<(Oid, ObjectType, String)> = tips
        .iter()
        .map(|&t| (t, ObjectType::Commit, "commit".to_string()))
        .collect();
    let mut checked = 0;
    while let Some((oid, kind, what)) = stack.pop() {
        if !seen.insert(oid) {
            continue;
        }
        if kind == ObjectType::Blob && !blobs {
            continue;
        }
        let content = read_kind(repo, git_dir, oid, kind).map_err(|e| (what.clone(), e))?;
        checked += 1;
        match kind {
            ObjectType::Commit => {
                let (tree, parents) = commit_links(oid, &content).map_err(|e| (what.clone(), e))?;
                stack.push((tree, ObjectType::Tree, format!("the tree of commit {oid}")));
                for parent in parents {
                    stack.push((
                        parent,
                        ObjectType::Commit,
                        format!("a parent of commit {oid}"),
                    ));
                }
            }
            ObjectType::Tree => {
                let prefix = what
                    .strip_prefix("folder ")
                    .map(|p| format!("{p}/"))
                    .unwrap_or_default();
                for (mode, name, id) in
                    tree_entries(oid, &content).map_err(|e| (what.clone(), e))?
                {
                    let name = format!("{prefix}{}", String::from_utf8_lossy(&name));
                    if mode == 0o40000 {
                        stack.push((id, ObjectType::Tree, format!("folder {name}")));
                    } else if mode != 0o160000 {
                        stack.push((id, ObjectType::Blob, format!("file {name}")));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::ZlibEncoder;
    use std::io::Write;

    fn loose(kind: &str, content: &[u8]) -> (Oid, Vec<u8>) {
        let mut raw = format!("{kind} {}\0", content.len()).into_bytes();
        raw.extend_from_slice(content);
        let mut e = ZlibEncoder::new(Vec::new(), Compression::default());
        e.write_all(&raw).unwrap();
        let oid = Oid::hash_object(ObjectType::Blob, content).unwrap();
        (oid, e.finish().unwrap())
    }

    #[test]
    fn an_intact_object_inflates() {
        let content = b"x = 1\n".repeat(1000);
        let (oid, bytes) = loose("blob", &content);
        let object = inflate_loose(oid, &bytes).unwrap();
        assert_eq!(object.content, content);
        assert_eq!(object.kind, ObjectType::Blob);
    }

    #[test]
    fn every_cut_is_an_error_not_a_loop() {
        let content: Vec<u8> = (0..600u32).flat_map(|i| (i * 7919).to_le_bytes()).collect();
        let (oid, bytes) = loose("blob", &content);
        for cut in 0..bytes.len() {
            let err = inflate_loose(oid, &bytes[..cut]).err();
            assert!(err.is_some(), "a cut at {cut} of {} passed", bytes.len());
        }
    }

    #[test]
    fn a_lying_header_is_refused() {
        let (oid, bytes) = loose("blob", b"hello");
        let mut raw = b"blob 3\0hello".to_vec();
        let mut e = ZlibEncoder::new(Vec::new(), Compression::default());
        e.write_all(&raw).unwrap();
        let lying = e.finish().unwrap();
        assert!(inflate_loose(oid, &lying).is_err());
        raw.clear();
        assert!(inflate_loose(oid, &bytes).is_ok());
    }

    #[test]
    fn tree_and_commit_headers_parse() {
        let id = Oid::from_str("ccc7cbe57e0377a1afead8807793a1d479659639").unwrap();
        let mut tree = b"100644 a.py\0".to_vec();
        tree.extend_from_slice(id.as_bytes());
        let entries = tree_entries(id, &tree).unwrap();
        assert_eq!(entries, vec![(0o100644, b"a.py".to_vec(), id)]);
        assert!(tree_entries(id, &tree[..tree.len() - 1]).is_err());
        let commit = format!("tree {id}\nparent {id}\nauthor x\n\nmessage\ntree nothing\n");
        assert_eq!(commit_links(id, commit.as_bytes()).unwrap(), (id, vec![id]));
    }
}
